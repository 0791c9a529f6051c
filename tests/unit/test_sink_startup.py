"""What the sink decides before its Spark session is up (cdc_ingest.sink.driver.startup)."""

from __future__ import annotations

from pathlib import Path

from cdc_ingest.sink.driver.startup import local_checkpoint_has_offsets, starting_offsets


def test_a_local_checkpoint_is_read_without_spark(tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoint"
    assert local_checkpoint_has_offsets(str(checkpoint)) is False  # not there yet
    (checkpoint / "offsets").mkdir(parents=True)
    assert local_checkpoint_has_offsets(str(checkpoint)) is False
    (checkpoint / "offsets" / ".0.crc").write_text("")  # a temporary file, no entry yet
    assert local_checkpoint_has_offsets(str(checkpoint)) is False
    (checkpoint / "offsets" / "0").write_text("v1")
    assert local_checkpoint_has_offsets(str(checkpoint)) is True
    assert local_checkpoint_has_offsets(f"file://{checkpoint}") is True


def test_other_file_systems_are_left_to_spark() -> None:
    assert local_checkpoint_has_offsets("hdfs://namenode/cdc/checkpoint") is None
    assert local_checkpoint_has_offsets("s3a://bucket/checkpoint") is None


def test_starting_offsets_default_to_earliest() -> None:
    assert starting_offsets("cl", 3, {1: 40}) == '{"cl": {"0": -2, "1": 40, "2": -2}}'
