"""The periodic one-line progress log of capture."""

from __future__ import annotations

import logging
import time
from typing import Protocol

from cdc_ingest.model import Position

log = logging.getLogger(__name__)


class _Head(Protocol):
    def head(self) -> tuple[str, int]: ...


class Progress:
    def __init__(self, interval_s: float, catalog: _Head) -> None:
        self.rows = 0
        self.event_ts = 0
        self._interval = interval_s
        self._catalog = catalog
        self._last = time.monotonic()
        self._last_rows = 0

    def maybe_log(self, committed: Position) -> None:
        now = time.monotonic()
        if now - self._last < self._interval:
            return
        rate = (self.rows - self._last_rows) / (now - self._last)
        lag = max(0.0, time.time() - self.event_ts) if self.event_ts else 0.0
        try:
            head_file, head_pos = self._catalog.head()
            head = f"{head_file}:{head_pos}"
            if (committed.file, committed.pos) == (head_file, head_pos):
                lag = 0.0  # caught up: the last event's age is not lag
        except Exception as exc:  # noqa: BLE001 - the log line must not stop capture
            head = f"unknown ({exc})"
        log.info(
            "capture: %d rows read, %.0f rows/s, lag %.1fs behind binlog head %s, "
            "committed %s",
            self.rows, rate, lag, head, committed.describe(),
        )
        self._last = now
        self._last_rows = self.rows
