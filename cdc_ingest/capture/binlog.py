"""The binlog as a replica sees it, in our own event types.

This is the only module that imports python-mysql-replication. The library handles the
replication protocol and event framing; row images are decoded by our compiled per-table
decoders (:mod:`cdc_ingest.capture.decoder`), straight from the event buffer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pymysql
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import (
    GtidEvent,
    HeartbeatLogEvent,
    MariadbGtidEvent,
    NotImplementedEvent,
    QueryEvent,
    RotateEvent,
    XidEvent,
)
from pymysqlreplication.row_event import (
    DeleteRowsEvent,
    PartialUpdateRowsEvent,
    TableMapEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)

from cdc_ingest.capture.binlog_errors import BinlogDisconnected, stream_error
from cdc_ingest.capture.binlog_library import teach_the_library
from cdc_ingest.capture.binlog_payload import TRANSACTION_PAYLOAD_EVENT, PayloadUnpacker
from cdc_ingest.capture.binlog_schema import UnsupportedColumn
from cdc_ingest.capture.decoder import (
    DELETE,
    INSERT,
    UPDATE,
    capture_json_text,
    failing_column,
)
from cdc_ingest.capture.events import BinlogEvent, Ddl, Heartbeat, Rows, TxBegin, TxCommit
from cdc_ingest.capture.partial_rows import PartialJsonError, PartialRows
from cdc_ingest.capture.socket_reader import Idle, SocketReader
from cdc_ingest.capture.tablemap import CatalogLookup, SchemaCache
from cdc_ingest.capture.unsupported import partial_json_failed, unsupported_event
from cdc_ingest.errors import SourceError
from cdc_ingest.model import Position
from cdc_ingest.mysql import ConnectionSettings
from cdc_ingest.mysql.gtid_wire import parse_tagged_gtid_event
from cdc_ingest.mysql.tls import open_connection

log = logging.getLogger(__name__)

GTID_TAGGED_LOG_EVENT = 42  # SET gtid_next='AUTOMATIC:<tag>' (MySQL 8.3+)

TableFilter = Callable[[str, str], bool]


@dataclass(frozen=True)
class Replica:
    """Capture as a replica of the server: how it connects, its server id (unique among the
    server's replicas), whether the server is MariaDB, and the heartbeat period it asks for."""

    settings: ConnectionSettings
    server_id: int
    mariadb: bool
    heartbeat_s: float


teach_the_library()
# Its one warning announces reconnecting a broken stream, which capture refuses it
# (BinlogReader._connect) and reports itself.
logging.getLogger("pymysqlreplication").setLevel(logging.ERROR)

_ROW_KINDS = {WriteRowsEvent: "I", UpdateRowsEvent: "U", DeleteRowsEvent: "D"}
_KIND_CODES = {"I": INSERT, "U": UPDATE, "D": DELETE}


class BinlogReader:
    """Iterates binlog events from a position, decoding the rows of captured tables only."""

    def __init__(self, replica: Replica, start: Position, captured: TableFilter,
                 catalog: CatalogLookup, *, stopping: Callable[[], bool] | None = None,
                 idle: Idle | None = None) -> None:
        """The rows of the tables ``captured`` says, described by ``catalog``. While waiting
        for the server, ``idle`` is called (capture has read all it sent) and ``stopping``
        asked; when it says so, iterating :meth:`events` raises
        :class:`~cdc_ingest.capture.socket_reader.ReadStopped`."""
        self._captured = captured
        self._stopping = stopping
        self._idle = idle
        self._server_id = replica.server_id
        self._explicit_tx = False
        self._gtid: str | None = None  # of the transaction being read, for error messages
        # The end of the last event that told its position. MariaDB 11.4+ writes the events
        # inside a transaction with end_log_pos 0 (binlog_legacy_event_pos=OFF, the default):
        # their rows take this position, inside their transaction (after its GTID event).
        self._known_pos = start.pos or 0
        json_text = capture_json_text()
        self._schemas = SchemaCache(catalog, json_text)
        self._partial = PartialRows(json_text)
        self._start = start
        self._file = start.file or ""
        self.received = False  # whether the server sent anything (the connection worked)
        self._streams = 0
        kwargs: dict[str, Any] = {}
        if start.gtid_set is not None and (start.gtid_set or not start.file):
            kwargs["auto_position"] = start.gtid_set
        else:
            kwargs["log_file"] = start.file
            kwargs["log_pos"] = start.pos
            kwargs["resume_stream"] = True
        self._stream = BinLogStreamReader(
            connection_settings=replica.settings.as_pymysql(),
            server_id=replica.server_id,
            blocking=True,
            is_mariadb=replica.mariadb,
            slave_heartbeat=replica.heartbeat_s,
            only_events=[
                MariadbGtidEvent,
                GtidEvent,
                QueryEvent,
                XidEvent,
                RotateEvent,
                HeartbeatLogEvent,
                TableMapEvent,
                WriteRowsEvent,
                UpdateRowsEvent,
                DeleteRowsEvent,
                # never skipped without a word: see cdc_ingest.capture.unsupported
                PartialUpdateRowsEvent,
                NotImplementedEvent,
            ],
            filter_non_implemented_events=False,
            enable_logging=False,
            pymysql_wrapper=self._connect,
            **kwargs,
        )
        self._payloads = PayloadUnpacker(self._stream)

    def close(self) -> None:
        self._stream.close()

    def _connect(self, **settings: Any) -> pymysql.Connection:
        """The library's connections. It reconnects a broken binlog stream on its own, from
        the transaction after the last one it sent whole: the rows of the transaction
        capture is inside would come again. So a second stream connection is refused, and
        capture reconnects from its committed position (cdc_ingest.capture.binlog_phase)."""
        if settings.get("db") is None:  # the stream (the library's control one names a db)
            self._streams += 1
            if self._streams > 1:
                raise BinlogDisconnected("the binlog connection to MySQL broke (the server "
                                         "closed it or went away)")
            conn = open_connection(**settings)
            # Nothing is unread after the handshake: its file object can go.
            conn._rfile.close()
            conn._rfile = SocketReader(conn._sock, stopping=self._stopping, idle=self._idle)
            return conn
        return open_connection(**settings)

    def events(self) -> Iterator[BinlogEvent]:
        try:
            for ev in self._stream:
                self.received = True
                if (isinstance(ev, NotImplementedEvent)
                        and ev.packet.event_type == TRANSACTION_PAYLOAD_EVENT):
                    for inner in self._payloads.events(ev):  # a compressed transaction
                        out = self._translate(inner)
                        if out is not None:
                            yield out
                    continue
                out = self._translate(ev)
                if out is not None:
                    yield out
        except pymysql.err.OperationalError as exc:
            raise stream_error(exc, self._start, self._server_id) from exc
        # The library ends the iteration when the server ends the stream (EOF): a shutdown.
        raise BinlogDisconnected("MySQL ended the binlog stream (it is shutting down)")

    def _translate(self, ev: Any) -> BinlogEvent | None:
        if ev.packet.log_pos:
            self._known_pos = ev.packet.log_pos
        kind = _ROW_KINDS.get(type(ev))
        if kind is not None:
            return self._rows(ev, kind)
        if isinstance(ev, PartialUpdateRowsEvent):
            return self._rows(ev, "U", partial=True)
        if isinstance(ev, NotImplementedEvent):
            if ev.packet.event_type == GTID_TAGGED_LOG_EVENT:
                return self._tagged_gtid(ev)
            self._refuse(ev)
            return None
        where_pos = ev.packet.log_pos
        if isinstance(ev, (MariadbGtidEvent, GtidEvent)):
            # MariaDB has no BEGIN event: a GTID without FL_STANDALONE opens a transaction
            # that only XID or COMMIT ends; a standalone one (DDL) ends with its statement.
            self._explicit_tx = isinstance(ev, MariadbGtidEvent) and not ev.flags & 1
            self._gtid = ev.gtid
            return TxBegin(ev.gtid, self._stream.log_file, where_pos - ev.packet.event_size,
                           ev.timestamp)
        if isinstance(ev, XidEvent):
            self._explicit_tx = False
            return TxCommit(ev.timestamp, self._stream.log_file, where_pos)
        if isinstance(ev, QueryEvent):
            sql = ev.query.strip()
            upper = sql[:8].upper()
            if upper.startswith(("BEGIN", "XA START")):
                self._explicit_tx = True
                return None
            if upper.startswith(("COMMIT", "ROLLBACK", "XA COMMI", "XA ROLLB")):
                self._explicit_tx = False
                return TxCommit(ev.timestamp, self._stream.log_file, where_pos)
            db = ev.schema.decode() if isinstance(ev.schema, bytes) else str(ev.schema or "")
            return Ddl(db, sql, ev.timestamp, self._stream.log_file, where_pos,
                       ends_tx=not self._explicit_tx)
        if isinstance(ev, (HeartbeatLogEvent, RotateEvent)):
            return Heartbeat(self._stream.log_file, self._stream.log_pos)
        return None

    def _tagged_gtid(self, ev: Any) -> TxBegin:
        """A GTID_TAGGED_LOG_EVENT (MySQL 8.3+, ``gtid_next='AUTOMATIC:<tag>'``)."""
        raw: bytes = ev.packet.packet._data
        where_pos = ev.packet.log_pos
        try:
            gtid = parse_tagged_gtid_event(raw[20:20 + ev.event_size]).gtid
        except ValueError as exc:
            raise SourceError(
                f"cannot read the tagged GTID event at binlog {self._stream.log_file}:"
                f"{where_pos}: {exc}. Fix: report this with the binlog around that position."
            ) from exc
        self._explicit_tx = False
        self._gtid = gtid
        return TxBegin(gtid, self._stream.log_file, where_pos - ev.packet.event_size,
                       ev.timestamp)

    def _refuse(self, ev: Any) -> None:
        """Raise for an event capture cannot follow (MariaDB's compressed events); other
        unknown events pass."""
        where = f"{self._stream.log_file}:{self._known_pos}"
        error = unsupported_event(ev.packet.event_type, where, self._gtid)
        if error is not None:
            raise error

    def _rows(self, ev: Any, kind: str, partial: bool = False) -> Rows | None:
        if not self._captured(ev.schema, ev.table):
            return None
        where = f"{self._stream.log_file}:{self._known_pos}"
        try:
            schema, decode = self._schemas.resolve(ev.table_map[ev.table_id])
        except UnsupportedColumn as exc:
            raise SourceError(
                f"cannot capture {ev.schema}.{ev.table} at binlog {where}"
                + (f" (GTID {self._gtid})" if self._gtid else "")
                + f": column {exc.column_name}: {exc}. Nothing of this table from here on "
                "was captured. Fix: leave the table out (source.tables.exclude), or change the "
                "column to a type capture knows (docs/changelog-format.md), then start again."
            ) from exc
        present = (1 << ev.number_of_columns) - 1
        bitmaps = [ev.columns_present_bitmap]
        if kind == "U":
            bitmaps.append(ev.columns_present_bitmap2)
        for bitmap in bitmaps:
            if int.from_bytes(bitmap, "little") & present != present:
                raise SourceError(
                    f"{schema.db}.{schema.table} at {where}: the row image lacks columns, so "
                    "binlog_row_image is not FULL. Fix: SET GLOBAL binlog_row_image=FULL "
                    "(and binlog_row_image=FULL in my.cnf), then restart capture."
                )
        pkt = ev.packet.packet
        raw: bytes = pkt._data
        off: int = pkt._position
        end = off + (ev.event_size - ev.packet.read_bytes)
        try:
            if partial:
                rows = self._partial.decode(schema, raw, off, end)
            else:
                rows = decode(raw, off, end, _KIND_CODES[kind])
        except PartialJsonError as exc:
            raise partial_json_failed(schema.db, schema.table, exc.column, where, self._gtid,
                                      exc.cause) from exc
        except Exception as exc:
            column = failing_column(schema, exc)
            # the compiled decoder wraps what went wrong in a RowDecodeError naming the column
            wrapped = getattr(exc, "column", None) is not None and exc.__cause__ is not None
            cause = exc.__cause__ if wrapped else exc
            raise SourceError(
                f"cannot represent a value of {schema.db}.{schema.table}.{column} at binlog "
                f"{where}: {cause!r}. Nothing after it was captured; fix the value or the "
                "column definition, or exclude the table, then restart capture."
            ) from exc
        return Rows(kind, schema, rows, ev.timestamp, where, self._stream.log_file,
                    self._known_pos)
