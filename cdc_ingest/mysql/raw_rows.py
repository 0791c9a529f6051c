"""A SELECT's rows as the server sends them: each row's text-protocol fields as bytes.

For a reader that turns the fields into its own form in bulk (verify's fast path) instead of
PyMySQL's values one by one. :func:`raw_rows` streams the row packets through an unbuffered
cursor (one row at a time in memory); :func:`split_fields` cuts a row into its fields; and
:meth:`RawRows.value` turns one field into exactly the value PyMySQL would have given for it
(its decoding and its converter for the field's type), for what the fast reader leaves to
the ordinary conversion.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import pymysql
from pymysql import converters

from cdc_ingest.mysql.connection import reading

Decoder = tuple[str | None, Callable[[Any], Any] | None]


class RawRows:
    """One running SELECT: :attr:`decoders` per field (PyMySQL's encoding and converter),
    :meth:`packets` its rows' packets."""

    def __init__(self, conn: pymysql.Connection, cursor: Any) -> None:
        self._conn = conn
        self._result = cursor._result
        self.decoders: list[Decoder] = list(self._result.converters)

    @classmethod
    def of(cls, decoders: list[Decoder]) -> RawRows:
        """The fields' decoding only, for a reader that gets the packets otherwise
        (:func:`cdc_ingest.mysql.packets.stream_packets`): no :meth:`packets`."""
        raw = cls.__new__(cls)
        raw._conn, raw._result, raw.decoders = None, None, list(decoders)
        return raw

    def packets(self, batch: int = 1000) -> Iterator[list[bytes]]:
        """The row packets' payloads, ``batch`` at a time, until the result set ends."""
        result = self._result
        if not result.unbuffered_active:
            return
        read = self._conn._read_packet
        rows: list[bytes] = []
        append = rows.append
        while True:
            packet = read()
            data = packet._data
            if data[0] == 0xFE and len(data) < 9 and result._check_packet_is_eof(packet):
                result.unbuffered_active = False
                result.connection = None
                break
            append(data)
            if len(rows) >= batch:
                yield rows
                rows = []
                append = rows.append
        if rows:
            yield rows

    def decoding(self, index: int) -> str:
        """How PyMySQL reads field ``index``: ``int``, ``decimal``, ``datetime``, ``date``
        (its converter), ``text`` (decoded, no converter), ``bytes`` (neither) or ``other``."""
        encoding, convert = self.decoders[index]
        if convert is None:
            return "bytes" if encoding is None else "text"
        known = {int: "int", Decimal: "decimal", converters.convert_datetime: "datetime",
                 converters.convert_date: "date"}
        return known.get(convert, "other")

    @property
    def encodings(self) -> list[str | None]:
        return [encoding for encoding, _ in self.decoders]

    def value(self, index: int, field: bytes | None) -> Any:
        """Field ``index`` as PyMySQL gives it (``_read_row_from_packet``)."""
        if field is None:
            return None
        encoding, convert = self.decoders[index]
        data: Any = field.decode(encoding) if encoding is not None else field
        return convert(data) if convert is not None else data


@contextmanager
def raw_rows(conn: pymysql.Connection, sql: str, what: str) -> Iterator[RawRows]:
    """Run ``sql`` unbuffered; a failure names ``what`` was read (as ``stream_rows``)."""
    with reading(what):
        cursor = conn.cursor(pymysql.cursors.SSCursor)
        try:
            cursor.execute(sql)
            yield RawRows(conn, cursor)
        finally:
            cursor.close()  # reads what is left of the result set


def long_size(data: bytes, at: int) -> tuple[int, int]:
    """The length of the field at ``at`` whose length byte is 252..254 (2, 3 or 8 bytes
    follow), and where its bytes start."""
    width = {252: 2, 253: 3, 254: 8}[data[at]]
    return int.from_bytes(data[at + 1:at + 1 + width], "little"), at + 1 + width


def split_fields(data: bytes, count: int) -> list[bytes | None]:
    """A text-protocol row packet's ``count`` fields (None: SQL NULL)."""
    out: list[bytes | None] = []
    at = 0
    for _ in range(count):
        size = data[at]
        if size < 251:
            at += 1
        elif size == 251:
            out.append(None)
            at += 1
            continue
        else:
            size, at = long_size(data, at)
        out.append(data[at:at + size])
        at += size
    return out
