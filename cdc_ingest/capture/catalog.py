"""What capture asks MySQL over a normal connection: flavor, positions, key columns."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import pymysql

from cdc_ingest.capture.binlog import ConnectionSettings
from cdc_ingest.errors import SourceError
from cdc_ingest.model import Position

log = logging.getLogger(__name__)

# (db, table) -> configured key columns of a table without a primary key, or None
KeyColumns = Callable[[str, str], tuple[str, ...] | None]


def connect(settings: ConnectionSettings, retries: int = 3) -> pymysql.Connection:
    """A connection, retried ``retries`` times with backoff; the error says how to fix it."""
    last: Exception | None = None
    for attempt in range(retries + 1):
        try:
            return pymysql.connect(**settings.as_pymysql(), autocommit=True)
        except pymysql.err.OperationalError as exc:
            last = exc
            code = exc.args[0] if exc.args else 0
            if code in (1044, 1045):  # access denied: retrying will not help
                break
            time.sleep(min(2**attempt, 10))
    raise SourceError(
        f"cannot connect to MySQL at {settings.host}:{settings.port} as {settings.user!r}: "
        f"{last.args[1] if last and len(last.args) > 1 else last}. Fix: check source.hostname, "
        "source.port, source.username and source.password, and that the server accepts "
        "connections from this host."
    ) from last


def stream_rows(conn: pymysql.Connection, sql: str, args: Any, fetch: int,
                what: str) -> Iterator[tuple[Any, ...]]:
    """Rows of a SELECT streamed with a server-side cursor (a table may not fit in memory);
    a failure names ``what`` was read and how to fix it."""
    cursor = conn.cursor(pymysql.cursors.SSCursor)
    try:
        cursor.execute(sql, args)
        while batch := cursor.fetchmany(fetch):
            yield from batch
    except pymysql.MySQLError as exc:
        raise SourceError(f"reading {what} failed: {exc}. Fix: check that the user may "
                          "SELECT it and that the server is reachable.") from exc
    finally:
        cursor.close()


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
        self._tables: dict[tuple[str, str], tuple[frozenset[str], tuple[str, ...]]] = {}
        self.version: str = str(self._one("SELECT VERSION()")[0])
        self.is_mariadb = "mariadb" in self.version.lower()

    def close(self) -> None:
        self._conn.close()

    def _one(self, sql: str, args: Any = None) -> tuple[Any, ...]:
        rows = self._all(sql, args)
        return rows[0] if rows else ()

    def _all(self, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        self._conn.ping(reconnect=True)
        with self._conn.cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())

    def table_facts(self, db: str, table: str) -> tuple[frozenset[str], tuple[str, ...]]:
        """(TINYINT(1) column names, key columns in key order) of a table, cached."""
        hit = self._tables.get((db, table))
        if hit is None:
            hit = (self._booleans(db, table), self._keys(db, table))
            self._tables[(db, table)] = hit
        return hit

    def forget(self, db: str, table: str) -> None:
        self._tables.pop((db, table), None)

    def _booleans(self, db: str, table: str) -> frozenset[str]:
        rows = self._all(
            "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA=%s "
            "AND TABLE_NAME=%s AND LOWER(COLUMN_TYPE) IN ('tinyint(1)', 'tinyint(1) unsigned')",
            (db, table),
        )
        return frozenset(r[0] for r in rows)

    def _keys(self, db: str, table: str) -> tuple[str, ...]:
        configured = self._key_columns(db, table)
        if configured:
            return configured
        return self.primary_key(db, table)

    def primary_key(self, db: str, table: str) -> tuple[str, ...]:
        rows = self._all(
            "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE "
            "TABLE_SCHEMA=%s AND TABLE_NAME=%s AND CONSTRAINT_NAME='PRIMARY' "
            "ORDER BY ORDINAL_POSITION",
            (db, table),
        )
        return tuple(r[0] for r in rows)

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

    def _binlog_status(self) -> tuple[Any, ...]:
        try:
            return self._one("SHOW MASTER STATUS")
        except pymysql.err.ProgrammingError:
            # MySQL 8.4 removed SHOW MASTER STATUS in favour of SHOW BINARY LOG STATUS.
            return self._one("SHOW BINARY LOG STATUS")

    def head(self) -> tuple[str, int]:
        row = self._binlog_status()
        if not row:
            raise SourceError(
                "the server has no binary log (log_bin is OFF). Fix: add log_bin=mysql-bin and "
                "server_id=1 to the [mysqld] section of my.cnf and restart MySQL."
            )
        return str(row[0]), int(row[1])

    def gtid_now(self) -> str:
        """The server's binlog GTID state (MariaDB ``@@gtid_binlog_pos``)."""
        return str(self._one("SELECT @@GLOBAL.gtid_binlog_pos")[0] or "")

    def binlog_files(self) -> list[str]:
        return [str(r[0]) for r in self._all("SHOW BINARY LOGS")]

    def latest(self) -> Position:
        """The position of the binlog head: changes from now on."""
        file, pos = self.head()
        if self.is_mariadb:
            gtid = str(self._one("SELECT @@GLOBAL.gtid_binlog_pos")[0] or "")
        else:
            row = self._binlog_status()
            gtid = str(row[4]).replace("\n", "") if len(row) > 4 and row[4] else ""
        return Position(gtid_set=gtid, file=file, pos=pos, ts_ms=int(time.time() * 1000))

    def earliest(self) -> Position:
        first = self.binlog_files()[0]
        return self.at(first, 4)

    def at(self, file: str, pos: int) -> Position:
        """The position at binlog ``file``:``pos`` (a GTID state on MariaDB when it has one)."""
        gtid: str | None = None
        if self.is_mariadb:
            value = self._one("SELECT BINLOG_GTID_POS(%s, %s)", (file, pos))[0]
            if value is None:
                raise SourceError(
                    f"binlog position {file}:{pos} is not the start of an event on this server "
                    "(or the file is gone). Fix: take a file and position from SHOW BINARY LOGS "
                    "/ SHOW MASTER STATUS or a binlog dump."
                )
            gtid = str(value)
        return Position(gtid_set=gtid, file=file, pos=pos)

    def purged_before(self, position: Position) -> str | None:
        """Why ``position`` cannot be served any more, or None if the server still has it."""
        files = self.binlog_files()
        if position.gtid_set and self.is_mariadb:
            oldest = self._one("SELECT BINLOG_GTID_POS(%s, 4)", (files[0], ))[0] or ""
            for domain, seq in _mariadb_seqs(str(oldest)).items():
                wanted = _mariadb_seqs(position.gtid_set).get(domain)
                if wanted is not None and wanted < seq:
                    return (
                        f"GTID {position.gtid_set} is older than the oldest binlog "
                        f"{files[0]} (which starts after {oldest})"
                    )
            return None
        if position.file and position.file not in files:
            if position.file < files[0]:
                return f"binlog file {position.file} was purged (oldest is {files[0]})"
            return f"binlog file {position.file} does not exist on this server"
        return None


def _mariadb_seqs(gtid_set: str) -> dict[int, int]:
    seqs: dict[int, int] = {}
    for part in filter(None, (p.strip() for p in gtid_set.split(","))):
        domain, _server, seq = part.split("-")
        seqs[int(domain)] = int(seq)
    return seqs
