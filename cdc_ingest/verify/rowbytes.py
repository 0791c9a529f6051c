"""A MySQL row's expected key and value as bytes, straight from its text-protocol fields.

verify's fast path (verify/fast.py) compares these bytes with the topic's value bytes, and
only a row whose bytes differ goes through the ordinary comparison (verify/diff.py). So the
bytes must be *exactly* ``values.dumps`` of what :class:`~cdc_ingest.verify.mysql.
RowConverter` makes of the row (then equal bytes are an equal row by every rule of
:func:`~cdc_ingest.verify.values.same`). Each column's value is written one of two ways:

* a fast form, only where the field's text provably is that JSON already: an integer in
  canonical spelling (``0`` or an optional minus and no leading zero), a DECIMAL of exactly
  its scale's digits, a DATE / DATETIME / TIMESTAMP that is a valid date (day 01..28, so no
  calendar is needed) with exactly its fractional digits, text decoded as PyMySQL decodes
  it and written by orjson;
* otherwise the ordinary conversion: PyMySQL's value for the field (``RawRows.value``),
  :func:`~cdc_ingest.verify.convert.converter`, ``dumps``.

A compact JSON object is its members' texts joined, so a row is written member by member.
Where the compiled twin (``_rowbytes.pyx``, built with the package) is there, a batch of rows
is written by it: each column's fast form is chosen here (:func:`plan_of`, one decision for
both), its checks are the same patterns', and every field they refuse goes through the same
Python fragment.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

from cdc_ingest.mysql.raw_rows import RawRows, long_size
from cdc_ingest.verify.convert import INTEGERS, TEXTS, converter
from cdc_ingest.verify.mysql import TableShape
from cdc_ingest.verify.values import dumps

try:
    from cdc_ingest.verify import _rowbytes  # type: ignore[attr-defined]
except ImportError:  # built without a C compiler or Cython: the Python writer
    _rowbytes = None

Fragment = Callable[[bytes], bytes]  # a non-NULL field -> its JSON text

_INT = re.compile(rb"0|-?[1-9][0-9]*")
_DATE = (rb"(?:[1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])-(?:0[1-9]|1[0-2])"
         rb"-(?:0[1-9]|1[0-9]|2[0-8])")
_TIME = rb" (?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"


def _fraction(fsp: int) -> bytes:
    return rb"\.[0-9]{%d}" % fsp if fsp > 0 else b""


def _ordinary(raw: RawRows, index: int, convert: Callable[[Any], Any]) -> Fragment:
    def fragment(field: bytes) -> bytes:
        value = raw.value(index, field)
        return b"null" if value is None else dumps(convert(value))
    return fragment


Plan = tuple[Callable[[bytes], Any] | None, bytes, bytes, Fragment, int, int]
"""How a column is written: where ``match`` (a pattern's fullmatch) accepts the field, its
text between ``before`` and ``after``; otherwise ``other`` of the field. Then the compiled
writer's code for the same plan, and its scale or fsp."""

# the compiled writer's codes (_rowbytes.pyx)
C_OTHER, C_INT, C_BOOL, C_DECIMAL, C_DATETIME, C_DATE, C_UTF8 = range(7)
_UTF8 = frozenset({"utf8", "utf-8", "utf_8", "utf8mb4", "u8"})


def _checked(pattern: bytes, before: bytes, after: bytes, otherwise: Fragment, code: int,
             param: int = 0) -> Plan:
    return re.compile(pattern).fullmatch, before, after, otherwise, code, param


def _boolean(otherwise: Fragment) -> Fragment:
    match = _INT.fullmatch

    def fragment(field: bytes) -> bytes:
        if field == b"0":
            return b"false"
        return b"true" if match(field) else otherwise(field)
    return fragment


def _text(encoding: str) -> Fragment:
    return lambda field: orjson.dumps(field.decode(encoding))


def plan_of(raw: RawRows, index: int, shape: TableShape, boolean: bool) -> Plan:
    """How column ``index`` of ``shape`` (read by ``raw``) is written."""
    column = shape.columns[index]
    convert = converter(column, boolean)
    ordinary = _ordinary(raw, index, convert)
    kind, decoding = column.data_type, raw.decoding(index)
    if kind in INTEGERS or kind == "year":
        if decoding != "int":
            return None, b"", b"", ordinary, C_OTHER, 0
        if boolean and column.is_tinyint1:
            return None, b"", b"", _boolean(ordinary), C_BOOL, 0
        return _checked(_INT.pattern, b"", b"", ordinary, C_INT)
    if kind in ("decimal", "numeric") and decoding == "decimal":
        scale = column.scale or 0
        pattern = rb"-?(?:0|[1-9][0-9]*)\.[0-9]{%d}" % scale if scale else _INT.pattern
        return _checked(pattern, b"", b"", ordinary, C_DECIMAL, scale)
    if kind in ("datetime", "timestamp") and decoding == "datetime":
        suffix = b'Z"' if kind == "timestamp" else b'"'
        fsp = column.fsp or 0
        return _checked(_DATE + _TIME + _fraction(fsp), b'"', suffix, ordinary, C_DATETIME,
                        fsp)
    if kind == "date" and decoding == "date":
        return _checked(_DATE, b'"', b'"', ordinary, C_DATE)
    if kind in TEXTS and decoding == "text":
        encoding = raw.encodings[index] or "utf-8"
        code = C_UTF8 if encoding.lower() in _UTF8 else C_OTHER
        return None, b"", b"", _text(encoding), code, 0
    return None, b"", b"", ordinary, C_OTHER, 0


class RowBytes:
    """A row packet of ``shape``'s SELECT -> (canonical key JSON, expected value JSON)."""

    def __init__(self, shape: TableShape, raw: RawRows, boolean: bool, except_key: bool,
                 compiled: bool = True) -> None:
        """``compiled``: with the compiled writer where it was built."""
        names = [c.name for c in shape.columns]
        plans = [plan_of(raw, i, shape, boolean) for i in range(len(names))]
        self._plans = [plan[:4] for plan in plans]
        self._labels = [orjson.dumps(name) + b":" for name in names]
        self._key = [(names.index(k), orjson.dumps(k) + b":") for k in shape.key]
        self._value = [i for i, name in enumerate(names)
                       if not (except_key and name in shape.key)]
        self._compiled = None if _rowbytes is None or not compiled else _rowbytes.PacketBytes(
            [p[4] for p in plans], [p[5] for p in plans],
            [int(p[2] == b'Z"') for p in plans], [p[3] for p in plans], self._labels,
            [i for i, _ in self._key], self._value)

    def batch(self, packets: list[bytes]) -> tuple[list[bytes], list[bytes]]:
        """Row packets' keys and values (as :meth:`__call__` of each)."""
        if self._compiled is not None:
            return self._compiled(packets)
        pairs = [self(p) for p in packets]
        return [k for k, _ in pairs], [v for _, v in pairs]

    def __call__(self, data: bytes) -> tuple[bytes, bytes]:
        texts: list[bytes] = []
        append = texts.append
        at = 0
        for match, before, after, other in self._plans:
            size = data[at]  # the field's length, encoded as split_fields reads it
            if size < 251:
                at += 1
            elif size == 251:
                append(b"null")
                at += 1
                continue
            else:
                size, at = long_size(data, at)
            field = data[at:at + size]
            at += size
            append(before + field + after if match is not None and match(field)
                   else other(field))
        labels = self._labels
        key = b"{" + b",".join([label + texts[i] for i, label in self._key]) + b"}"
        value = b"{" + b",".join([labels[i] + texts[i] for i in self._value]) + b"}"
        return key, value


class RowStream:
    """A :class:`~cdc_ingest.mysql.packets.PacketParser` for a SELECT of the table: the
    socket's bytes framed into row packets in C (``_rowbytes.PacketFramer``), written by
    ``build`` and handed to ``sink`` as (keys, values), a socket read at a time.

    A failure of ``build`` or ``sink`` (``verify --continuous`` told to stop, a field the
    conversion refuses) is kept in :attr:`failure` and the rest of the result set is read
    past unwritten, as PyMySQL's cursor reads what is left when closed: the connection stays
    usable (the read view's COMMIT, what a caller does next). The caller raises it."""

    def __init__(self, seq: int, build: RowBytes,
                 sink: Callable[[list[bytes], list[bytes]], None]) -> None:
        if _rowbytes is None:
            raise RuntimeError("the compiled writer is not built")
        self._framer = _rowbytes.PacketFramer(seq)
        self._build, self._sink = build, sink
        self.seq = seq  # the next packet's sequence number
        self.last: bytes | None = None  # the EOF or ERR packet that ended the result set
        self.failure: BaseException | None = None

    def feed(self, data: bytes, /) -> int:
        state = int(self._framer.feed(data))
        self.seq, self.last = self._framer.seq, self._framer.last
        rows = self._framer.take()
        if rows and self.failure is None:
            try:
                self._sink(*self._build.batch(rows))
            except BaseException as exc:  # noqa: BLE001 - raised by the caller after the end
                self.failure = exc
        return state


def compiled() -> bool:
    """Whether the compiled writer was built."""
    return _rowbytes is not None
