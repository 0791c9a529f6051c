"""Reading one chunk: low watermark, SELECT, high watermark, binlog replay in between."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from cdc_ingest.capture.binlog import BinlogReader
from cdc_ingest.capture.encode import KeyPlan
from cdc_ingest.capture.events import Rows, TxCommit
from cdc_ingest.capture.snapshot.keyorder import (
    KeyColumn,
    KeyOrder,
    after_condition,
    after_params,
    quote,
    upto_condition,
)
from cdc_ingest.capture.snapshot.state import BinlogPos, Chunk, ChunkRows, Key
from cdc_ingest.capture.snapshot.values import (
    UnsupportedType,
    select_expression,
    snapshot_converter,
)
from cdc_ingest.capture.tablemap import CatalogLookup
from cdc_ingest.errors import SourceError
from cdc_ingest.model import Position
from cdc_ingest.mysql import (
    COLUMNS_QUERY,
    Catalog,
    Column,
    ConnectionSettings,
    KeyColumns,
    connect,
    stream_rows,
)

log = logging.getLogger(__name__)



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
            convert = [snapshot_converter(c, tinyint1_as_boolean) for c in columns]
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


def key_bytes(key: Key) -> bytes:
    """The changelog key, byte-identical to the one binlog rows of the same key get."""
    return orjson.dumps(key)


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
        self._conn = connect(settings, retries=0, server_text=True)
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
