"""The binlog a MySQL chunk replays onto its rows: from a point every transaction before which
is visible to the chunk's read view, up to the binlog head read after its SELECT
(docs/decisions/0006-snapshot-read-views.md).

A reader's first window starts from the executed GTID set read before the read view opens
(a GTID dump: the server sends every transaction outside it). Each later window starts at
the file position where the previous one ended, once the executed set covers every
transaction before that position (the GTIDs the windows passed): a file position costs the
server nothing to find, a GTID dump makes it read the current binlog file from its start.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from cdc_ingest.capture.events import BinlogEvent, Rows, TxBegin
from cdc_ingest.capture.snapshot.state import BinlogPos
from cdc_ingest.errors import SourceError
from cdc_ingest.model import Position
from cdc_ingest.mysql.gtid import advance_gtid_set, lacking

# How long the transactions a window passed may take to become visible (they were in the
# binlog, so they are in the engine commit stage): past this the server is stuck.
VISIBLE_TIMEOUT_S = 60.0


class Window:
    """Where this reader's next window starts, and the GTIDs of everything before it."""

    def __init__(self, executed: Callable[[], str]) -> None:
        self._executed = executed  # the server's executed GTID set, read now
        self._passed: BinlogPos | None = None  # where the last window ended
        self._known = ""  # GTIDs of every transaction before _passed

    def start(self) -> Position:
        """Where the next window starts; call before the read view opens. Waits until every
        transaction before it is visible (in the executed set)."""
        if self._passed is None:
            self._known = self._executed()
            return Position(gtid_set=self._known)
        deadline = time.monotonic() + VISIBLE_TIMEOUT_S
        while True:
            missing = lacking(self._executed(), self._known)
            if not missing:
                return Position(file=self._passed[0], pos=self._passed[1])
            if time.monotonic() > deadline:
                raise SourceError(
                    f"transactions {missing[:200]} are in the binlog but not visible after "
                    f"{VISIBLE_TIMEOUT_S:.0f} s, so the snapshot cannot read a chunk exactly. "
                    "Fix: check the server (a stuck commit, a full disk), then restart capture."
                )
            time.sleep(0.002)

    def empty(self, high: BinlogPos) -> bool:
        """Nothing to replay: the last window already ended at ``high`` (or past it)."""
        return self._passed is not None and self._passed >= high

    def replay(self, events: Iterable[BinlogEvent], high: BinlogPos,
               apply: Callable[[Rows], int]) -> int:
        """Apply the rows of every transaction up to ``high`` (a transaction boundary) in
        binlog order; remember their GTIDs and that the next window starts at ``high``."""
        applied = 0
        for ev in events:
            at = (ev.file, ev.pos)
            if isinstance(ev, TxBegin):
                if at >= high:  # the first transaction after the window
                    break
                if ev.gtid is not None:
                    self._known = advance_gtid_set(self._known, ev.gtid)
                continue
            if at > high:
                break
            if isinstance(ev, Rows):
                applied += apply(ev)
            if at == high:
                break
        self._passed = high if self._passed is None else max(self._passed, high)
        return applied
