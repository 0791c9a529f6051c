"""Every server id capture replicates as lies inside the configured `server-id` range: the
binlog reader takes the first id, snapshot reader i the first + 1 + i; `validate` refuses a
range too small for them, naming the size it needs. A single id lends the readers the ids
right after it (docs/mysql-setup.md, "server-id")."""

from __future__ import annotations

from typing import Any

import pytest

from cdc_ingest.capture import context
from cdc_ingest.capture.options import capture_options
from cdc_ingest.config import PipelineDef, ServerIdRange
from tests.unit.test_config import minimal, parse
from tests.unit.test_config_errors import only, problems_of


def _definition(server_id: str | int, pipeline_parallelism: int = 1,
                snapshot_parallelism: int | None = None) -> dict[str, Any]:
    source: dict[str, Any] = {"server-id": server_id}
    if snapshot_parallelism is not None:
        source["scan.incremental.snapshot.parallelism"] = snapshot_parallelism
    return minimal(source=source, pipeline={"parallelism": pipeline_parallelism})


def _reader_ids(defn: PipelineDef, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The server ids CaptureContext.snapshotter gives the snapshot phase's readers."""
    monkeypatch.setattr(context, "Snapshotter", lambda _settings, server_id, *_: server_id)
    options = capture_options(defn)
    ctx = context.CaptureContext(options, None, None, None, 1,  # type: ignore[arg-type]
                                 lambda: False)
    return [ctx.snapshotter(i) for i in range(options.snapshot_parallelism)]  # type: ignore[misc]


@pytest.mark.parametrize(("server_id", "pipeline", "snapshot", "binlog", "readers"), [
    ("5430-5434", 1, 4, 5430, [5431, 5432, 5433, 5434]),  # routes/migrate-database.yaml
    ("5430-5434", 4, None, 5430, [5431, 5432, 5433, 5434]),  # pipeline.parallelism decides
    ("5430-5439", 2, None, 5430, [5431, 5432]),  # a larger range: its last ids unused
    ("5400-5401", 3, 1, 5400, [5401]),
    (5400, 1, None, 5400, [5401]),  # a single id: the readers take the ids after it
    (5400, 3, None, 5400, [5401, 5402, 5403]),
    (5400, 3, 1, 5400, [5401]),
])
def test_the_binlog_reader_takes_the_first_id_and_the_snapshot_readers_the_next(
        server_id: str | int, pipeline: int, snapshot: int | None, binlog: int,
        readers: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    defn = parse(_definition(server_id, pipeline, snapshot))
    assert capture_options(defn).server_id == binlog
    assert _reader_ids(defn, monkeypatch) == readers
    assert list(defn.capture_server_ids) == [binlog, *readers]
    ids = defn.source.server_id
    if ids.size > 1:
        assert all(ids.first <= i <= ids.last for i in defn.capture_server_ids)


def test_a_range_too_small_for_the_snapshot_parallelism_is_refused_with_the_size_it_needs(
        ) -> None:
    problem = only(_definition("5430-5432", snapshot_parallelism=4), "source.server-id")
    assert problem.message == ("the range 5430-5432 has 3 ids; capture needs 5 (1 binlog "
                               "reader + 4 snapshot readers)")
    assert problem.fix == ("widen it to 5430-5434, or lower "
                           "scan.incremental.snapshot.parallelism to 2")


def test_a_range_as_large_as_the_parallelism_lacks_the_binlog_readers_id() -> None:
    # 5430-5433 with 4 readers took 5433-5436 before: three ids outside the range
    problem = only(_definition("5430-5433", snapshot_parallelism=4), "source.server-id")
    assert "capture needs 5" in problem.message and "5430-5434" in problem.fix


def test_the_parallelism_pipeline_parallelism_implies_counts_too() -> None:
    problem = only(_definition("5430-5433", pipeline_parallelism=4), "source.server-id")
    assert problem.message == ("the range 5430-5433 has 4 ids; capture needs 5 (1 binlog "
                               "reader + 4 snapshot readers)")
    assert problem.fix == ("widen it to 5430-5434, or set "
                           "scan.incremental.snapshot.parallelism: 3, which now follows "
                           "pipeline.parallelism: 4")


def test_the_implied_range_problem_is_listed_with_the_other_sections_problems() -> None:
    doc = _definition("5430-5431", pipeline_parallelism=2)
    doc["sink"]["sink.delivery-guarantees"] = "none"
    found = problems_of(doc)
    assert set(found) == {"source.server-id", "sink.sink.delivery-guarantees"}


def test_a_single_id_with_an_explicit_parallelism_above_1_asks_for_a_range() -> None:
    problem = only(_definition(5400, snapshot_parallelism=4), "source.server-id")
    assert problem.message == ("is a single id; with scan.incremental.snapshot.parallelism 4 "
                               "capture needs 5 (1 binlog reader + 4 snapshot readers)")
    assert problem.fix == ("write the range 5400-5404, or lower "
                           "scan.incremental.snapshot.parallelism to 1")


def test_a_single_id_whose_readers_pass_the_largest_id_is_refused() -> None:
    problem = only(_definition(2**32 - 1, pipeline_parallelism=2), "source.server-id")
    assert "above 4294967295" in problem.message
    assert problem.fix.startswith("write the range 4294967293-4294967295")


def test_capture_ids_of_a_range_and_of_a_single_id() -> None:
    assert list(ServerIdRange(5400, 5404).capture_ids(4)) == [5400, 5401, 5402, 5403, 5404]
    assert list(ServerIdRange(7, 7).capture_ids(2)) == [7, 8, 9]
