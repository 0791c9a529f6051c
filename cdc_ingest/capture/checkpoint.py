"""Exactly-once hop 1: capture -> changelog, one Kafka transaction at a time.

A :class:`Checkpoint` holds the open Kafka transaction and the position it leads to. Records
go into the open transaction (:meth:`Checkpoint.open` begins one when none is), the position
moves on as the binlog is read (:attr:`Checkpoint.position`), and :meth:`Checkpoint.commit`
writes that position into the offsets topic *in the same transaction* and commits: records
and the position they lead to become visible together, or neither does. A restart reads the
last committed position (read_committed) and resumes there, so nothing is lost or repeated
(docs/architecture.md, "Exactly-once").

Transactions are bounded by rows (``capture.transaction.max-rows``) and time
(``capture.transaction.max-interval``); with nothing to write, the position alone is
committed every ``heartbeat.interval`` so a restart never needs binlog files the server may
have purged meanwhile.
"""

from __future__ import annotations

import time

from cdc_ingest import metrics
from cdc_ingest.capture.positions import PositionStore
from cdc_ingest.kafka import TransactionalProducer
from cdc_ingest.model import Position


class Checkpoint:
    def __init__(self, producer: TransactionalProducer, store: PositionStore, start: Position,
                 max_rows: int, max_interval_s: float, heartbeat_s: float) -> None:
        self._producer = producer
        self._store = store
        self.max_rows = max_rows
        self._max_interval = max_interval_s
        self._heartbeat = heartbeat_s
        self.position = start  # what the next commit records
        self.committed = start  # what the last commit recorded
        self.rows = 0  # row records in the open transaction
        self._open = False
        self._began = time.monotonic()
        self._last_commit = time.monotonic()

    def open(self) -> None:
        """Make sure a Kafka transaction is open for the records about to be produced."""
        if not self._open:
            self._producer.begin()
            self._open = True
            self.rows = 0
            self._began = time.monotonic()

    @property
    def is_open(self) -> bool:
        """Whether a Kafka transaction is open (records produced, not yet committed)."""
        return self._open

    @property
    def last_commit(self) -> float:
        """``time.monotonic()`` of the last commit (or of the start)."""
        return self._last_commit

    @property
    def full(self) -> bool:
        return self.rows >= self.max_rows

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
        """The records produced since :meth:`open` and :attr:`position`, atomically.
        ``force``: commit even with nothing new (a fenced producer then finds out)."""
        if not force and not self._open and self.position == self.committed:
            return
        # 1. A transaction is open (begin one if only the position moved).
        self.open()
        # 2. The position record joins the records already produced in it.
        self._store.produce(self._producer, self.position)
        # 3. Commit: records and position become visible together, or neither does.
        began = time.monotonic()
        self._producer.commit()
        metrics.COMMIT_TIME.labels("capture").observe(time.monotonic() - began)
        metrics.NUM_RECORDS_OUT.labels("capture").inc(self.rows)
        if self.position.ts_ms:
            metrics.FETCH_LAG.set(max(0, time.time() * 1000 - self.position.ts_ms))
        self._open = False
        self.committed = self.position
        self._last_commit = time.monotonic()
