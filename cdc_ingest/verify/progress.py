"""verify's progress while it reads MySQL: a line per topic every :data:`EVERY_S` seconds with
the rows compared, the rate and, from the server's row estimate, the time left."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

log = logging.getLogger("cdc_ingest.verify")

EVERY_S = 10.0


class Progress:
    """Told each batch of MySQL rows compared (as a ``pace``); passes it on to ``then``."""

    def __init__(self, then: Callable[[int], None] | None = None,
                 every_s: float = EVERY_S) -> None:
        self._then, self._every = then, every_s
        self.topic(None, 0)

    @property
    def rate(self) -> float | None:
        """The rate limit of what it passes the batches on to (``verify --continuous``)."""
        return getattr(self._then, "rate", None)

    def topic(self, name: str | None, estimate: int) -> None:
        """The next topic to be read, with the server's estimate of its tables' rows."""
        self._name, self._estimate, self.rows = name, estimate, 0
        self._began = self._shown = time.monotonic()

    def __call__(self, rows: int) -> None:
        self.rows += rows
        now = time.monotonic()
        if self._name is not None and now - self._shown >= self._every:
            self._shown = now
            log.info("verify: %s", self.line(now))
        if self._then is not None:
            self._then(rows)

    def line(self, now: float) -> str:
        rate = self.rows / max(now - self._began, 1e-9)
        left = ""
        if self._estimate > self.rows and rate > 0:
            left = f", about {_duration((self._estimate - self.rows) / rate)} left"
        of = f" of about {self._estimate:,}" if self._estimate else ""
        return f"{self._name}: {self.rows:,}{of} rows compared ({rate:,.0f} rows/s{left})"


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"
