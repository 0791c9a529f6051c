"""A SELECT's row packets handed on as the socket's raw bytes, for a compiled parser.

PyMySQL sends the query and reads the result set's column definitions; the row packets
that follow go, as they arrive, to a parser (``cdc_ingest.capture.snapshot._textrows``)
instead of PyMySQL's per-field Python. The parser checks the packets' sequence numbers as
PyMySQL does and stops at the result set's EOF packet, after which the server sends nothing
until the next command, so no byte of anything else is ever read here. The connection is
left as PyMySQL leaves it after the last row: the next query works as usual.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from typing import Any, Protocol

import pymysql
import pymysql.cursors
from pymysql.constants import CR
from pymysql.protocol import EOFPacketWrapper, MysqlPacket

from cdc_ingest.mysql.connection import reading

READ_SIZE = 1 << 18  # bytes asked of the socket at a time
MORE, END, ERROR = 0, 1, 2  # what a parser's feed returns


class PacketParser(Protocol):
    seq: int  # the sequence number of the next packet
    last: bytes | None  # the EOF or ERR packet that ended the result set

    def feed(self, data: bytes, /) -> int: ...


# (PyMySQL's (encoding, converter) per column, the first row packet's sequence number)
# -> the parser
ParserFactory = Callable[[list[tuple[str | None, Any]], int], PacketParser]


def stream_packets(conn: pymysql.Connection, sql: str, args: Any, what: str,
                   parser_for: ParserFactory) -> PacketParser | None:
    """Run the SELECT ``sql`` and feed its row packets to the parser ``parser_for`` makes
    from the result's columns; returns it (None: the statement returned no result set).
    A failure names ``what`` was read, as :func:`cdc_ingest.mysql.stream_rows` does."""
    with reading(what):
        cursor = conn.cursor(pymysql.cursors.SSCursor)
        try:
            cursor.execute(sql, args)
            result = cursor._result  # the unbuffered result PyMySQL opened
            if result is None or not result.unbuffered_active:
                return None
            parser = parser_for(list(result.converters), conn._next_seq_id)
            try:
                state = MORE
                while state == MORE:
                    state = parser.feed(_receive(conn))
            except BaseException as exc:  # an interrupt too: the stream is cut mid-packet
                result.unbuffered_active = False
                conn._force_close()  # where in the stream it is is unknown now
                if isinstance(exc, pymysql.MySQLError) or not isinstance(exc, Exception):
                    raise
                raise pymysql.err.InternalError(f"{type(exc).__name__}: {exc}") from exc
            conn._next_seq_id = parser.seq
            result.unbuffered_active = False
            result.connection = None
            if state == ERROR:
                MysqlPacket(parser.last, conn.encoding).raise_for_error()
            eof = EOFPacketWrapper(MysqlPacket(parser.last, conn.encoding))
            result.warning_count, result.has_next = eof.warning_count, eof.has_next
            return parser
        finally:
            cursor.close()


def _receive(conn: pymysql.Connection) -> bytes:
    """The next bytes the server sent (what PyMySQL's buffer holds first), as PyMySQL's own
    reads fail: a lost connection is closed and raised as ``CR_SERVER_LOST``."""
    while True:
        try:
            data: bytes = conn._rfile.read1(READ_SIZE)
        except OSError as exc:
            if exc.errno == errno.EINTR:
                continue
            conn._force_close()
            raise pymysql.err.OperationalError(
                CR.CR_SERVER_LOST, f"Lost connection to MySQL server during query ({exc})"
            ) from exc
        if not data:
            conn._force_close()
            raise pymysql.err.OperationalError(
                CR.CR_SERVER_LOST, "Lost connection to MySQL server during query")
        return data
