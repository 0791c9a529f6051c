"""Snapshot progress and chunks: plain data, committed with each chunk's rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

Key = dict[str, Any]
BinlogPos = tuple[str, int]


@dataclass
class SnapshotState:
    """Snapshot progress, committed with each chunk's rows (``Position.snapshot``)."""

    tables: list[list[str]]
    table: int = 0
    after: Key | None = None
    chunks: list[list[Any]] = field(default_factory=list)  # [db, table, after, upto, file, pos]
    done: bool = False
    # The server whose binlog the chunks' positions are in (Catalog.server_identity): another
    # server's file and offset say nothing about them (a failover mid-snapshot).
    server: str | None = None
    # A table re-keyed in place (capture/rekey.py): how far that got; None for a snapshot
    # of the pipeline's tables.
    rekey: dict[str, Any] | None = None
    # Tables snapshotted again on request (capture/signals.py): a reset record goes before
    # the first chunk of each, so the sink tombstones every key it had (none stays behind
    # that the new snapshot does not hold); a table leaves the list with that chunk.
    resets: list[list[str]] = field(default_factory=list)
    # Keys to read again (``verify --repair``, capture/signals.py), one chunk each, before
    # the tables: [db, table, [key JSON text, ...]]; a key chunk leaves the list when its
    # rows are committed. Its chunk is kept as [db, table, None, None, file, pos, keys].
    repairs: list[list[Any]] = field(default_factory=list)
    # Names a swap gave another table (capture/table_ddl.py): [db, table, pos, ts_ms, the
    # key record before]; a ``swap-end`` record follows the table's last chunk, so the sink
    # tombstones the keys the snapshot did not write. A table whose key differs from the one
    # before gets a reset before its first chunk instead (its keys are spelled otherwise).
    prunes: list[list[Any]] = field(default_factory=list)
    # What its notifications need (capture/notifications.py): the snapshot's id and kind,
    # whether STARTED went out, the rows read of the current table; None: none are sent.
    note: dict[str, Any] | None = None
    # Paused (``pause-snapshot``, capture/snapshot_control.py): no chunk is read, the binlog
    # goes on with the chunks read so far as its filter; ``resume-snapshot`` reads on.
    paused: bool = False

    def as_json(self) -> dict[str, Any]:
        return {"tables": self.tables, "table": self.table, "after": self.after,
                "chunks": self.chunks, "done": self.done, "server": self.server,
                "rekey": self.rekey, "resets": self.resets, "repairs": self.repairs,
                "prunes": self.prunes, "note": self.note,
                **({"paused": True} if self.paused else {})}

    def chunk_done(self, chunk: Chunk, high: BinlogPos) -> None:
        """``chunk`` is read as of ``high`` and goes into the changelog with this progress."""
        if chunk.keys is not None:
            self.chunks.append([chunk.db, chunk.table, None, None, *high, list(chunk.keys)])
            self.repairs.pop(0)
        else:
            self.chunks.append([chunk.db, chunk.table, _stored(chunk.after),
                                _stored(chunk.upto), *high])
            if chunk.upto is None:
                self.table, self.after = self.table + 1, None
            else:
                self.after = _stored(chunk.upto)
        self.done = self.table >= len(self.tables) and not self.repairs

    @classmethod
    def again(cls, current: SnapshotState | None, tables: list[list[str]], server: str,
              resets: bool, note: dict[str, Any] | None = None) -> SnapshotState:
        """A snapshot of ``tables`` as newly added tables, taken after the finished
        ``current`` (None: none): its other tables' chunks go on filtering the binlog up to
        their high watermarks; ``resets``: a reset record before each table's first chunk."""
        chunks = [c for c in (current.chunks if current is not None else [])
                  if c[:2] not in tables]
        return cls(tables, chunks=chunks,
                   server=(current.server if current is not None else None) or server,
                   resets=list(tables) if resets else [], note=note)

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> SnapshotState:
        return cls(body["tables"], body["table"], body.get("after"), body.get("chunks") or [],
                   bool(body.get("done")), body.get("server"), body.get("rekey"),
                   body.get("resets") or [], body.get("repairs") or [],
                   body.get("prunes") or [], body.get("note"), bool(body.get("paused")))


@dataclass
class Chunk:
    db: str
    table: str
    after: Key | None
    upto: Key | None
    # a key chunk (verify --repair): these keys' rows (key JSON texts), not a key range;
    # the reader adds the keys of the rows it selected (a collation may match another key)
    keys: list[str] | None = None


@dataclass
class ChunkRows:
    rows: list[tuple[bytes, bytes]]  # each row's key JSON and row JSON
    high: BinlogPos
    selected: int
    reconciled: int
    columns: list[str] | None = None  # the columns the rows were written with (None: all)


def _stored(key: Key | None) -> Key | None:
    """A key as the position record keeps it: an exact number (a DECIMAL key column's
    Fragment) as its text, so reading the record back never turns it into a float."""
    if key is None:
        return None
    return {name: orjson.dumps(v).decode() if isinstance(v, orjson.Fragment) else v
            for name, v in key.items()}
