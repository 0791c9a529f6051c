"""Connection settings, connecting with retries, and streaming a SELECT's rows."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pymysql
import pymysql.converters
from pymysql.constants import FIELD_TYPE

from cdc_ingest.errors import SourceError

if TYPE_CHECKING:
    from cdc_ingest.config import MySqlSourceDef


@dataclass(frozen=True)
class ConnectionSettings:
    host: str
    port: int
    user: str
    password: str
    connect_timeout: float = 30.0

    def as_pymysql(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self.password,
            "connect_timeout": self.connect_timeout,
            "charset": "utf8mb4",
        }

    def __repr__(self) -> str:
        return f"ConnectionSettings(host={self.host!r}, port={self.port}, user={self.user!r})"


def connection_settings(source: MySqlSourceDef) -> ConnectionSettings:
    """The settings of the pipeline's ``source`` block."""
    return ConnectionSettings(
        host=source.hostname,
        port=source.port,
        user=source.username,
        password=source.password.get_secret_value(),
        connect_timeout=source.connect_timeout.total_seconds(),
    )


# What a connection with ``server_text`` leaves as the server's text instead of datetime or
# Decimal objects: that text already has the column's exact fractional digits and scale.
SERVER_TEXT = (FIELD_TYPE.DATETIME, FIELD_TYPE.TIMESTAMP, FIELD_TYPE.DATE,
               FIELD_TYPE.NEWDECIMAL, FIELD_TYPE.DECIMAL)


def connect(settings: ConnectionSettings, retries: int = 3,
            server_text: bool = False) -> pymysql.Connection:
    """A connection (autocommit), retried ``retries`` times with backoff; the error says how to
    fix it. ``server_text``: values of the :data:`SERVER_TEXT` types arrive as text."""
    options: dict[str, Any] = {}
    if server_text:
        conv = dict(pymysql.converters.conversions)
        for field_type in SERVER_TEXT:
            conv.pop(field_type, None)
        options["conv"] = conv
    last: Exception | None = None
    for attempt in range(retries + 1):
        try:
            return pymysql.connect(**settings.as_pymysql(), autocommit=True, **options)
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


def try_query(conn: pymysql.Connection, sql: str,
              args: Any = None) -> list[tuple[Any, ...]] | None:
    """The rows of a statement the server may refuse (None then), such as ``DEFAULT(col)``
    of a column without a default."""
    try:
        with conn.cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())
    except pymysql.MySQLError:
        return None
