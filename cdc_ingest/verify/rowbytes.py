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


Plan = tuple[Callable[[bytes], Any] | None, bytes, bytes, Fragment]
"""How a column is written: where ``match`` (a pattern's fullmatch) accepts the field, its
text between ``before`` and ``after``; otherwise ``other`` of the field."""


def _checked(pattern: bytes, before: bytes, after: bytes, otherwise: Fragment) -> Plan:
    return re.compile(pattern).fullmatch, before, after, otherwise


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
            return None, b"", b"", ordinary
        if boolean and column.is_tinyint1:
            return None, b"", b"", _boolean(ordinary)
        return _checked(_INT.pattern, b"", b"", ordinary)
    if kind in ("decimal", "numeric") and decoding == "decimal":
        pattern = (rb"-?(?:0|[1-9][0-9]*)\.[0-9]{%d}" % column.scale if column.scale
                   else _INT.pattern)
        return _checked(pattern, b"", b"", ordinary)
    if kind in ("datetime", "timestamp") and decoding == "datetime":
        suffix = b'Z"' if kind == "timestamp" else b'"'
        return _checked(_DATE + _TIME + _fraction(column.fsp), b'"', suffix, ordinary)
    if kind == "date" and decoding == "date":
        return _checked(_DATE, b'"', b'"', ordinary)
    if kind in TEXTS and decoding == "text":
        return None, b"", b"", _text(raw.encodings[index] or "utf-8")
    return None, b"", b"", ordinary


class RowBytes:
    """A row packet of ``shape``'s SELECT -> (canonical key JSON, expected value JSON)."""

    def __init__(self, shape: TableShape, raw: RawRows, boolean: bool, except_key: bool
                 ) -> None:
        names = [c.name for c in shape.columns]
        self._plans = [plan_of(raw, i, shape, boolean) for i in range(len(names))]
        self._labels = [orjson.dumps(name) + b":" for name in names]
        self._key = [(names.index(k), orjson.dumps(k) + b":") for k in shape.key]
        self._value = [i for i, name in enumerate(names)
                       if not (except_key and name in shape.key)]

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
