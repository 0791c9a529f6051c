"""What differs between MariaDB and MySQL servers, in one place.

Callers ask the :class:`Flavor` of their server instead of testing ``is_mariadb`` themselves.
Each method takes ``query(sql, args) -> rows`` over the caller's connection.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pymysql

from cdc_ingest.mysql.binlog_gtids import mysql_gtid_at
from cdc_ingest.mysql.connection import revive
from cdc_ingest.mysql.gtid import lacking, mariadb_gtid_list

Query = Callable[..., list[tuple[Any, ...]]]


def _one(query: Query, sql: str, args: Any = None) -> tuple[Any, ...]:
    rows = query(sql, args)
    return rows[0] if rows else ()


@dataclass(frozen=True)
class Flavor:
    """The server's flavour, from ``SELECT VERSION()``."""

    mariadb: bool

    @classmethod
    def of(cls, version: str) -> Flavor:
        return cls(mariadb="mariadb" in version.lower())

    def binlog_status(self, query: Query) -> tuple[Any, ...]:
        """``SHOW MASTER STATUS`` (file, position, ..., MySQL: executed GTID set)."""
        try:
            return _one(query, "SHOW MASTER STATUS")
        except pymysql.err.ProgrammingError:
            # MySQL 8.4 removed SHOW MASTER STATUS in favour of SHOW BINARY LOG STATUS.
            return _one(query, "SHOW BINARY LOG STATUS")

    def gtid_state(self, query: Query) -> str:
        """The GTID set of everything in the binlog now (MariaDB ``@@gtid_binlog_pos``,
        MySQL the executed set of the binlog status); "" when there is none."""
        if self.mariadb:
            return str(_one(query, "SELECT @@GLOBAL.gtid_binlog_pos")[0] or "")
        row = self.binlog_status(query)
        return str(row[4]).replace("\n", "") if len(row) > 4 and row[4] else ""

    @contextmanager
    def read_view(self, conn: pymysql.Connection[Any]
                  ) -> Iterator[tuple[Query, tuple[str, int] | None]]:
        """A consistent-snapshot (REPEATABLE READ) transaction on ``conn``, committed on the
        way out: yields a query over it and, on MariaDB, the binlog file and position of its
        read view (``Binlog_snapshot_file/position``: the view holds exactly the transactions
        before it); MySQL does not tell (None). The connection is checked once, before: a
        reconnect inside would silently read outside the view."""
        revive(conn)

        def query(sql: str, args: Any = None) -> list[tuple[Any, ...]]:
            with conn.cursor() as cur:
                cur.execute(sql, args)
                return list(cur.fetchall())

        query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        try:
            query("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            yield query, self._view_position(query) if self.mariadb else None
        finally:
            if conn.open:  # a read that failed may have closed it: its transaction is gone
                query("COMMIT")

    @staticmethod
    def _view_position(query: Query) -> tuple[str, int]:
        status = {str(k).lower(): v for k, v in
                  query("SHOW SESSION STATUS LIKE 'binlog_snapshot_%'")}
        file, pos = status.get("binlog_snapshot_file"), status.get("binlog_snapshot_position")
        if not file or pos is None:
            raise LookupError("the server reported no binlog position for the read view "
                              "(Binlog_snapshot_file/position)")
        return str(file), int(pos)

    def gtid_at(self, query: Query, file: str, pos: int) -> str | None:
        """The GTID state at binlog ``file``:``pos`` (MariaDB: ``BINLOG_GTID_POS``; MySQL:
        mysql/binlog_gtids.py). Raises ``LookupError`` when the server does not know the
        position."""
        if not self.mariadb:
            return mysql_gtid_at(query, file, pos)
        value = _one(query, "SELECT BINLOG_GTID_POS(%s, %s)", (file, pos))[0]
        if value is None:
            raise LookupError(f"{file}:{pos}")
        return str(value)

    def gtid_purged(self, query: Query, oldest_file: str, gtid_set: str) -> str | None:
        """Why the server cannot send what follows ``gtid_set``, or None. MariaDB: a
        domain's sequence older than the oldest binlog file's start. MySQL: a purged
        transaction ``gtid_set`` lacks (its binlog is gone), or one ``gtid_set`` has that the
        server never executed (another server's history, or RESET BINARY LOGS AND GTIDS)."""
        if not self.mariadb:
            purged = str(_one(query, "SELECT @@GLOBAL.gtid_purged")[0] or "")
            executed = str(_one(query, "SELECT @@GLOBAL.gtid_executed")[0] or "")
            gone = lacking(gtid_set, purged)
            if gone:
                return (f"GTIDs {gone[:200]} were purged from the binlog but are not in the "
                        f"position's set {gtid_set[:200]}")
            unknown = lacking(executed, gtid_set)
            if unknown:
                return (f"the position has GTIDs {unknown[:200]} this server never executed "
                        "(its binlog and GTIDs were reset, or it is another server)")
            return None
        oldest = _one(query, "SELECT BINLOG_GTID_POS(%s, 4)", (oldest_file,))[0] or ""
        wanted = mariadb_gtid_list(gtid_set)
        for domain, (_, seq) in mariadb_gtid_list(str(oldest)).items():
            if domain in wanted and wanted[domain][1] < seq:
                return (f"GTID {gtid_set} is older than the oldest binlog {oldest_file} "
                        f"(which starts after {oldest})")
        return None

