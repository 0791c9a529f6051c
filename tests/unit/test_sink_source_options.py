"""Options of the sink's Spark Kafka source (cdc_ingest.sink.job.source_options)."""

from __future__ import annotations

from pathlib import Path

import yaml

from cdc_ingest.config import load_pipeline
from cdc_ingest.sink.job import FETCH_MAX_WAIT_MS, source_options


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


def test_the_last_fetch_of_a_task_does_not_wait_half_a_second(tmp_path: Path) -> None:
    """A range read_committed often ends at a transaction marker no fetch returns: the
    consumer's wait for more data is short unless the properties say otherwise."""
    options = source_options(load_pipeline(_pipeline(tmp_path)), None)
    assert options["kafka.fetch.max.wait.ms"] == str(FETCH_MAX_WAIT_MS) == "50"
    assert options["kafka.isolation.level"] == "read_committed"
    mine = source_options(load_pipeline(_pipeline(tmp_path, **{"fetch.max.wait.ms": "200"})),
                          None)
    assert mine["kafka.fetch.max.wait.ms"] == "200"
