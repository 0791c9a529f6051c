"""Options of the sink's Spark Kafka source (cdc_ingest.sink.driver.query.source_options) and of the
tasks' range readers (cdc_ingest.kafka.ranges.reader_config)."""

from __future__ import annotations

from pathlib import Path

import yaml

from cdc_ingest.config import load_pipeline
from cdc_ingest.kafka.ranges import reader_config
from cdc_ingest.sink.driver.query import source_options
from cdc_ingest.sink.driver.task_settings import sink_settings


def _pipeline(tmp_path: Path, **properties: str) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({
        "source": {"type": "mysql", "hostname": "h", "port": 3306, "username": "u",
                   "password": "p", "tables": "db.t", "server-id": 5401},
        "sink": {"type": "upsert-kafka", "properties.bootstrap.servers": "k:9092",
                 **{f"properties.{k}": v for k, v in properties.items()}},
        "pipeline": {"name": "p", "state.dir": str(tmp_path / "state")},
    }))
    return path


def test_the_source_plans_read_committed_and_stops_at_lost_records(tmp_path: Path) -> None:
    options = source_options(load_pipeline(_pipeline(tmp_path)), None)
    assert options["kafka.isolation.level"] == "read_committed"
    assert options["failOnDataLoss"] == "true"
    assert options["subscribe"] == "cdc-ingest.p.changelog"


def test_the_last_fetch_of_a_range_does_not_wait_half_a_second(tmp_path: Path) -> None:
    """A range read_committed often ends at a transaction marker no fetch returns: the
    reader's wait for more data is short unless the properties say otherwise."""
    config = reader_config(sink_settings(load_pipeline(_pipeline(tmp_path))).kafka)
    assert config["fetch.wait.max.ms"] == 50
    assert config["isolation.level"] == "read_committed"
    assert config["auto.offset.reset"] == "error"
    assert config["enable.auto.commit"] is False
    mine = reader_config(sink_settings(load_pipeline(_pipeline(
        tmp_path, **{"fetch.wait.max.ms": "200", "isolation.level": "read_uncommitted"}))).kafka)
    assert mine["fetch.wait.max.ms"] == "200"
    assert mine["isolation.level"] == "read_committed"  # never the user's
