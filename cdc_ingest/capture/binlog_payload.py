"""MySQL's compressed transactions (``binlog_transaction_compression=ON``, 8.0.20+).

MySQL writes such a transaction as its GTID event followed by one ``TRANSACTION_PAYLOAD``
event (type 40). Its body is a list of header fields, each ``type, length, value`` as packed
integers, ended by field type 0::

    1 payload size (compressed bytes that follow the header)
    2 compression type (0 zstd, 255 none)
    3 uncompressed size

then the payload: the transaction's own events (``BEGIN`` query, table maps, rows events,
``XID``), one after the other, each with the 19-byte common header, **without checksums** and
with ``log_pos`` 0. They are unpacked here, one event at a time (a large transaction is never
held decompressed in memory), and handed to python-mysql-replication's own event classes
exactly as if the server had sent them uncompressed, with ``log_pos`` set to the payload
event's: every event of the transaction sits at that one binlog position, and the ``XID``
ends there, so positions and resume work as for any other transaction.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any, BinaryIO

import zstandard
from pymysql.protocol import MysqlPacket
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.packet import BinLogPacketWrapper
from pymysqlreplication.row_event import TableMapEvent

from cdc_ingest.errors import SourceError
from cdc_ingest.mysql.packed import packed_int

TRANSACTION_PAYLOAD_EVENT = 40
_END, _PAYLOAD_SIZE, _COMPRESSION, _UNCOMPRESSED_SIZE = 0, 1, 2, 3
ZSTD, NONE = 0, 255
_HEADER = 19  # the common event header: timestamp, type, server id, size, log_pos, flags


class PayloadError(SourceError):
    """A TRANSACTION_PAYLOAD event that does not hold what its header says."""


def _packed(data: bytes, at: int) -> tuple[int, int]:
    try:
        return packed_int(data, at)
    except ValueError as exc:
        raise PayloadError(f"a TRANSACTION_PAYLOAD header: {exc}") from exc


def payload_header(body: bytes) -> tuple[int, int, int, int]:
    """(compression type, compressed size, uncompressed size, offset of the payload)."""
    fields: dict[int, int] = {}
    at = 0
    while True:
        kind, at = _packed(body, at)
        if kind == _END:
            break
        length, at = _packed(body, at)
        value, _ = _packed(body, at) if length else (0, at)
        fields[kind] = value
        at += length
    if _PAYLOAD_SIZE not in fields:
        raise PayloadError("a TRANSACTION_PAYLOAD event without its payload size")
    return (fields.get(_COMPRESSION, NONE), fields[_PAYLOAD_SIZE],
            fields.get(_UNCOMPRESSED_SIZE, -1), at)


def _read_exactly(stream: BinaryIO, size: int) -> bytes:
    parts, left = [], size
    while left:
        part = stream.read(left)
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def inner_events(body: bytes) -> Iterator[bytes]:
    """The events of one TRANSACTION_PAYLOAD body (header and body each, no checksum)."""
    compression, size, uncompressed, at = payload_header(body)
    payload = body[at:at + size]
    if len(payload) != size:
        raise PayloadError(f"a TRANSACTION_PAYLOAD event holds {len(payload)} payload bytes, "
                           f"its header says {size}")
    stream: BinaryIO
    if compression == ZSTD:
        stream = zstandard.ZstdDecompressor().stream_reader(payload)
    elif compression == NONE:
        stream = io.BytesIO(payload)
    else:
        raise PayloadError(f"a TRANSACTION_PAYLOAD event compressed with type {compression}, "
                           "which this version does not know (zstd is 0, none 255)")
    total = 0
    with stream:
        while True:
            header = _read_exactly(stream, _HEADER)
            if not header:
                break
            length = int.from_bytes(header[9:13], "little")
            rest = _read_exactly(stream, length - _HEADER) if length >= _HEADER else b""
            if len(header) < _HEADER or len(rest) != length - _HEADER:
                raise PayloadError("a compressed transaction ends inside an event")
            total += length
            yield header + rest
    if uncompressed >= 0 and total != uncompressed:
        raise PayloadError(f"a compressed transaction unpacked to {total} bytes, its header "
                           f"says {uncompressed}")


_WRAPPER_SETTINGS = (
    "allowed_events_in_packet", "only_tables", "ignored_tables", "only_schemas",
    "ignored_schemas", "freeze_schema", "ignore_decode_errors", "verify_checksum",
    "optional_meta_data", "enable_logging", "use_column_name_cache", "post_header_lengths",
)


class PayloadUnpacker:
    """Turns a TRANSACTION_PAYLOAD event into the library's events of its transaction."""

    def __init__(self, stream: BinLogStreamReader) -> None:
        self._stream = stream

    def events(self, payload_event: Any) -> Iterator[Any]:
        wrapper = payload_event.packet
        raw: bytes = wrapper.packet._data
        body = raw[1 + _HEADER:1 + _HEADER + payload_event.event_size]
        log_pos = wrapper.log_pos.to_bytes(4, "little")
        stream = self._stream
        settings = [getattr(stream, f"_BinLogStreamReader__{name}") for name in _WRAPPER_SETTINGS]
        wanted = stream._BinLogStreamReader__allowed_events  # what the reader yields
        for event in inner_events(body):
            packet = MysqlPacket(b"\x00" + event[:13] + log_pos + event[17:], "utf8")
            inner = BinLogPacketWrapper(
                packet, stream.table_map, stream._ctl_connection, stream.mysql_version,
                False, *settings)  # use_checksum: False, the events inside have none
            got = inner.event
            if got is None:
                continue
            if isinstance(got, TableMapEvent):
                stream.table_map[got.table_id] = got.get_table()
            if type(got) in wanted:
                yield got
