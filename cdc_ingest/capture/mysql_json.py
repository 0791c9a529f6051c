"""MySQL's binary JSON (a JSON column in a MySQL binlog row) -> the JSON text MySQL shows.

The text is what ``SELECT json_col`` returns on MySQL 8.0+, byte for byte, so ``verify`` and
any reader comparing with MySQL see the same document:

* objects ``{"k": v, "k2": v2}`` with keys in MySQL's stored order, arrays ``[v, w]``;
* doubles as MySQL prints them (``1e300``, ``0.00001``, ``100.0``): the shortest round-trip
  digits, plain notation for decimal exponents -14..15 (and longer if every digit fits), else
  ``<d>[.<ddd>]e<exp>``; ``.0`` added to an integral plain number;
* opaque values: DECIMAL as its exact number (``1.50``), DATE ``"2024-01-31"``, TIME
  ``"-838:59:59.000000"``, DATETIME / TIMESTAMP ``"2024-01-31 12:34:56.500000"``, anything
  else ``"base64:type<field type>:<base64>"`` (binary strings among them).

MariaDB stores JSON as text; this is for MySQL only.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable
from json.encoder import encode_basestring
from typing import Any, NamedTuple, Protocol, TypeAlias, TypeVar

from cdc_ingest.capture.values import decimal_text

_SMALL_OBJECT, _LARGE_OBJECT, _SMALL_ARRAY, _LARGE_ARRAY = 0x00, 0x01, 0x02, 0x03
_LITERAL, _INT16, _UINT16, _INT32, _UINT32, _INT64, _UINT64 = 0x04, 0x05, 0x06, 0x07, 0x08, \
    0x09, 0x0A
_DOUBLE, _STRING, _OPAQUE = 0x0B, 0x0C, 0x0F
_LITERALS = {0: "null", 1: "true", 2: "false"}
_FIXED = {_INT16: "<h", _UINT16: "<H", _INT32: "<i", _UINT32: "<I", _INT64: "<q",
          _UINT64: "<Q", _DOUBLE: "<d"}
_CONTAINERS = (_SMALL_OBJECT, _LARGE_OBJECT, _SMALL_ARRAY, _LARGE_ARRAY)
# opaque field types (enum_field_types)
_DECIMAL, _DATE, _TIME, _DATETIME, _TIMESTAMP = 246, 10, 11, 12, 7
# what malformed binary JSON makes the reader raise
_BROKEN = (IndexError, KeyError, struct.error, UnicodeDecodeError)
_T = TypeVar("_T")
# a string as JSON text: what json.dumps(s, ensure_ascii=False) runs, without its set-up
_quoted = encode_basestring


class JsonBinaryError(ValueError):
    """Bytes that are not MySQL binary JSON."""


def json_text(data: bytes) -> str:
    """The JSON text of one binary JSON value (``null`` for an empty value)."""
    if not data:
        return "null"
    try:
        return _value(data[0], data, 1, len(data))
    except (IndexError, struct.error) as exc:
        raise JsonBinaryError(f"truncated binary JSON ({len(data)} bytes)") from exc


class Unread(NamedTuple):
    """A container of a binary JSON document, not read yet: its type and where it starts."""

    kind: int
    data: bytes
    start: int


# A document to edit (json_diff): a scalar as its text, an array, an object (keys in
# MySQL's order) or a container not read yet (rendered straight from its bytes).
Node: TypeAlias = "str | Unread | list[Node] | dict[str, Node]"


class Compiled(Protocol):
    """The compiled reader (``_jsontext.pyx``) the tree functions below may use: the same
    text, each part proven equal to the reference by tests/unit/test_json_diff_compiled.py."""

    def json_text(self, data: bytes, /) -> str: ...

    def container_text(self, kind: int, data: bytes, start: int, /) -> str: ...

    def container_entries(self, kind: int, data: bytes, start: int, /) -> tuple[
            list[str] | None, list[Any]]: ...


def json_tree(data: bytes, fast: Compiled | None = None) -> Node:
    """A binary JSON value as a tree to edit: its root container unread, or a scalar's text.

    ``fast``, here and below: the compiled reader, used where it reads the bytes; where it
    cannot, the reference reads them again, so a malformed document raises the reference's
    own error."""
    if data and data[0] in _CONTAINERS:
        return Unread(data[0], data, 1)
    if fast is not None:
        try:
            return fast.json_text(data)
        except Exception:  # noqa: BLE001 - the reference below raises its own error
            pass
    return _guarded(json_text, data)


def expand(node: Unread, fast: Compiled | None = None) -> list[Node] | dict[str, Node]:
    """One level of an unread container: its values scalar text or unread containers."""
    if fast is not None:
        try:
            keys, read = fast.container_entries(node.kind, node.data, node.start)
            values: list[Node] = [Unread(v[0], node.data, v[1]) if type(v) is tuple else v
                                  for v in read]
            return values if keys is None else dict(zip(keys, values, strict=True))
        except Exception:  # noqa: BLE001 - the reference below raises its own error
            pass
    keys, values = _guarded(_entries, node.kind, node.data, node.start, _shallow)
    return values if keys is None else dict(zip(keys, values, strict=True))


def render(node: Node, fast: Compiled | None = None) -> str:
    """A tree's JSON text, the same as ``json_text`` of the same document stored in full."""
    if isinstance(node, str):
        return node
    if isinstance(node, Unread):
        if fast is not None:
            try:
                return fast.container_text(node.kind, node.data, node.start)
            except Exception:  # noqa: BLE001 - the reference below raises its own error
                pass
        return _guarded(_container, node.kind, node.data, node.start)
    if isinstance(node, list):
        return "[" + ", ".join([render(value, fast) for value in node]) + "]"
    return "{" + ", ".join([f"{_quoted(k)}: {render(v, fast)}" for k, v in node.items()]) + "}"


def _shallow(kind: int, data: bytes, at: int, end: int) -> Node:
    return Unread(kind, data, at) if kind in _CONTAINERS else _value(kind, data, at, end)


def _guarded(read: Callable[..., _T], *args: object) -> _T:
    try:
        return read(*args)
    except _BROKEN as exc:
        raise JsonBinaryError(f"malformed binary JSON: {exc!r}") from exc


def _varlen(data: bytes, at: int) -> tuple[int, int]:
    """A length of 7 bits per byte, low bits first: (length, offset after it)."""
    length = shift = 0
    while True:
        byte = data[at]
        at += 1
        length |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return length, at
        shift += 7


def _value(kind: int, data: bytes, at: int, end: int) -> str:
    if kind in _CONTAINERS:
        return _container(kind, data, at)
    if kind == _LITERAL:
        return _LITERALS[data[at]]
    fmt = _FIXED.get(kind)
    if fmt is not None:
        (number,) = struct.unpack_from(fmt, data, at)
        return double_text(number) if kind == _DOUBLE else str(number)
    if kind == _STRING:
        length, at = _varlen(data, at)
        return _quoted(data[at:at + length].decode("utf-8"))
    if kind == _OPAQUE:
        field_type = data[at]
        length, at = _varlen(data, at + 1)
        return _opaque(field_type, data[at:at + length])
    raise JsonBinaryError(f"unknown binary JSON type {kind:#x} at byte {at - 1}")


def _container(kind: int, data: bytes, start: int) -> str:
    keys, values = _entries(kind, data, start, _value)
    if keys is None:
        return "[" + ", ".join(values) + "]"
    return "{" + ", ".join(f"{_quoted(k)}: {v}" for k, v in zip(keys, values, strict=True)) + "}"


def _entries(kind: int, data: bytes, start: int,
             leaf: Callable[[int, bytes, int, int], _T]) -> tuple[list[str] | None, list[_T]]:
    """One container's keys (``None`` for an array) and its values, each made by ``leaf``."""
    large = kind in (_LARGE_OBJECT, _LARGE_ARRAY)
    word = "<I" if large else "<H"
    size = 4 if large else 2
    (count,) = struct.unpack_from(word, data, start)
    at = start + 2 * size  # after the element count and the byte size
    keys = None
    if kind in (_SMALL_OBJECT, _LARGE_OBJECT):
        keys = []
        for _ in range(count):
            key_at, key_len = struct.unpack_from(word + "H", data, at)
            keys.append(data[start + key_at:start + key_at + key_len].decode())
            at += size + 2
    values = []
    for _ in range(count):
        value_kind = data[at]
        inlined = value_kind in (_LITERAL, _INT16, _UINT16) or (
            large and value_kind in (_INT32, _UINT32))
        if inlined:
            values.append(leaf(value_kind, data, at + 1, at + 1 + size))
        else:
            (offset,) = struct.unpack_from(word, data, at + 1)
            values.append(leaf(value_kind, data, start + offset, len(data)))
        at += 1 + size
    return keys, values


def _opaque(field_type: int, raw: bytes) -> str:
    if field_type == _DECIMAL:
        return decimal_text(raw[2:], raw[0], raw[1])
    if field_type in (_DATE, _TIME, _DATETIME, _TIMESTAMP) and len(raw) >= 8:
        (packed,) = struct.unpack_from("<q", raw)
        return '"' + _temporal(field_type, packed) + '"'
    return f'"base64:type{field_type}:{base64.b64encode(raw).decode("ascii")}"'


def _temporal(field_type: int, packed: int) -> str:
    """MySQL's packed temporal value as text. TIME: ``(h << 12 | m << 6 | s) << 24 | us``
    (hours up to 838, negative as a whole); DATE / DATETIME / TIMESTAMP:
    ``((y * 13 + mo) << 5 | d) << 17 | h << 12 | m << 6 | s``, shifted the same way."""
    sign = "-" if packed < 0 else ""
    packed = abs(packed)
    micros, whole = packed % (1 << 24), packed >> 24
    if field_type == _TIME:
        hours, rest = whole >> 12, whole % (1 << 12)
    else:
        hours, rest = (whole % (1 << 17)) >> 12, whole % (1 << 12)
    clock = f"{hours:02d}:{rest >> 6:02d}:{rest % 64:02d}.{micros:06d}"
    if field_type == _TIME:
        return sign + clock
    ymd = whole >> 17
    year_month, day = ymd >> 5, ymd % 32
    date = f"{year_month // 13:04d}-{year_month % 13:02d}-{day:02d}"
    return date if field_type == _DATE else f"{date} {clock}"


def double_text(value: float) -> str:
    """A double as MySQL's JSON prints it (see the module docstring)."""
    text = repr(value)
    if text in ("inf", "-inf", "nan"):
        raise JsonBinaryError(f"{text} is not a JSON number")
    sign = "-" if text.startswith("-") else ""
    mantissa, _, exponent = text.lstrip("-").partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    point = len(whole) + int(exponent or 0)  # the decimal point's place in whole+fraction
    if not digits:
        return f"{sign}0.0"
    point -= len(whole + fraction) - len((whole + fraction).lstrip("0"))
    digits = digits.rstrip("0") or "0"
    if -14 <= point <= 15 or len(digits) > point > 15:
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return f"{sign}{digits}{'0' * (point - len(digits))}.0"
        return f"{sign}{digits[:point]}.{digits[point:]}"
    head = digits[0] + (f".{digits[1:]}" if len(digits) > 1 else "")
    return f"{sign}{head}e{point - 1}"
