"""Cached facts about a server and its tables: flavour, binlog positions, key columns."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

import pymysql

from cdc_ingest.errors import SourceError
from cdc_ingest.model import Position
from cdc_ingest.mysql.columns import CATALOG_KINDS, COLUMNS_QUERY, KNOWN_TYPES, Column, as_text
from cdc_ingest.mysql.connection import (
    ConnectionSettings,
    connect,
    query_rows,
    unavailable,
    went_away,
)
from cdc_ingest.mysql.flavor import Flavor

log = logging.getLogger(__name__)

# (db, table) -> configured key columns of a table without a primary key, or None
KeyColumns = Callable[[str, str], tuple[str, ...] | None]
_NO_KINDS: Mapping[str, str] = MappingProxyType({})


class TableFacts(NamedTuple):
    """What the binlog does not say of a table's columns: the TINYINT(1) column names, the
    key columns in key order, whether those are configured (``source.tables.key-columns``)
    rather than the primary key, and the columns of a type the binlog writes as another
    (:data:`~cdc_ingest.mysql.columns.CATALOG_KINDS`: name -> ``uuid``, ``vector``...)."""

    booleans: frozenset[str]
    keys: tuple[str, ...]
    configured: bool
    kinds: Mapping[str, str] = _NO_KINDS


def unknown_type_error(db: str, table: str, column: str, column_type: str) -> SourceError:
    """A captured table has a column of a type this version cannot read exactly."""
    return SourceError(
        f"column {column} of {db}.{table} has type {column_type}, which this version of "
        "cdc-ingest cannot read exactly, so nothing of the table was captured (a guessed "
        "value would be a wrong row). Fix: leave the table out (source.tables.exclude: "
        f"{db}.{table}), or change the column to a type capture knows "
        "(docs/changelog-format.md lists them), then start again.")


class QueryRefused(ValueError):
    """MySQL refused a query (its reason is the message)."""


class Catalog:
    """Cached facts about the server and its tables."""

    def __init__(
        self,
        settings: ConnectionSettings,
        key_columns: KeyColumns | None = None,
        retries: int = 3,
    ) -> None:
        self._settings = settings
        self._key_columns: KeyColumns = key_columns or (lambda db, table: None)
        self._conn = connect(settings, retries)
        self._tables: dict[tuple[str, str], TableFacts] = {}
        self.version: str = str(self._one("SELECT VERSION()")[0])
        self.flavor = Flavor.of(self.version)
        self.is_mariadb = self.flavor.mariadb

    def close(self) -> None:
        self._conn.close()

    def server_identity(self) -> str:
        """Which server this is, the same after a restart, another for a replica: MySQL's
        server_uuid, MariaDB's server_id (unique in a replication topology)."""
        variable = "server_id" if self.is_mariadb else "server_uuid"
        return f"{variable}={self._one(f'SELECT @@{variable}')[0]}"

    def _one(self, sql: str, args: Any = None) -> tuple[Any, ...]:
        rows = self._all(sql, args)
        return rows[0] if rows else ()

    def select(self, sql: str) -> list[tuple[Any, ...]]:
        """The rows of a query built elsewhere (a snapshot's filter); :class:`QueryRefused`
        with MySQL's reason when MySQL refuses it (a server gone is what it is elsewhere)."""
        try:
            return self._all(sql)
        except pymysql.err.OperationalError as exc:
            if went_away(exc):
                raise
            raise QueryRefused(exc.args[1] if len(exc.args) > 1 else str(exc)) from exc
        except pymysql.MySQLError as exc:
            raise QueryRefused(exc.args[1] if len(exc.args) > 1 else str(exc)) from exc

    def _all(self, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        try:
            return query_rows(self._conn, sql, args)
        except pymysql.err.OperationalError as exc:
            if not went_away(exc):
                raise
            raise unavailable(f"a query to MySQL at {self._settings.host}:"
                              f"{self._settings.port}", exc) from exc

    def table_facts(self, db: str, table: str) -> TableFacts:
        """A table's :class:`TableFacts`, cached. Raises :func:`unknown_type_error` for a
        column of a type not in :data:`~cdc_ingest.mysql.columns.KNOWN_TYPES`."""
        hit = self._tables.get((db, table))
        if hit is None:
            configured = self._key_columns(db, table)
            if configured:
                self.check_unique(db, table, tuple(configured))
            keys = tuple(configured) if configured else self.primary_key(db, table)
            booleans, kinds = self._column_facts(db, table)
            hit = TableFacts(booleans, keys, bool(configured), kinds)
            self._tables[(db, table)] = hit
        return hit

    def columns(self, db: str, table: str) -> list[Column]:
        """The table's columns as ``information_schema`` describes them now."""
        return [Column.from_row(r, self.is_mariadb)
                for r in self._all(COLUMNS_QUERY, (db, table))]

    def unknown_types(self, captured: Callable[[str, str], bool]
                      ) -> list[tuple[str, str, str, str]]:
        """(db, table, column, type) of every column of a captured table whose type is not
        in :data:`~cdc_ingest.mysql.columns.KNOWN_TYPES`, in one query."""
        rows = self._all(
            "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, DATA_TYPE, COLUMN_TYPE FROM "
            "information_schema.COLUMNS WHERE TABLE_SCHEMA NOT IN "
            "('mysql','information_schema','performance_schema','sys') "
            "ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION")
        return [(str(db), str(table), as_text(column), as_text(column_type))
                for db, table, column, data_type, column_type in rows
                if as_text(data_type).lower() not in KNOWN_TYPES and captured(str(db), str(table))]

    def forget(self, db: str, table: str) -> None:
        self._tables.pop((db, table), None)

    def _column_facts(self, db: str, table: str) -> tuple[frozenset[str], Mapping[str, str]]:
        booleans, kinds = set(), {}
        for column in self.columns(db, table):
            if column.data_type not in KNOWN_TYPES:
                raise unknown_type_error(db, table, column.name, column.column_type)
            if column.column_type.lower() in ("tinyint(1)", "tinyint(1) unsigned"):
                booleans.add(column.name)
            if column.data_type in CATALOG_KINDS:
                kinds[column.name] = column.data_type
        return frozenset(booleans), MappingProxyType(kinds)

    def primary_key(self, db: str, table: str) -> tuple[str, ...]:
        rows = self._all(
            "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE "
            "TABLE_SCHEMA=%s AND TABLE_NAME=%s AND CONSTRAINT_NAME='PRIMARY' "
            "ORDER BY ORDINAL_POSITION",
            (db, table),
        )
        return tuple(r[0] for r in rows)

    def unique_keys(self, db: str, table: str) -> list[tuple[str, ...]]:
        """The columns of each unique index (the primary key among them)."""
        rows = self._all(
            "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS WHERE "
            "TABLE_SCHEMA=%s AND TABLE_NAME=%s AND NON_UNIQUE=0 "
            "ORDER BY INDEX_NAME, SEQ_IN_INDEX", (db, table))
        indexes: dict[str, list[str]] = {}
        for index, column in rows:
            indexes.setdefault(str(index), []).append(str(column))
        return [tuple(columns) for columns in indexes.values()]

    def check_unique(self, db: str, table: str, keys: tuple[str, ...]) -> None:
        """Configured key columns (transform primary-keys, source.tables.key-columns) must
        contain a unique key of a table that has one: else two rows could share a message
        key, and one would overwrite or delete the other in a compacted topic."""
        unique = self.unique_keys(db, table)
        if not unique or any(set(index) <= set(keys) for index in unique):
            return
        shown = " or ".join("(" + ", ".join(index) + ")" for index in unique)
        raise SourceError(
            f"the configured key ({', '.join(keys)}) of {db}.{table} does not contain a "
            f"unique key of the table {shown}, so two rows could share a message key and "
            "one would overwrite or delete the other in the sink topics. Fix: add a UNIQUE "
            f"index on ({', '.join(keys)}), or include {shown} in the transform's "
            "primary-keys (or source.tables.key-columns).")

    def exists(self, db: str, table: str) -> bool:
        """Whether the table exists now."""
        return bool(self._all("SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA=%s "
                              "AND TABLE_NAME=%s", (db, table)))

    def tables(self) -> list[tuple[str, str]]:
        return [
            (r[0], r[1])
            for r in self._all(
                "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE "
                "TABLE_TYPE='BASE TABLE' AND TABLE_SCHEMA NOT IN "
                "('mysql','information_schema','performance_schema','sys')"
            )
        ]

    def variable(self, name: str) -> str | None:
        row = self._one("SHOW GLOBAL VARIABLES LIKE %s", (name,))
        return str(row[1]) if row else None

    def head(self) -> tuple[str, int]:
        row = self.flavor.binlog_status(self._all)
        if not row:
            raise SourceError(
                "the server has no binary log (log_bin is OFF). Fix: add log_bin=mysql-bin and "
                "server_id=1 to the [mysqld] section of my.cnf and restart MySQL."
            )
        return str(row[0]), int(row[1])

    def gtid_now(self) -> str:
        """The server's binlog GTID state."""
        return self.flavor.gtid_state(self._all)

    def binlog_files(self) -> list[str]:
        return [str(r[0]) for r in self._all("SHOW BINARY LOGS")]

    def latest(self) -> Position:
        """The position of the binlog head: changes from now on."""
        file, pos = self.head()
        gtid = self.flavor.gtid_state(self._all)
        return Position(gtid_set=gtid, file=file, pos=pos, ts_ms=int(time.time() * 1000))

    def snapshot_start(self) -> Position:
        """Where the binlog phase after a snapshot starts: a point every transaction before
        which is visible to every read view opened later (so to every chunk's SELECT).

        MariaDB: the binlog position of a consistent-snapshot read view and its GTID state;
        ``@@gtid_binlog_pos`` would not do, since a transaction is in the binlog before its
        engine commit. MySQL: :meth:`latest`, which resumes by the executed GTID set, and
        that set takes a transaction only after its engine commit."""
        if not self.is_mariadb:
            return self.latest()
        with self.flavor.read_view(self._conn) as (_, view):
            pass
        assert view is not None
        file, pos = view
        try:
            gtid = self.flavor.gtid_at(self._all, file, pos)
        except LookupError:
            raise SourceError(f"the server does not know the GTID state at binlog {file}:{pos}"
                              " (BINLOG_GTID_POS returned NULL), so the snapshot has no exact "
                              "start. Fix: check that binlog file is still on the server and "
                              "retry.") from None
        return Position(gtid_set=gtid, file=file, pos=pos, ts_ms=int(time.time() * 1000))

    def earliest(self) -> Position:
        first = self.binlog_files()[0]
        return self.at(first, 4)

    def at(self, file: str, pos: int) -> Position:
        """The position at binlog ``file``:``pos`` (a GTID state where the flavour has one)."""
        try:
            gtid = self.flavor.gtid_at(self._all, file, pos)
        except LookupError:
            raise SourceError(
                f"binlog position {file}:{pos} is not the start of an event on this server "
                "(or the file is gone). Fix: take a file and position from SHOW BINARY LOGS "
                "/ SHOW MASTER STATUS or a binlog dump."
            ) from None
        return Position(gtid_set=gtid, file=file, pos=pos)

    def purged_before(self, position: Position) -> str | None:
        """Why ``position`` cannot be served any more, or None if the server still has it."""
        files = self.binlog_files()
        if position.gtid_set:
            return self.flavor.gtid_purged(self._all, files[0], position.gtid_set)
        if position.file and position.file not in files:
            if position.file < files[0]:
                return f"binlog file {position.file} was purged (oldest is {files[0]})"
            return f"binlog file {position.file} does not exist on this server"
        return None
