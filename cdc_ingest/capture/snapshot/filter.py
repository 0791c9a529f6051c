"""The binlog phase after a snapshot: which row changes its snapshot rows already hold."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from cdc_ingest.capture.snapshot.state import BinlogPos, Key, SnapshotState
from cdc_ingest.capture.snapshot.table import TableInfo, key_bytes, same_key


class ChunkFilter:
    """Binlog phase after a snapshot: is this row change already in its key's snapshot row?

    A table's chunks, read in key order, tile its key range: each starts after the key the
    one before ended at. Then the key's chunk is found by bisection, a few key comparisons
    per change (text keys compare through the server, so this is what the binlog phase's
    speed inside the snapshot's window hangs on); chunks that do not tile are searched in
    turn."""

    def __init__(self, state: SnapshotState, info: Callable[[str, str], TableInfo]) -> None:
        self._by_table: dict[tuple[str, str], list[list[Any]]] = {}
        # key chunks (verify --repair): per table, each chunk's keys and high watermark
        self._keys: dict[tuple[str, str], list[tuple[frozenset[bytes], BinlogPos]]] = {}
        for chunk in state.chunks:
            if len(chunk) > 6:
                self._keys.setdefault((chunk[0], chunk[1]), []).append(
                    (frozenset(same_key(k) for k in chunk[6]), (chunk[4], chunk[5])))
            else:
                self._by_table.setdefault((chunk[0], chunk[1]), []).append(chunk)
        self._tiled = {table for table, chunks in self._by_table.items() if _tiles(chunks)}
        self._info = info
        self.state = state
        self.last: BinlogPos = max(((c[4], c[5]) for c in state.chunks), default=("", 0))
        # paused (capture/snapshot_control.py): the tables not begun, and the one being read
        # with the key its chunks reached (None: none read)
        self._unread: set[tuple[str, str]] = set()
        self._current: tuple[tuple[str, str], Key | None] | None = None
        if state.paused and state.table < len(state.tables):
            self._unread = {(t[0], t[1]) for t in state.tables[state.table + 1:]}
            db, table = state.tables[state.table]
            self._current = ((db, table), state.after)

    @property
    def paused(self) -> bool:
        return self.state.paused

    def without_chunks(self) -> ChunkFilter:
        """This paused snapshot's filter once the binlog is past every chunk's high watermark:
        its plan alone (the keys not read yet)."""
        return ChunkFilter(replace(self.state, chunks=[]), self._info)

    def covered(self, db: str, table: str, key: Key, at: BinlogPos) -> bool:
        """True when the change at ``at`` is at or before its chunk's high watermark (of any
        chunk holding the key: a key chunk read it again after its range chunk), or, while
        the snapshot is paused, when no chunk has read its key yet: the chunk that reads it
        later holds it (written now, a delete before that chunk would leave it behind)."""
        if self._current is not None and self._not_read(db, table, key):
            return True
        if at > self.last:
            return False
        keyed = self._keys.get((db, table))
        if keyed is not None:
            text = same_key(key_bytes(key))
            if any(at <= high for keys, high in keyed if text in keys):
                return True
        return self._in_range(db, table, key, at)

    def _not_read(self, db: str, table: str, key: Key) -> bool:
        if (db, table) in self._unread:
            return True
        assert self._current is not None
        (cdb, ctable), after = self._current
        if (db, table) != (cdb, ctable):
            return False
        return after is None or self._info(db, table).order.compare(key, after) > 0

    def _in_range(self, db: str, table: str, key: Key, at: BinlogPos) -> bool:
        chunks = self._by_table.get((db, table))
        if not chunks:
            return False
        order = self._info(db, table).order
        if (db, table) not in self._tiled:
            for chunk in chunks:
                if order.within(key, chunk[2], chunk[3]):
                    return at <= (chunk[4], chunk[5])
            return False
        lo, hi = 0, len(chunks)  # the first chunk whose end is at or after the key
        while lo < hi:
            mid = (lo + hi) // 2
            upto = chunks[mid][3]
            if upto is None or order.compare(key, upto) <= 0:
                hi = mid
            else:
                lo = mid + 1
        if lo == len(chunks) or not order.within(key, chunks[lo][2], chunks[lo][3]):
            return False
        return at <= (chunks[lo][4], chunks[lo][5])

    def reaches(self, db: str, table: str, at: BinlogPos) -> bool:
        """True when a chunk of the table was read after ``at`` (its rows are the table as
        of a later point, so a statement at ``at`` that empties the table cannot be put in
        order with them)."""
        return (any(at < (c[4], c[5]) for c in self._by_table.get((db, table), ()))
                or any(at < high for _, high in self._keys.get((db, table), ())))


def _tiles(chunks: list[list[Any]]) -> bool:
    """Whether the chunks follow each other in key order: the first from the start, each
    from where the one before ended, only the last open-ended."""
    return (chunks[0][2] is None
            and all(chunks[i][2] == chunks[i - 1][3] and chunks[i - 1][3] is not None
                    for i in range(1, len(chunks))))
