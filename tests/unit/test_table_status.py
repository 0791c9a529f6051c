"""``status --tables``' text, and the pieces of ``verify --continuous`` that need no server."""

from __future__ import annotations

import threading
import time

import pytest

from cdc_ingest.commands.table_status import TableStatus, render_tables
from cdc_ingest.verify.continuous import Pacer, Stopped, TopicState
from cdc_ingest.verify.diff import Sample, TopicResult
from cdc_ingest.verify.progress import Progress


def test_the_tables_and_the_last_pass_per_topic_are_aligned_columns() -> None:
    status = TableStatus(
        totals={"shop.orders": {"inserts": 12, "updates": 3, "deletes": 1, "ddls": 2,
                                "snapshot_rows": 1000}},
        verify={"shop.orders": {"rows_validated": 1011, "in_sync": 1010, "missing": 0,
                                "extra": 0, "differing": 1, "unconfirmed": 0, "ok": False,
                                "pass_ended_ms": 1_795_299_279_000, "pass_seconds": 2.5}})
    lines = render_tables(status)
    assert lines[0] == "tables (what capture committed, since the pipeline's first start)"
    assert lines[1].split() == ["table", "inserts", "updates", "deletes", "ddls", "snapshot",
                                "rows"]
    assert lines[2].split() == ["shop.orders", "12", "3", "1", "2", "1000"]
    assert lines[3] == "verify --continuous (last pass per sink topic)"
    assert lines[5].split() == ["shop.orders", "DIFFERENT", "1011", "1010", "0", "0", "1", "0",
                                "2026-11-21", "22:14:39.000Z", "2.5", "s"]
    empty = render_tables(TableStatus())
    assert empty == ["tables (what capture committed, since the pipeline's first start)",
                     "  none committed yet", "verify --continuous (last pass per sink topic)",
                     "  no pass yet (cdc-ingest verify --continuous)"]


def test_a_topics_state_counts_rows_in_sync_apart_from_differences_and_unconfirmed() -> None:
    result = TopicResult("t", ("d.t",), rows={"d.t": 100})
    result.counts.update(missing=2, differing=3, extra=4)
    result.unconfirmed = [Sample("{\"id\":9}", "d.t", "written again")]
    state = TopicState.of(result, 1.5, 7)
    assert (state.rows_validated, state.in_sync, state.missing, state.extra, state.differing,
            state.unconfirmed, state.ok, state.passes) == (100, 94, 2, 4, 3, 1, False, 7)


def test_the_pacer_holds_the_rate_and_stops_when_asked() -> None:
    stop = threading.Event()
    pacer = Pacer(1000, stop)
    began = time.monotonic()
    pacer(200)
    pacer(200)  # 400 rows at 1000 rows/s: about 0.4 s
    assert 0.35 < time.monotonic() - began < 2.0
    stop.set()
    with pytest.raises(Stopped):
        pacer(1)


def test_verifys_progress_line_says_rows_rate_and_time_left(
        caplog: pytest.LogCaptureFixture) -> None:
    passed: list[int] = []
    progress = Progress(passed.append, every_s=0.0)
    progress.topic("shop.orders", 1_000_000)
    with caplog.at_level("INFO", logger="cdc_ingest.verify"):
        progress(5_000)
    assert passed == [5_000]  # the rate limit still hears of every batch
    line = caplog.records[-1].getMessage()
    assert line.startswith("verify: shop.orders: 5,000 of about 1,000,000 rows compared (")
    assert "rows/s, about " in line and line.endswith(" left)")
    progress.topic("shop.items", 0)  # no estimate: no time left said
    assert progress.line(time.monotonic() + 1).endswith("rows compared (0 rows/s)")
