"""The sink's head start (sink/driver/head_start.py, decision 0017) without a broker: a live read's
"caught up" commits what is pending, and the first batch's ranges leave out what the head
start committed. With a broker and Spark: tests/integration/test_head_start.py."""

from __future__ import annotations

from cdc_ingest.sink.driver.head_start import past_head_start
from cdc_ingest.sink.task.range_read import ChangelogRange
from cdc_ingest.sink.task.record_loop import Counters
from tests.unit.test_sink_writer import _chunks, _settings, _value


def _records(offsets: list[int]) -> tuple[int, tuple[list[int], list[bytes | None], list[bytes]]]:
    return 0, (offsets, [f'{{"id":{o}}}'.encode() for o in offsets], [_value(o) for o in offsets])


EMPTY: tuple[int, tuple[list[int], list[bytes | None], list[bytes]]] = (0, ([], [], []))


def test_a_caught_up_read_commits_what_is_pending_and_only_that() -> None:
    settings = _settings(max_tx_rows=100, first_tx_rows=50)
    batches = iter([EMPTY, _records([0, 1, 2]), EMPTY, EMPTY, _records([3]), _records([4]),
                    EMPTY, _records([5, 6])])
    counters = Counters(partition=0)
    out = [(len(m), last) for m, last in _chunks(settings, counters, batches, start=1)]
    # nothing pending at the first and fourth empty batch; offset 0 was committed before
    assert out == [(2, 2), (2, 4), (2, 6)]
    assert (counters.rows_in, counters.skipped) == (7, 1)


def test_the_first_batch_leaves_out_what_the_head_start_committed() -> None:
    ranges = [ChangelogRange(0, 0, 100), ChangelogRange(1, 10, 50), ChangelogRange(2, 5, 9),
              ChangelogRange(3, 0, 7)]
    results = [
        Counters(partition=0, last_offset=39),  # committed 40: the batch reads 40..99
        Counters(partition=1, last_offset=60),  # past the planned end: nothing left to read
        Counters(partition=2, last_offset=-1),  # wrote nothing
        Counters(partition=3, last_offset=2, rows_out=3),
    ]
    assert past_head_start(ranges, results) == [
        ChangelogRange(0, 40, 100), ChangelogRange(2, 5, 9), ChangelogRange(3, 3, 7)]
    assert past_head_start(ranges, []) == ranges
    # a head start that committed less than the plan's start (a checkpoint ahead of the
    # group after markers) changes nothing
    assert past_head_start([ChangelogRange(0, 20, 30)], [Counters(partition=0, last_offset=5)]) \
        == [ChangelogRange(0, 20, 30)]
