"""Snapshot progress for people: a bar per table on a terminal, else log lines."""

from __future__ import annotations

import logging
import sys
import time

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)

log = logging.getLogger(__name__)


class SnapshotProgress:
    """Per-table progress: a bar per table on a terminal, else log lines (rows, rows/s, ETA).

    The same figures are metrics (``numSnapshotRecords`` per table).
    """

    def __init__(self, interval_s: float = 5.0) -> None:
        self._interval = interval_s
        self._last = 0.0
        self._started: dict[str, float] = {}
        self.rows: dict[str, int] = {}
        self._bar: Progress | None = None
        self._tasks: dict[str, TaskID] = {}
        if sys.stderr.isatty():
            self._bar = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[rate]} rows/s"), TimeRemainingColumn(),
                console=Console(stderr=True),
            )
            self._bar.start()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()

    def add(self, table: str, rows: int, estimate: int) -> None:
        now = time.monotonic()
        self._started.setdefault(table, now)
        self.rows[table] = done = self.rows.get(table, 0) + rows
        elapsed = now - self._started[table]
        rate = done / elapsed if elapsed >= 1.0 else 0.0
        if self._bar is not None:
            task = self._tasks.get(table)
            if task is None:
                task = self._tasks[table] = self._bar.add_task(table, total=estimate, rate=0)
            self._bar.update(task, completed=done, total=max(estimate, done),
                             rate=f"{rate:,.0f}")
            return
        if now - self._last < self._interval or elapsed < 1.0:
            return
        self._last = now
        left = max(estimate - done, 0) / rate if rate else 0.0
        log.info("snapshot %s: %d of ~%d rows, %.0f rows/s, ETA %.0fs", table, done,
                 max(estimate, done), rate, left)
