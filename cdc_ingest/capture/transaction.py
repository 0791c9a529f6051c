"""Exactly-once hop 1: capture -> changelog, one Kafka transaction at a time.

:class:`ChangelogTransaction` is the only writer of capture's Kafka transactions: it owns the
transactional producer and the position store, and every record capture writes goes through
it: row changes (:meth:`~ChangelogTransaction.row_sender`), marker records such as DDL and
the re-key and re-snapshot records (:meth:`~ChangelogTransaction.marker`), schema-topic
records (:meth:`~ChangelogTransaction.schema_record`), and the position, which
:meth:`~ChangelogTransaction.commit` writes last, in the same transaction: the records and
the position they lead to become visible together, or neither does. A restart reads the last
committed position (read_committed) and resumes there, so nothing is lost or repeated
(docs/architecture.md, "Exactly-once").

The phases move :attr:`~ChangelogTransaction.position` as they read (the binlog phase per
event, the snapshot per chunk) and say when to commit; the transaction decides when a
commit is due by rows (``capture.transaction.max-rows``), by age
(``capture.transaction.max-interval``), and with nothing to write commits the position alone
every ``heartbeat.interval`` so a restart never needs binlog files the server may have purged
meanwhile.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cdc_ingest import metrics
from cdc_ingest.capture.positions import PositionStore
from cdc_ingest.kafka import TransactionalProducer
from cdc_ingest.model import Position
from cdc_ingest.model.table_stats import TableStats

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limits:
    """When a transaction is due: ``max_rows`` row changes, ``max_interval_s`` after it
    began; with nothing in it, the position alone every ``heartbeat_s``."""

    max_rows: int
    max_interval_s: float
    heartbeat_s: float


class ChangelogTransaction:
    def __init__(self, producer: TransactionalProducer, store: PositionStore,
                 changelog_topic: str, schema_topic: str, notification_topic: str,
                 limits: Limits) -> None:
        self._producer = producer
        self._store = store
        self.changelog_topic = changelog_topic
        self._schema_topic = schema_topic
        self._notification_topic = notification_topic
        self.max_rows = limits.max_rows
        self._max_interval = limits.max_interval_s
        self._heartbeat = limits.heartbeat_s
        self.position = Position()  # what the next commit records
        self.committed = Position()  # what the last commit recorded
        self.rows = 0  # row changes in the open transaction
        self.stats = TableStats()  # per table, committed with the records it counts
        self._open = False
        self._began = time.monotonic()
        self._last_commit = time.monotonic()

    # -- the run: fencing, the position to start from --------------------------------------

    def register(self) -> None:
        """Register the transactional id: aborts whatever a killed predecessor left open and
        fences it, so the position read next is the last one that really committed."""
        self._producer.init()

    def load_position(self) -> Position | None:
        """The last committed position (read_committed), or None on a first start; the
        tables' committed totals become :attr:`stats`' base."""
        position = self._store.load()
        self.stats = TableStats(self._store.table_totals)
        metrics.table_totals(self.stats.totals)
        return position

    @property
    def resumed(self) -> bool:
        """Whether :meth:`load_position` found a committed position."""
        return self._store.resumed

    def start_run(self, start: Position) -> None:
        """A run of capture goes on from ``start`` (committed, or the first position): no
        commit until there is something to commit. A transaction a run that ended early left
        open (nothing committed it) is aborted: what it held is written again."""
        if self._open:
            log.info("aborting the Kafka transaction the last run left open")
            self._producer.abort()
            self._open = False
        self.stats.aborted()
        self.position = self.committed = start
        self.rows = 0
        self._began = self._last_commit = time.monotonic()

    # -- writing ---------------------------------------------------------------------------

    def _begin(self) -> None:
        if not self._open:
            self._producer.begin()
            self._open = True
            self.rows = 0
            self._began = time.monotonic()

    def row_sender(self) -> tuple[Any, Any]:
        """``(send, produce)`` for row records about to be written (a transaction is open):
        the producer's checked and raw produce (capture/encode.py's ``produce_rows`` takes
        both). Say how many row changes went out with :meth:`rows_sent`."""
        self._begin()
        return self._producer.send, self._producer.raw_produce

    def rows_sent(self, count: int, table: str, what: str) -> None:
        """``count`` row changes of ``table`` (``db.table``) went into the open transaction
        (a key-changing UPDATE, written as a delete and an insert, counts once); ``what``:
        which of its totals they count in (cdc_ingest/model/table_stats.py)."""
        self.rows += count
        self.stats.add(table, what, count)

    def counted(self, table: str, what: str, count: int = 1) -> None:
        """A record other than a row change (a DDL) counted in ``table``'s totals."""
        self.stats.add(table, what, count)

    @property
    def room(self) -> int:
        """Row changes the open transaction takes before it is full."""
        return self.max_rows - self.rows

    @property
    def full(self) -> bool:
        return self.rows >= self.max_rows

    def marker(self, value: bytes, partitions: Iterable[int], ts_ms: int) -> None:
        """A keyless changelog record (DDL, re-key, re-snapshot) into each of ``partitions``,
        in order with the rows around it there."""
        self._begin()
        for partition in partitions:
            self._producer.send(self.changelog_topic, value, None, ts_ms, partition=partition)

    def notification(self, key: bytes, value: bytes, ts_ms: int) -> None:
        """A notification (capture/notifications.py) in the open transaction: visible when
        what it tells of is committed, and never again after a crash."""
        self._begin()
        self._producer.send(self._notification_topic, value, key, ts_ms)

    def schema_record(self, key: bytes, value: bytes | None, ts_ms: int = 0) -> None:
        """A schema-topic record (cdc_ingest/model/schema_topic.py; None: a tombstone), in
        the transaction of the rows it describes."""
        self._begin()
        self._producer.send(self._schema_topic, value, key, ts_ms)

    # -- committing ------------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        """Whether a Kafka transaction is open (records produced, not yet committed)."""
        return self._open

    @property
    def last_commit(self) -> float:
        """``time.monotonic()`` of the last commit (or of the run's start)."""
        return self._last_commit

    def maybe_commit(self) -> None:
        """Commit when the open transaction is old enough, or when only the position moved
        and a heartbeat is due."""
        now = time.monotonic()
        if self._open:
            if now - self._began >= self._max_interval:
                self.commit()
        elif self.position != self.committed and now - self._last_commit >= self._heartbeat:
            self.commit()

    def commit(self, force: bool = False) -> None:
        """The records written since the transaction began and :attr:`position`, atomically.
        ``force``: commit even with nothing new (a fenced producer then finds out)."""
        if not force and not self._open and self.position == self.committed:
            return
        # 1. A transaction is open (begin one if only the position moved).
        self._begin()
        # 2. The tables' totals and the position join the records already written, last.
        for key, value in self.stats.records():
            self._producer.send(self._store.topic, value, key)
        key, value = self._store.record(self.position)
        self._producer.send(self._store.topic, value, key)
        # 3. Commit: records and position become visible together, or neither does.
        began = time.monotonic()
        self._producer.commit()
        metrics.COMMIT_TIME.labels("capture").observe(time.monotonic() - began)
        metrics.NUM_RECORDS_OUT.labels("capture").inc(self.rows)
        metrics.table_changes(self.stats.committed(), self.stats.totals)
        if self.position.ts_ms:
            metrics.FETCH_LAG.set(max(0, time.time() * 1000 - self.position.ts_ms))
        # 4. What the next commit builds on.
        self._open = False
        self.committed = self.position
        self._last_commit = time.monotonic()
