"""The initial snapshot: lock-free primary-key chunks reconciled with the binlog (DBLog).

For each chunk: take a low watermark (the binlog head), read the chunk with a plain SELECT,
take a high watermark, and replay the binlog between the two onto the rows read, so the rows
emitted are exactly the chunk's state at the high watermark. The binlog phase that follows
starts where the snapshot started and drops, for each key, the events at or before its
chunk's high watermark (:class:`ChunkFilter`): every change is in the changelog once, after
the key's snapshot row. No FLUSH TABLES WITH READ LOCK, no table locks.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pymysql
import pymysql.converters
from pymysql.constants import FIELD_TYPE
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)

from cdc_ingest.capture.binlog import (
    BinlogReader,
    CatalogLookup,
    ConnectionSettings,
    Rows,
    TxCommit,
)
from cdc_ingest.capture.catalog import Catalog, KeyColumns, stream_rows
from cdc_ingest.capture.changes import KeyPlan
from cdc_ingest.capture.keyorder import (
    KeyColumn,
    KeyOrder,
    after_condition,
    after_params,
    quote,
    upto_condition,
)
from cdc_ingest.errors import SourceError
from cdc_ingest.model import Position
from cdc_ingest.verify.columns import COLUMNS_QUERY, Column
from cdc_ingest.verify.convert import UnsupportedType, converter, select_expression
from cdc_ingest.verify.values import Num, dumps

log = logging.getLogger(__name__)

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

    def as_json(self) -> dict[str, Any]:
        return {"tables": self.tables, "table": self.table, "after": self.after,
                "chunks": self.chunks, "done": self.done}

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> SnapshotState:
        return cls(body["tables"], body["table"], body.get("after"), body.get("chunks") or [],
                   bool(body.get("done")))


@dataclass
class Chunk:
    db: str
    table: str
    after: Key | None
    upto: Key | None


@dataclass
class ChunkRows:
    rows: list[tuple[bytes, Key, dict[str, Any]]]
    high: BinlogPos
    selected: int
    reconciled: int


class TableInfo:
    """What the snapshot needs of one table: columns, key order, SELECTs."""

    def __init__(self, db: str, table: str, columns: list[Column], collations: dict[str, str],
                 key: tuple[str, ...], compare_text: Callable[[str, str, str, str], int],
                 tinyint1_as_boolean: bool) -> None:
        self.db, self.table = db, table
        by_name = {c.name: c for c in columns}
        missing = [k for k in key if k not in by_name]
        if not key or missing:
            raise SourceError(
                f"table {db}.{table} has no usable key ({missing or 'no primary key'}), so it "
                "cannot be snapshotted. Fix: add a primary key or name its key columns in "
                "source.tables.key-columns, or exclude it with source.tables.exclude."
            )
        self.names = tuple(c.name for c in columns)
        self.key = key
        self.order = KeyOrder(
            tuple(KeyColumn(k, by_name[k].data_type, by_name[k].charset, collations.get(k))
                  for k in key),
            compare_text,
        )
        try:
            convert = [_snapshot_converter(c, tinyint1_as_boolean) for c in columns]
        except UnsupportedType as exc:
            raise SourceError(f"{db}.{table}: {exc}, which the snapshot cannot read") from None
        # Only the columns whose driver value is not already its JSON form are converted.
        self.fixes = tuple((i, c.name, f) for i, (c, f) in enumerate(zip(columns, convert,
                                                                         strict=True)) if f)
        self.select = ", ".join(select_expression(c) for c in columns)
        self.source = f"{quote(db)}.{quote(table)}"
        self.order_by = ", ".join(quote(k) for k in key)

    def row(self, values: tuple[Any, ...]) -> tuple[Key, dict[str, Any]]:
        row = dict(zip(self.names, values, strict=True))
        for i, name, fix in self.fixes:
            value = values[i]
            if value is not None:
                row[name] = fix(value)
        return {k: row[k] for k in self.key}, row


# The snapshot's connection leaves these as the server's text (no datetime/Decimal objects):
# the text already is the output form, with the column's exact fractional digits and scale.
SERVER_TEXT = (FIELD_TYPE.DATETIME, FIELD_TYPE.TIMESTAMP, FIELD_TYPE.DATE,
               FIELD_TYPE.NEWDECIMAL, FIELD_TYPE.DECIMAL)
_IDENTITY = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "json",
                       "enum", "smallint", "mediumint", "int", "integer", "bigint"})


def _zero_date(text: str) -> bool:
    return text[5:7] == "00" or text[8:10] == "00"


def _snapshot_converter(column: Column, tinyint1_as_boolean: bool) -> Any:
    """None when the driver's value is already the output JSON value, else a function."""
    kind = column.data_type
    if kind in _IDENTITY:
        return None
    if kind == "tinyint" and not (tinyint1_as_boolean and column.is_tinyint1):
        return None
    if kind in ("date", "datetime"):
        return lambda v: None if _zero_date(v) else v
    if kind == "timestamp":
        return lambda v: None if _zero_date(v) else v + "Z"
    if kind in ("decimal", "numeric"):
        return Num if column.scale else int
    return converter(column, tinyint1_as_boolean)


def key_bytes(key: Key) -> bytes:
    """The changelog key, byte-identical to the one binlog rows of the same key get."""
    return dumps(key)


class Snapshotter:
    """Reads chunks; one connection for SELECTs and catalog, one replica for windows."""

    def __init__(self, settings: ConnectionSettings, server_id: int,
                 key_columns: KeyColumns, tinyint1_as_boolean: bool, chunk_size: int,
                 fetch_size: int, heartbeat_s: float = 1.0) -> None:
        self._settings = settings
        self._server_id = server_id
        # Its own catalog connection: readers run in parallel threads.
        self._catalog = Catalog(settings, key_columns)
        self._key_columns = key_columns
        self._booleans = tinyint1_as_boolean
        self.chunk_size = chunk_size
        self._fetch = fetch_size
        self._heartbeat = heartbeat_s
        conv = dict(pymysql.converters.conversions)
        for field_type in SERVER_TEXT:
            conv.pop(field_type, None)
        self._conn = pymysql.connect(**settings.as_pymysql(), autocommit=True, conv=conv)
        self._sql("SET SESSION time_zone = '+00:00'")
        self._sql("SET SESSION net_write_timeout = 3600")
        self._tables: dict[tuple[str, str], TableInfo] = {}

    def close(self) -> None:
        self._conn.close()
        self._catalog.close()

    def _sql(self, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        self._conn.ping(reconnect=True)
        with self._conn.cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())

    def compare_text(self, a: str, b: str, charset: str, collation: str) -> int:
        row = self._sql(
            f"SELECT STRCMP(CONVERT(%s USING {charset}) COLLATE {collation}, "
            f"CONVERT(%s USING {charset}) COLLATE {collation})",
            (a, b),
        )
        return int(row[0][0])

    def info(self, db: str, table: str) -> TableInfo:
        hit = self._tables.get((db, table))
        if hit is None:
            columns = [Column.from_row(r) for r in self._sql(COLUMNS_QUERY, (db, table))]
            collations = {
                str(r[0]): str(r[1]) for r in self._sql(
                    "SELECT COLUMN_NAME, COLLATION_NAME FROM information_schema.COLUMNS WHERE "
                    "TABLE_SCHEMA=%s AND TABLE_NAME=%s AND COLLATION_NAME IS NOT NULL",
                    (db, table))
            }
            key = self._key_columns(db, table) or self._catalog.primary_key(db, table)
            hit = TableInfo(db, table, columns, collations, key, self.compare_text,
                            self._booleans)
            self._tables[(db, table)] = hit
        return hit

    def estimated_rows(self, db: str, table: str) -> int:
        rows = self._sql("SELECT TABLE_ROWS FROM information_schema.TABLES WHERE "
                         "TABLE_SCHEMA=%s AND TABLE_NAME=%s", (db, table))
        return int(rows[0][0] or 0) if rows else 0

    # -- chunks --------------------------------------------------------------------------

    def next_chunk(self, db: str, table: str, after: Key | None) -> Chunk:
        """The chunk after ``after``: up to ``chunk_size`` keys; the last one is open."""
        info = self.info(db, table)
        if not info.order.chunkable:
            return Chunk(db, table, None, None)  # one chunk: keys we cannot order in Python
        where, args = self._after(info, after)
        rows = self._sql(
            f"SELECT {info.order_by} FROM {info.source}{where} "  # noqa: S608
            f"ORDER BY {info.order_by} LIMIT 1 OFFSET {self.chunk_size - 1}", args)
        if not rows:
            return Chunk(db, table, after, None)
        upto, _ = info.row(self._key_row(info, rows[0]))
        return Chunk(db, table, after, upto)

    @staticmethod
    def _key_row(info: TableInfo, key_values: tuple[Any, ...]) -> tuple[Any, ...]:
        values = dict(zip(info.key, key_values, strict=True))
        return tuple(values.get(n) for n in info.names)

    @staticmethod
    def _after(info: TableInfo, after: Key | None) -> tuple[str, tuple[Any, ...]]:
        if after is None:
            return "", ()
        params = info.order.sql_params(after)
        return f" WHERE {after_condition(info.key)}", after_params(info.key, params)

    def read(self, chunk: Chunk) -> ChunkRows:
        """The chunk's rows as of its high watermark (read, then reconciled)."""
        info = self.info(chunk.db, chunk.table)
        # The window reader starts after the low watermark: by GTID on MariaDB (the
        # replication library cannot start MariaDB at a file position), else file:pos.
        low_gtid = self._catalog.gtid_now() if self._catalog.is_mariadb else None
        low = self._catalog.head()
        rows: dict[bytes, tuple[Key, dict[str, Any]]] = {}
        for values in self._select(info, chunk):
            key, row = info.row(values)
            rows[key_bytes(key)] = (key, row)
        selected = len(rows)
        high = self._catalog.head()
        reconciled = 0
        if high != low:
            start = Position(gtid_set=low_gtid) if low_gtid else Position(file=low[0],
                                                                           pos=low[1])
            reconciled = self._reconcile(info, chunk, rows, start, high)
        return ChunkRows([(k, key, row) for k, (key, row) in rows.items()], high, selected,
                         reconciled)

    def _select(self, info: TableInfo, chunk: Chunk) -> Iterator[tuple[Any, ...]]:
        conditions: list[str] = []
        args: list[Any] = []
        if chunk.after is not None:
            conditions.append(after_condition(info.key))
            args.extend(after_params(info.key, info.order.sql_params(chunk.after)))
        if chunk.upto is not None:
            conditions.append(upto_condition(info.key))
            args.extend(after_params(info.key, info.order.sql_params(chunk.upto)))
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        sql = f"SELECT {info.select} FROM {info.source}{where}"  # noqa: S608
        yield from stream_rows(self._conn, sql, args, self._fetch,
                               f"a snapshot chunk of {chunk.db}.{chunk.table}")

    def _reconcile(self, info: TableInfo, chunk: Chunk,
                   rows: dict[bytes, tuple[Key, dict[str, Any]]], low: Position,
                   high: BinlogPos) -> int:
        """Replay the binlog between the watermarks onto the chunk's rows."""
        reader = BinlogReader(
            self._settings, self._server_id, low,
            lambda d, t: (d, t) == (chunk.db, chunk.table),
            self._facts(info), self._catalog.is_mariadb, self._heartbeat,
        )
        applied = 0
        try:
            for ev in reader.events():
                if isinstance(ev, Rows):
                    applied += self._apply(info, chunk, rows, ev)
                    at = (ev.file, ev.pos)
                elif isinstance(ev, TxCommit):
                    at = (ev.file, ev.pos)
                else:
                    at = (getattr(ev, "file", ""), getattr(ev, "pos", 0))
                if at >= high:
                    break
        finally:
            reader.close()
        return applied

    def _facts(self, info: TableInfo) -> CatalogLookup:
        def facts(db: str, table: str) -> tuple[frozenset[str], tuple[str, ...]]:
            booleans = self._catalog.table_facts(db, table)[0] if self._booleans else frozenset()
            return booleans, info.key

        return facts

    def _apply(self, info: TableInfo, chunk: Chunk,
               rows: dict[bytes, tuple[Key, dict[str, Any]]], ev: Rows) -> int:
        plan = KeyPlan(ev.schema, ev.where)
        names = ev.schema.names
        applied = 0
        for before, after in ev.rows:
            if before is not None:
                old = plan.key(before)
                if info.order.within(old, chunk.after, chunk.upto):
                    rows.pop(key_bytes(old), None)
                    applied += 1
            if after is not None:
                new = plan.key(after)
                if info.order.within(new, chunk.after, chunk.upto):
                    rows[key_bytes(new)] = (new, dict(zip(names, after, strict=True)))
                    applied += 1
        return applied


class ChunkFilter:
    """Binlog phase after a snapshot: is this row change already in its key's snapshot row?"""

    def __init__(self, state: SnapshotState, info: Callable[[str, str], TableInfo]) -> None:
        self._by_table: dict[tuple[str, str], list[list[Any]]] = {}
        for chunk in state.chunks:
            self._by_table.setdefault((chunk[0], chunk[1]), []).append(chunk)
        self._info = info
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
