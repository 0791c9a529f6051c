"""Connection settings, connecting with retries, and streaming a SELECT's rows."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pymysql
import pymysql.converters
from pymysql.constants import FIELD_TYPE

from cdc_ingest.errors import SourceError, SourceUnavailable
from cdc_ingest.mysql.tls import TlsSettings, open_connection, pymysql_options, tls_failure

if TYPE_CHECKING:
    from cdc_ingest.config import MySqlSourceDef


@dataclass(frozen=True)
class ConnectionSettings:
    host: str
    port: int
    user: str
    password: str
    connect_timeout: float = 30.0
    tls: TlsSettings = field(default_factory=TlsSettings)

    def as_pymysql(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self.password,
            "connect_timeout": self.connect_timeout,
            "charset": "utf8mb4",
            **pymysql_options(self.tls),
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
        tls=TlsSettings.from_properties(source.jdbc_properties),
    )


# What a connection with ``server_text`` leaves as the server's text instead of datetime or
# Decimal objects: that text already has the column's exact fractional digits and scale.
SERVER_TEXT = (FIELD_TYPE.DATETIME, FIELD_TYPE.TIMESTAMP, FIELD_TYPE.DATE,
               FIELD_TYPE.NEWDECIMAL, FIELD_TYPE.DECIMAL)


# "The server went away": the client's errors (can't connect, gone, lost, lost at
# handshake) and the server's own for a connection it ends on its way down or out: shutdown in
# progress (1053: a query that arrives while the server stops, seen under `docker compose stop
# mysql`), MariaDB's connection killed (1927), MySQL's disconnect after inactivity (4031).
CONNECTION_LOST = frozenset({2003, 2006, 2013, 2055, 1053, 1927, 4031})
# Errors of a login the server refused: retrying, or restarting capture, cannot help.
LOGIN_REFUSED = frozenset({1044, 1045, 1698, 1251, 2059})


def connect(settings: ConnectionSettings, retries: int = 3,
            server_text: bool = False) -> pymysql.Connection:
    """A connection (autocommit), retried ``retries`` times with backoff; the error says how to
    fix it: :class:`SourceError` when the server refused the login, else
    :class:`SourceUnavailable` (down, restarting, unreachable: it may pass by itself).
    ``server_text``: values of the :data:`SERVER_TEXT` types arrive as text."""
    options: dict[str, Any] = {}
    if server_text:
        conv = dict(pymysql.converters.conversions)
        for field_type in SERVER_TEXT:
            conv.pop(field_type, None)
        options["conv"] = conv
    last: Exception | None = None
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(retry_delay(attempt))
        try:
            return open_connection(**settings.as_pymysql(), autocommit=True, **options)
        except pymysql.err.OperationalError as exc:
            last = exc
            refused_tls = tls_failure(exc)
            if refused_tls is not None:
                raise SourceError(f"TLS to MySQL at {settings.host}:{settings.port} (sslMode "
                                  f"{settings.tls.mode}) failed: {refused_tls}") from exc
            if (exc.args[0] if exc.args else 0) in LOGIN_REFUSED:
                raise SourceError(
                    f"MySQL at {settings.host}:{settings.port} refused the login of "
                    f"{settings.user!r}: {_reason(exc)}. Fix: check source.username and "
                    "source.password, and that the user may connect from this host."
                ) from exc
    raise SourceUnavailable(
        f"cannot connect to MySQL at {settings.host}:{settings.port} as {settings.user!r} "
        f"({retries + 1} attempt{'s' if retries else ''}, connect.max-retries: {retries}): "
        f"{_reason(last)}. Fix: check that the server is up and reachable from this host "
        "(source.hostname, source.port); `cdc-ingest start` tries again by itself."
    ) from last


def went_away(exc: BaseException) -> bool:
    """Whether ``exc`` (a pymysql error) says the server is gone (down, restarting,
    unreachable)."""
    return bool(exc.args) and exc.args[0] in CONNECTION_LOST


def unavailable(what: str, exc: BaseException) -> SourceUnavailable:
    """The error for ``what`` failing because the server went away (:func:`went_away`)."""
    return SourceUnavailable(f"{what} failed: MySQL went away ({_reason(exc)}). Fix: check "
                             "that the server is up and reachable; `cdc-ingest start` tries "
                             "again by itself.")


def retry_delay(attempt: int) -> float:
    """Seconds to wait before retry ``attempt`` (1, 2, ...): 1, 2, 4, 8, then 10."""
    return float(min(2 ** (attempt - 1), 10))


def _reason(exc: BaseException | None) -> str:
    return str(exc.args[1] if exc is not None and len(exc.args) > 1 else exc)


def stream_rows(conn: pymysql.Connection, sql: str, args: Any, fetch: int,
                what: str) -> Iterator[tuple[Any, ...]]:
    """Rows of a SELECT streamed with a server-side cursor (a table may not fit in memory);
    a failure names ``what`` was read and how to fix it."""
    with reading(what):
        cursor = conn.cursor(pymysql.cursors.SSCursor)
        try:
            cursor.execute(sql, args)
            while batch := cursor.fetchmany(fetch):
                yield from batch
        finally:
            cursor.close()


@contextmanager
def reading(what: str) -> Iterator[None]:
    """A failed read of ``what`` as :class:`SourceUnavailable` (the server went away) or
    :class:`SourceError` with the fix."""
    try:
        yield
    except pymysql.MySQLError as exc:
        if went_away(exc):
            raise unavailable(f"reading {what}", exc) from exc
        raise SourceError(f"reading {what} failed: {exc}. Fix: check that the user may "
                          "SELECT it and that the server is reachable.") from exc


def query_rows(conn: pymysql.Connection, sql: str,
               args: Any = None) -> list[tuple[Any, ...]]:
    """The rows of a query; a connection the server dropped (or an earlier failure closed)
    is opened again once. Not asking first saves a round trip per query; not for a read
    view's queries, where a reconnect would silently read outside the view."""
    for attempt in (1, 2):
        try:
            with conn.cursor() as cur:
                cur.execute(sql, args)
                return list(cur.fetchall())
        except (pymysql.err.OperationalError, pymysql.err.InterfaceError) as exc:
            closed = isinstance(exc, pymysql.err.InterfaceError)
            if attempt == 2 or not (closed or went_away(exc)):
                raise
            revive(conn)
    raise AssertionError("unreachable")


def revive(conn: pymysql.Connection) -> None:
    """Make sure ``conn`` is open, reopening it (same settings, TLS included) when the server
    or the network closed it: PyMySQL's ``ping(reconnect=True)``, which it deprecates."""
    try:
        conn.ping()
    except pymysql.err.Error:
        conn.connect()


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
