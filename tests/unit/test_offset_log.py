"""A micro-batch's changelog ranges from the checkpoint, in the files' form as Spark 4.0 writes
them (copied from a sink's checkpoint: an offset-log entry is a version line, the batch's
metadata and one JSON line per source; the initial-offsets file starts with a zero byte)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cdc_ingest.errors import SinkError
from cdc_ingest.sink.driver.offset_log import batch_ranges
from cdc_ingest.sink.task.range_read import ChangelogRange

TOPIC = "cdc-ingest.p.changelog"
META = ('{"batchWatermarkMs":0,"batchTimestampMs":1795765457403,"conf":{'
        '"spark.sql.streaming.stateStore.providerClass":"org.apache.spark.sql.execution.'
        'streaming.state.HDFSBackedStateStoreProvider"}}')


def _checkpoint(tmp_path: Path, initial: dict[str, int], *batches: dict[str, int]) -> Path:
    def offsets(values: dict[str, int]) -> str:
        inner = ",".join(f'"{p}":{o}' for p, o in values.items())
        return f'{{"{TOPIC}":{{{inner}}}}}'

    (tmp_path / "sources" / "0").mkdir(parents=True)
    (tmp_path / "sources" / "0" / "0").write_bytes(b"\x00v1\n" + offsets(initial).encode())
    (tmp_path / "offsets").mkdir()
    for n, values in enumerate(batches):
        (tmp_path / "offsets" / str(n)).write_text(f"v1\n{META}\n{offsets(values)}")
    return tmp_path


SPARK: Any = None  # a local checkpoint is read without the session


def test_the_first_batch_starts_at_the_initial_offsets_and_the_next_where_it_ended(
    tmp_path: Path,
) -> None:
    cp = _checkpoint(tmp_path, {"0": 5, "1": 0}, {"0": 12094, "1": 11910},
                     {"0": 12094, "1": 12000, "2": 7})
    assert batch_ranges(SPARK, str(cp), 0, TOPIC) == [
        ChangelogRange(0, 5, 12094), ChangelogRange(1, 0, 11910)]
    # partition 0 had nothing new (no task); partition 2 is new: from its earliest offset
    assert batch_ranges(SPARK, f"file://{cp}/", 1, TOPIC) == [
        ChangelogRange(1, 11910, 12000), ChangelogRange(2, -2, 7)]


def test_a_missing_or_foreign_entry_names_the_file_and_the_fix(tmp_path: Path) -> None:
    cp = _checkpoint(tmp_path, {"0": 0}, {"0": 10})
    with pytest.raises(SinkError) as missing:
        batch_ranges(SPARK, str(cp), 1, TOPIC)  # offsets/1 was never written
    assert f"cannot read the offsets of batch 1 from the Spark checkpoint {cp}" in str(missing.value)
    assert "Fix: stop the pipeline, delete that checkpoint directory" in str(missing.value)
    with pytest.raises(SinkError) as foreign:
        batch_ranges(SPARK, str(cp), 0, "another.changelog")
    assert "no offsets of the changelog topic another.changelog" in str(foreign.value)
