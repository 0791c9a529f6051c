"""A sink task's changelog records, read by the task itself with librdkafka (decision 0016).

Spark's Kafka source plans every micro-batch and logs its offsets before ``foreachBatch`` runs
(sink/driver/offset_log.py); a task gets one changelog partition's ``[start, end)`` of that plan and
reads it read_committed (:func:`cdc_ingest.kafka.ranges.read_range`): aborted records and
transaction markers are never returned, and everything below ``end`` is decided. The records
reach the writer as :data:`~cdc_ingest.sink.task.columns.Columns` (lists, no object per
record), the form Spark's Arrow batches had.

A range is read to its end or the task fails: records deleted (retention) before the sink wrote
them stop the sink with :class:`ChangelogGoneError`; a broker that gives nothing for
:data:`STALL_S` fails it with :class:`ChangelogStalledError`, which ``start`` retries.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from cdc_ingest.errors import SinkError
from cdc_ingest.kafka.ranges import OffsetsGone, RangeStalled, read_range
from cdc_ingest.sink.task.columns import Columns
from cdc_ingest.sink.task.writer import Writer

STALL_S = 120.0  # no record and no end of the range for this long: the task fails


class ChangelogRange(NamedTuple):
    """One changelog partition's offsets ``[start, end)`` in one micro-batch."""

    partition: int
    start: int
    end: int


class ChangelogGoneError(SinkError):
    """Changelog records of a planned range were deleted (retention) before the sink wrote
    them: changes the sink can never write."""


class ChangelogStalledError(SinkError):
    """Kafka gave a task no record of its range for :data:`STALL_S`; passes by itself."""


class RangeRecords:
    """``rng`` of ``topic`` as the writer's columns (:class:`~cdc_ingest.sink.task.columns.
    Records`), read when iterated."""

    def __init__(self, kafka: dict[str, Any], topic: str, rng: ChangelogRange) -> None:
        self._kafka, self.topic, self.range = kafka, topic, rng

    def columns(self) -> Iterator[tuple[int, Columns]]:
        partition, start, end = self.range
        try:
            for batch in read_range(self._kafka, self.topic, partition, start, end, STALL_S):
                yield partition, batch
        except OffsetsGone as exc:
            raise ChangelogGoneError(
                f"changelog {self.topic} partition {partition}: offsets from "
                f"{exc.next_offset} (this batch reads {start}..{end - 1}) are no longer in "
                f"Kafka ({exc}): retention deleted changelog records before the sink wrote "
                "them, so those changes are lost to the sink topics. Nothing was skipped and "
                "nothing of this range past the last commit is visible. Fix: raise the "
                "changelog topic's retention.ms / retention.bytes so the sink keeps up; to go "
                "on, delete the sink topics (a new snapshot cannot remove keys whose deletes "
                "were lost) and start a new pipeline (a new pipeline.name, "
                "scan.startup.mode: initial)") from exc
        except RangeStalled as exc:
            raise ChangelogStalledError(
                f"changelog {self.topic} partition {partition}: no record of offsets "
                f"{exc.next_offset}..{end - 1} arrived for {STALL_S:.0f} s (Kafka "
                "unreachable, or the partition has no leader). Nothing of the range past the "
                "last commit is visible; started again, the sink goes on from there") from exc


def read_task(write: Writer, settings: Any, ranges: Iterable[ChangelogRange]) -> Iterator[str]:
    """One Spark task (``mapPartitions`` over the batch's ranges, one range per task): each
    range read and handed to ``write(settings, rows)``; yields its counters as JSON."""
    for rng in ranges:
        yield write(settings, RangeRecords(settings.kafka, settings.changelog_topic,
                                           ChangelogRange(*rng))).to_json()
