"""Snapshot values: what a SELECT returns -> the output JSON form (docs/changelog-format.md).

Capture's own rules for rows read with SELECT, apart from ``verify``'s on purpose: verify
checks the topics against a second implementation. The snapshot's connection
(``mysql.connect(server_text=True)``) leaves DATE, DATETIME, TIMESTAMP and DECIMAL as the
server's text, which already is the output form with the column's exact digits; FLOAT is
selected as ``col + 0E0`` (exact as a double). Numbers that must keep their exact text are
:class:`orjson.Fragment`.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import orjson

from cdc_ingest.capture.geometry import geometry_json
from cdc_ingest.capture.values import vector
from cdc_ingest.model.flink_types import shortest_float32
from cdc_ingest.mysql import Column

Converter = Callable[[Any], Any]

# Types whose driver value already is the output JSON value.
_AS_IS = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "json",
                    "enum", "smallint", "mediumint", "int", "integer", "bigint",
                    # MariaDB's data-type plugins: the server sends the text it prints
                    "uuid", "inet4", "inet6"})
_BLOBS = frozenset({"varbinary", "tinyblob", "blob", "mediumblob", "longblob"})
_GEOMETRIES = frozenset({"geometry", "point", "linestring", "polygon", "multipoint",
                         "multilinestring", "multipolygon", "geometrycollection",
                         "geomcollection"})


class UnsupportedType(ValueError):
    """A column type the snapshot has no conversion for."""


def _zero_date(text: str) -> bool:
    return text[5:7] == "00" or text[8:10] == "00"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _raw(value: Any) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


def _float32(value: float) -> orjson.Fragment:
    """The fewest digits that read back as the same 32-bit float, as Python spells them."""
    return orjson.Fragment(shortest_float32(value))


def _time(value: timedelta, fsp: int) -> str:
    """TIME as ``[-]HH:MM:SS[.f]``; hours may exceed 24 (up to 838)."""
    micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    seconds, micro = divmod(abs(micros), 1_000_000)
    hours, rest = divmod(seconds, 3600)
    frac = "." + f"{micro:06d}"[:fsp] if fsp > 0 else ""
    return f"{'-' if micros < 0 else ''}{hours:02d}:{rest // 60:02d}:{rest % 60:02d}{frac}"


def _bit(data: bytes, bits: int) -> bool | str:
    return any(data) if bits == 1 else _b64(_raw(data).rjust((bits + 7) // 8, b"\x00"))


def _set(value: Any, labels: tuple[str, ...]) -> list[str]:
    members = set(value.split(",")) if isinstance(value, str) else {str(v) for v in value}
    members.discard("")
    return [label for label in labels if label in members]


def _decimal(text: str) -> orjson.Fragment:
    """DECIMAL's text as the binlog path writes it (``decimal_text``): without the leading
    zeros ZEROFILL pads it with, which JSON does not allow either."""
    sign = "-" if text.startswith("-") else ""
    whole, dot, fraction = text.removeprefix("-").partition(".")
    return orjson.Fragment(f"{sign}{whole.lstrip('0') or '0'}{dot}{fraction}")


def _geometry(value: bytes) -> str:
    return geometry_json(_raw(value))


def snapshot_converter(column: Column, tinyint1_as_boolean: bool) -> Converter | None:
    """None when the driver's value is already the output JSON value, else the conversion
    of the column's non-NULL values; raises :class:`UnsupportedType`."""
    kind = column.data_type
    if kind in _AS_IS or (kind == "tinyint" and not (tinyint1_as_boolean
                                                      and column.is_tinyint1)):
        return None
    width, fsp, bits, labels = column.octet_length or 0, column.fsp, column.bits, column.labels
    rules: dict[str, Converter] = {
        "tinyint": lambda v: int(v) != 0,
        "date": lambda v: None if _zero_date(v) else v,
        "datetime": lambda v: None if _zero_date(v) else v,
        "timestamp": lambda v: None if _zero_date(v) else v + "Z",
        "decimal": _decimal,
        "numeric": _decimal,
        "float": lambda v: _float32(float(v)),
        "double": lambda v: orjson.Fragment(repr(float(v))),
        "real": lambda v: orjson.Fragment(repr(float(v))),
        "time": lambda v: _time(v, fsp),
        "year": int,
        "binary": lambda v: _b64(_raw(v).ljust(width, b"\x00")),
        "bit": lambda v: _bit(v, bits),
        "set": lambda v: _set(v, labels),
        "vector": lambda v: vector(_raw(v)),  # the binlog's own reading: same floats
    }
    if kind in rules:
        return rules[kind]
    if kind in _BLOBS:
        return lambda v: _b64(_raw(v))
    if kind in _GEOMETRIES:
        return _geometry
    raise UnsupportedType(f"column {column.name} has type {column.column_type}")


def select_expression(column: Column) -> str:
    """How the snapshot selects a column so that its value arrives exactly."""
    name = "`" + column.name.replace("`", "``") + "`"
    # The text protocol prints FLOAT with 6 significant digits; as a DOUBLE it is exact.
    if column.data_type == "float":
        return f"({name} + 0E0)"
    # pymysql cannot read VECTOR's own type; as BINARY it is the raw float32 values
    return f"CAST({name} AS BINARY)" if column.data_type == "vector" else name


# How the compiled reader (``_textrows.pyx``, keep in step with its DEF lines) writes a
# column's text-protocol field; TEXT_GENERIC runs :func:`json_converter`.
TEXT_GENERIC, TEXT_INT, TEXT_BOOL, TEXT_STR, TEXT_DATE, TEXT_TIMESTAMP, TEXT_DECIMAL = range(7)
_INTEGERS = frozenset({"tinyint", "smallint", "mediumint", "int", "integer", "bigint", "year"})
_STRINGS = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "json",
                      "enum"})
_UTF8 = frozenset({"utf8", "utf-8", "utf8mb4"})


def text_kind(column: Column, tinyint1_as_boolean: bool, encoding: str | None,
              converter: Any) -> int:
    """The compiled reader's kind for ``column``, given what PyMySQL would do with its field
    (``encoding``, ``converter``: its result's pair for the column). A fast kind is chosen
    only where PyMySQL's value after :func:`snapshot_converter` is plainly the field's text:
    ``int(text)``, ``int(text) != 0``, the UTF-8 text, a date's text, a DECIMAL's digits;
    else TEXT_GENERIC."""
    kind = column.data_type
    if kind in _STRINGS:
        return TEXT_STR if encoding in _UTF8 and converter is None else TEXT_GENERIC
    if encoding != "ascii":
        return TEXT_GENERIC
    if kind in _INTEGERS and converter is int:
        boolean = kind == "tinyint" and tinyint1_as_boolean and column.is_tinyint1
        return TEXT_BOOL if boolean else TEXT_INT
    if converter is not None:
        return TEXT_GENERIC
    if kind in ("decimal", "numeric"):
        return TEXT_DECIMAL
    return {"date": TEXT_DATE, "datetime": TEXT_DATE,
            "timestamp": TEXT_TIMESTAMP}.get(kind, TEXT_GENERIC)


def json_converter(encoding: str | None, converter: Any,
                   fix: Converter | None) -> Callable[[bytes], bytes]:
    """A field's bytes -> its JSON: PyMySQL's decoding and conversion, then the snapshot's."""
    def convert(raw: bytes) -> bytes:
        value: Any = raw.decode(encoding) if encoding is not None else raw
        if converter is not None:
            value = converter(value)
        return orjson.dumps(fix(value) if fix is not None else value)

    return convert
