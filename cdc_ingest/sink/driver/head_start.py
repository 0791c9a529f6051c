"""The sink's head start: the driver writes the changelog while Spark starts (decision 0017).

From ``start`` to Spark's first micro-batch most of the time is Spark's own: the JVM, the
session, the query, its first plan. Meanwhile the driver, which has already asked Kafka for
the changelog topic (sink/driver/startup.py), runs the sink's writer itself: per changelog
partition, :func:`~cdc_ingest.sink.task.writer.write_partition` over the committed records from
the sink group's committed offset on, read as they come (:func:`~cdc_ingest.kafka.ranges.
read_live`). It is the writer of a Spark task, unchanged: the partition's transactional id
(registering it fences any older attempt), the committed offset read after that, records
below it skipped, every transaction carrying its records and the partition's next offset.

The first micro-batch stops it (:meth:`HeadStart.stop`, before that batch's tasks run): each
writer commits what it holds and closes. Spark's batches read the ranges Spark planned, less
what the head start committed (:func:`past_head_start`); their writers would skip those
records anyway, as they skip what any earlier attempt committed. A writer the stop does
not wait out is fenced by the task that takes its partition over (exactly-once). A head
start that fails is logged and leaves its partition to Spark's first batch, which goes on
from its last commit and reports any error the data has.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Iterator, Mapping

from cdc_ingest.kafka.errors import FencedError
from cdc_ingest.kafka.ranges import read_live
from cdc_ingest.sink.settings import SinkSettings
from cdc_ingest.sink.task.columns import Columns
from cdc_ingest.sink.task.range_read import ChangelogRange
from cdc_ingest.sink.task.record_loop import Counters, summary
from cdc_ingest.sink.task.writer import Writer, committed_offsets

log = logging.getLogger(__name__)

BEGINNING = -2  # librdkafka's OFFSET_BEGINNING: a partition without a committed offset
STOP_WAIT_S = 60.0  # how long the first batch waits for the head start to commit and close


class LiveRecords:
    """The committed records of one changelog partition from ``start`` on, as the writer's
    columns (:class:`~cdc_ingest.sink.task.columns.Records`), until ``stopped()``; an empty
    batch each time the read has caught up."""

    def __init__(self, settings: SinkSettings, partition: int, start: int,
                 stopped: threading.Event) -> None:  # fmt: skip
        self._settings, self._partition, self._start = settings, partition, start
        self._stopped = stopped

    def columns(self) -> Iterator[tuple[int, Columns]]:
        settings, partition = self._settings, self._partition
        for batch in read_live(settings.kafka, settings.changelog_topic, partition,
                               self._start, self._stopped.is_set):
            yield partition, batch


class HeadStart:
    """The driver's writers, one thread per changelog partition, until :meth:`stop`."""

    def __init__(self, write: Writer, settings: SinkSettings, partitions: int,
                 committed: Mapping[int, int] | None) -> None:  # fmt: skip
        self._write, self._settings, self._partitions = write, settings, partitions
        self._committed = committed  # None: read (ids registered first) in the thread
        self._stopped = threading.Event()
        self._results: list[Counters] = []
        self._began = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="sink-head-start", daemon=True)

    def start(self) -> HeadStart:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            committed = self._committed
            if committed is None:
                committed = committed_offsets(self._settings)
            writers = [threading.Thread(target=self._partition, args=(p, committed.get(p)),
                                        name=f"sink-head-start-{p}", daemon=True)
                       for p in range(self._partitions)]
            for writer in writers:
                writer.start()
            for writer in writers:
                writer.join()
        except Exception as exc:  # noqa: BLE001 - Spark's first batch does it all then
            self._failed("the sink group's committed offsets", exc)

    def _partition(self, partition: int, start: int | None) -> None:
        rows = LiveRecords(self._settings, partition, BEGINNING if start is None else start,
                           self._stopped)
        try:
            if not self._stopped.is_set():
                self._results.append(self._write(self._settings, rows))
        except FencedError:
            log.warning("the sink's head start on changelog partition %d was fenced by the "
                        "task that took the partition over; what it had not committed is "
                        "aborted, and the task writes it from the last commit", partition)
        except Exception as exc:  # noqa: BLE001 - logged; Spark's batch goes on from here
            self._failed(f"changelog partition {partition}", exc)

    def _failed(self, what: str, exc: BaseException) -> None:
        log.warning("the sink's head start stopped at %s (%s: %s); Spark's first batch goes "
                    "on from the last commit", what, type(exc).__name__, exc)

    def stop(self) -> list[Counters]:
        """Stop the writers after what they hold is committed; their counters. Idempotent."""
        if self._stopped.is_set():
            return []
        self._stopped.set()
        if self._thread.ident is not None:
            self._thread.join(STOP_WAIT_S)
            if self._thread.is_alive():
                log.warning("the sink's head start did not stop within %.0f s; the first "
                            "batch's tasks fence its transactions", STOP_WAIT_S)
        results = list(self._results)
        log.info("head start: %s (before Spark's first batch)",
                 summary(results, time.monotonic() - self._began))
        return results


def past_head_start(ranges: Iterable[ChangelogRange],
                    results: list[Counters]) -> list[ChangelogRange]:  # fmt: skip
    """A batch's ranges without what the head start committed (``results``: its writers'
    counters), which the batch's writers would read only to skip: the first batch's, and
    those of the batches Spark planned meanwhile (``maxOffsetsPerTrigger`` splits a backlog
    the head start may have written whole)."""
    committed = {r.partition: r.last_offset + 1 for r in results if r.last_offset >= 0}
    kept = []
    for partition, planned, end in ranges:
        start = max(planned, committed.get(partition, planned))
        if start < end:
            kept.append(ChangelogRange(partition, start, end))
    return kept
