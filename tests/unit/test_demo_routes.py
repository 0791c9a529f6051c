"""The demo's two pipelines (`cdc-ingest demo`, `--format avro-confluent`) stay apart: their
own topics, pipeline state and server ids, so running both never mixes formats in a topic."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc_ingest.commands.demo import AVRO_ROUTE, AVRO_TOPICS, ROUTE, TOPICS
from cdc_ingest.config import load_pipeline


def test_the_avro_demo_writes_avro_to_topics_and_state_of_its_own(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MYSQL_PASSWORD", "x")
    monkeypatch.setenv("CDC_INGEST_DEMO_STATE", str(tmp_path))
    json_demo, avro_demo = load_pipeline(ROUTE), load_pipeline(AVRO_ROUTE)
    assert (json_demo.sink.key_format, json_demo.sink.value_format) == ("json", "json")
    assert (avro_demo.sink.key_format, avro_demo.sink.value_format) == (
        "avro-confluent", "avro-confluent")
    assert avro_demo.sink.value_avro_confluent.url == "http://localhost:8081"
    routed = {avro_demo.router().sink_topics("shop", t)[0] for t in ("orders", "customers")}
    assert routed == set(AVRO_TOPICS) and not routed & set(TOPICS)
    assert json_demo.pipeline.state_dir != avro_demo.pipeline.state_dir
    assert json_demo.pipeline.changelog_topic != avro_demo.pipeline.changelog_topic
    ids = [range(d.source.server_id_first, d.source.server_id_last + 1)
           for d in (json_demo, avro_demo)]
    assert not set(ids[0]) & set(ids[1])
