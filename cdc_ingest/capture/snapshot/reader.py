"""Reading one chunk: low watermark, SELECT, high watermark, binlog replay in between."""

from __future__ import annotations

import json
import logging
from decimal import Decimal
from typing import Any

from cdc_ingest.capture import decoder
from cdc_ingest.capture.binlog import BinlogReader, Replica
from cdc_ingest.capture.encode import KeyPlan
from cdc_ingest.capture.events import Rows
from cdc_ingest.capture.snapshot import table as tables
from cdc_ingest.capture.snapshot.keyorder import (
    after_condition,
    after_params,
    upto_condition,
)
from cdc_ingest.capture.snapshot.state import BinlogPos, Chunk, ChunkRows, Key
from cdc_ingest.capture.snapshot.table import (
    RowsJson,
    TableInfo,
    key_bytes,
    row_json,
    same_key,
)
from cdc_ingest.capture.snapshot.window import Window
from cdc_ingest.capture.tablemap import CatalogLookup
from cdc_ingest.errors import SourceError
from cdc_ingest.model import Position
from cdc_ingest.mysql import (
    COLUMNS_QUERY,
    Catalog,
    Column,
    ConnectionSettings,
    KeyColumns,
    TableFacts,
    connect,
    query_rows,
    stream_rows,
)
from cdc_ingest.mysql.packets import stream_packets

log = logging.getLogger(__name__)

# MySQL's dump thread sends nothing for the transactions it skips (those in the start set):
# a heartbeat this often tells the window reader where the server has got to, so a window
# with nothing to replay ends within it.
WINDOW_HEARTBEAT_S = 0.05
# engines whose consistent snapshot is a read view with a binlog position (MariaDB)
MVCC_ENGINES = frozenset({"innodb"})


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
        if not self._catalog.is_mariadb:
            self._require_ordered_commits()
        self._tables: dict[tuple[str, str], TableInfo] = {}
        self._window = Window(self._catalog.gtid_now)  # MySQL: where the next window starts
        # rows parsed in C from the socket's bytes (_textrows.pyx), else by PyMySQL
        self._compiled = (tables._textrows is not None and decoder.decoder_kind() == "compiled"
                          and hasattr(self._conn, "_rfile") and hasattr(self._conn, "_next_seq_id"))

    def _require_ordered_commits(self) -> None:
        """MySQL's executed GTID set grows in binlog order only with binlog_order_commits
        (the default); the chunk protocol relies on it (docs/decisions/0006)."""
        gtid_mode = str(self._sql("SELECT @@GLOBAL.gtid_mode")[0][0]).upper()
        if gtid_mode != "ON":
            raise SourceError(
                f"gtid_mode is {gtid_mode} on the server; the snapshot of a MySQL server "
                "follows transactions by GTID. Fix: enable GTIDs (gtid_mode=ON, "
                "enforce_gtid_consistency=ON; see docs/mysql-setup.md)."
            )
        value = self._sql("SELECT @@GLOBAL.binlog_order_commits")[0][0]
        if str(value) not in ("1", "ON"):
            raise SourceError(
                "binlog_order_commits is OFF on the server, so transactions may become "
                "visible in another order than the binlog's and a snapshot could not be "
                "exact. Fix: SET PERSIST binlog_order_commits = ON (the default), or start "
                "without a snapshot (scan.startup.mode: latest-offset)."
            )

    def close(self) -> None:
        self._conn.close()
        self._catalog.close()

    def _sql(self, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        return query_rows(self._conn, sql, args)

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
            columns = [Column.from_row(r, self._catalog.is_mariadb)
                       for r in self._sql(COLUMNS_QUERY, (db, table))]
            collations = {
                str(r[0]): str(r[1]) for r in self._sql(
                    "SELECT COLUMN_NAME, COLLATION_NAME FROM information_schema.COLUMNS WHERE "
                    "TABLE_SCHEMA=%s AND TABLE_NAME=%s AND COLLATION_NAME IS NOT NULL",
                    (db, table))
            }
            key = self._catalog.table_facts(db, table)[1]
            hit = TableInfo(db, table, columns, collations, key, self.compare_text,
                            self._booleans)
            engine = self._sql("SELECT ENGINE FROM information_schema.TABLES WHERE "
                               "TABLE_SCHEMA=%s AND TABLE_NAME=%s", (db, table))
            hit.mvcc = bool(engine) and str(engine[0][0]).lower() in MVCC_ENGINES
            self._tables[(db, table)] = hit
        return hit

    def exists(self, db: str, table: str) -> bool:
        """Whether the table exists now (a snapshot may outlive it: dropped or renamed)."""
        return self._catalog.exists(db, table)

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

    def read(self, chunk: Chunk, columns: list[str] | None = None) -> ChunkRows:
        """The chunk's rows as of its high watermark: a binlog position such that the rows
        hold exactly the transactions before it (docs/decisions/0006-snapshot-read-views.md).
        Each row is its key's and its own JSON, with ``columns`` (None: all the table's).

        MariaDB tells the binlog position of a consistent-snapshot read view, so the rows
        are read in one and that position is the watermark. MySQL does not: its executed
        GTID set, read before the read view opens, holds only transactions committed in the
        engine (so visible to the view), and every transaction outside it up to the binlog
        head read after the SELECT is replayed onto the rows in binlog order."""
        info = self.info(chunk.db, chunk.table)
        if self._catalog.is_mariadb and info.mvcc:
            rows, high = self._read_in_view(info, chunk, columns)
            return ChunkRows(list(rows.values()), high, len(rows), 0, columns)
        # MariaDB here: a table without read views (MyISAM, Aria...); its changes are visible
        # before they are binlogged, so all of @@gtid_binlog_pos is visible to the SELECT.
        window = Window(self._catalog.gtid_now) if self._catalog.is_mariadb else self._window
        start = window.start()
        rows, _ = self._read_in_view(info, chunk, columns)
        selected = len(rows)
        high = self._catalog.head()
        reconciled = 0 if window.empty(high) else self._reconcile(
            info, chunk, rows, window, start, high, columns)
        return ChunkRows(list(rows.values()), high, selected, reconciled, columns)

    def _read_in_view(self, info: TableInfo, chunk: Chunk, columns: list[str] | None
                      ) -> tuple[RowsJson, BinlogPos]:
        """The chunk's rows read in one consistent-snapshot transaction, and (MariaDB) the
        binlog position of its read view."""
        rows: RowsJson = {}
        with self._catalog.flavor.read_view(self._conn) as (_, view):
            sql, args = self._select(info, chunk)
            what = f"a snapshot chunk of {chunk.db}.{chunk.table}"
            if self._compiled:
                stream_packets(self._conn, sql, args, what,
                               lambda conv, seq: info.text_rows(conv, seq, columns, rows))
            else:
                for values in stream_rows(self._conn, sql, args, self._fetch, what):
                    k, row = info.row_json(values, columns)
                    rows[k] = (k, row)
        if chunk.keys is not None:  # the rows' own keys too: the window replays onto them,
            # and the binlog after the chunk is filtered by them (a collation may match a
            # row whose key is spelled otherwise)
            chunk.keys = sorted({*chunk.keys, *(k.decode() for k in rows)})
        return rows, view or ("", 0)

    def _select(self, info: TableInfo, chunk: Chunk) -> tuple[str, list[Any]]:
        if chunk.keys is not None:  # a key chunk: the rows of these keys
            columns = ", ".join(f"`{k.replace('`', '``')}`" for k in info.key)
            one = "(" + ", ".join(["%s"] * len(info.key)) + ")"
            args = [v for text in chunk.keys
                    for v in info.order.sql_params(json.loads(text, parse_float=Decimal))]
            where = f" WHERE ({columns}) IN ({', '.join([one] * len(chunk.keys))})"
            return f"SELECT {info.select} FROM {info.source}{where}", args  # noqa: S608
        conditions: list[str] = []
        args = []
        if chunk.after is not None:
            conditions.append(after_condition(info.key))
            args.extend(after_params(info.key, info.order.sql_params(chunk.after)))
        if chunk.upto is not None:
            conditions.append(upto_condition(info.key))
            args.extend(after_params(info.key, info.order.sql_params(chunk.upto)))
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        return f"SELECT {info.select} FROM {info.source}{where}", args  # noqa: S608

    def _reconcile(self, info: TableInfo, chunk: Chunk, rows: RowsJson, window: Window,
                   start: Position, high: BinlogPos, columns: list[str] | None) -> int:
        """Replay the window's transactions onto the chunk's rows. Full row images make a
        transaction the rows already show harmless: the last image of a key wins."""
        replica = Replica(self._settings, self._server_id, self._catalog.is_mariadb,
                          WINDOW_HEARTBEAT_S)
        reader = BinlogReader(replica, start, lambda d, t: (d, t) == (chunk.db, chunk.table),
                              self._facts(info))
        try:
            return window.replay(reader.events(), high,
                                 lambda ev: self._apply(info, chunk, rows, ev, columns))
        finally:
            reader.close()

    def _facts(self, info: TableInfo) -> CatalogLookup:
        def facts(db: str, table: str) -> TableFacts:
            known = self._catalog.table_facts(db, table)
            return known._replace(booleans=known.booleans if self._booleans else frozenset(),
                                  keys=info.key, configured=True)

        return facts

    def _apply(self, info: TableInfo, chunk: Chunk, rows: RowsJson, ev: Rows,
               columns: list[str] | None) -> int:
        plan = KeyPlan(ev.schema, ev.where)
        names = ev.schema.names
        applied = 0
        keys = None if chunk.keys is None else {same_key(k) for k in chunk.keys}

        def within(key: Key) -> bool:
            if keys is not None:
                return same_key(key_bytes(key)) in keys
            return info.order.within(key, chunk.after, chunk.upto)

        for before, after in ev.rows:
            if before is not None:
                old = plan.key(before)
                if within(old):
                    rows.pop(key_bytes(old), None)
                    applied += 1
            if after is not None:
                new = plan.key(after)
                if within(new):
                    k = key_bytes(new)
                    rows[k] = (k, row_json(dict(zip(names, after, strict=True)), columns))
                    applied += 1
        return applied
