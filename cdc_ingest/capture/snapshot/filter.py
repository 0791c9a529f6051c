"""The binlog phase after a snapshot: which row changes its snapshot rows already hold."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cdc_ingest.capture.snapshot.state import BinlogPos, Key, SnapshotState
from cdc_ingest.capture.snapshot.table import TableInfo


class ChunkFilter:
    """Binlog phase after a snapshot: is this row change already in its key's snapshot row?"""

    def __init__(self, state: SnapshotState, info: Callable[[str, str], TableInfo]) -> None:
        self._by_table: dict[tuple[str, str], list[list[Any]]] = {}
        for chunk in state.chunks:
            self._by_table.setdefault((chunk[0], chunk[1]), []).append(chunk)
        self._info = info
        self.state = state
        self.last: BinlogPos = max(((c[4], c[5]) for c in state.chunks), default=("", 0))

    def covered(self, db: str, table: str, key: Key, at: BinlogPos) -> bool:
        """True when the change at ``at`` is at or before its chunk's high watermark."""
        chunks = self._by_table.get((db, table))
        if not chunks or at > self.last:
            return False
        order = self._info(db, table).order
        for chunk in chunks:
            if order.within(key, chunk[2], chunk[3]):
                return at <= (chunk[4], chunk[5])
        return False

    def reaches(self, db: str, table: str, at: BinlogPos) -> bool:
        """True when a chunk of the table was read after ``at`` (its rows are the table as
        of a later point, so a statement at ``at`` that empties the table cannot be put in
        order with them)."""
        return any(at < (c[4], c[5]) for c in self._by_table.get((db, table), ()))
