"""pymysql values -> the output JSON form of docs/changelog-format.md.

A second implementation, on purpose apart from capture's binlog decoder: verify checks the
sink topics against what this module makes of a plain ``SELECT``. Each converter takes a
non-NULL value; NULL is always ``null``. The session runs with ``time_zone='+00:00'`` and
FLOAT columns are selected as ``col + 0E0`` (the text protocol rounds FLOAT to 6 digits).
"""

from __future__ import annotations

import base64
import decimal
import struct
from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import Any

from cdc_ingest.mysql.columns import Column
from cdc_ingest.verify.values import Float32Num, Float64Num, GeoText, Num, float32
from cdc_ingest.verify.wkb import geometry_text

Converter = Callable[[Any], Any]

INTEGERS = frozenset({"tinyint", "smallint", "mediumint", "int", "integer", "bigint"})
TEXTS = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "json",
                   "enum"})
BLOBS = frozenset({"varbinary", "tinyblob", "blob", "mediumblob", "longblob"})
GEOMETRIES = frozenset({"geometry", "point", "linestring", "polygon", "multipoint",
                        "multilinestring", "multipolygon", "geometrycollection",
                        "geomcollection"})
_EXACT = decimal.Context(prec=200)  # DECIMAL has at most 65 digits


class UnsupportedType(ValueError):
    """A column type verify has no conversion for."""


def decimal_value(value: decimal.Decimal, scale: int) -> int | Num:
    """Exact, with exactly ``scale`` decimals (``0.50``); an integer when the scale is 0."""
    if value.as_tuple().exponent != -scale:
        value = value.quantize(decimal.Decimal(1).scaleb(-scale), context=_EXACT)
    text = format(value, "f")
    return int(text) if scale == 0 else Num(text)


def float32_value(value: float) -> Float32Num:
    """The shortest decimal that reads back as the same 32-bit float (``1.1``)."""
    target = float32(value)
    if _power_of_two(target):
        # The float below is closer than the one above, so a longer text may fail where a
        # shorter one (on the far side) passed: try every length.
        digits = next(d for d in range(1, 10) if _reads_back(f"{target:.{d}g}", target))
        return Float32Num(repr(float(f"{target:.{digits}g}")))
    # Otherwise reading back is monotonic in the digits kept: search for the fewest.
    low, high = 1, 9  # nine always suffice
    while low < high:
        middle = (low + high) // 2
        if _reads_back(f"{target:.{middle}g}", target):
            high = middle
        else:
            low = middle + 1
    return Float32Num(repr(float(f"{target:.{low}g}")))


def _power_of_two(value: float) -> bool:
    bits: int = struct.unpack("<I", struct.pack("<f", value))[0]
    return bits & 0x7FFFFF == 0


def _reads_back(text: str, target: float) -> bool:
    try:
        return float32(float(text)) == target
    except OverflowError:  # rounded up beyond the largest float
        return False


def fraction(microseconds: int, fsp: int) -> str:
    """``.fff`` with ``fsp`` digits (truncated, as MySQL shows them), or nothing for fsp 0."""
    return "." + f"{microseconds:06d}"[:fsp] if fsp > 0 else ""


def time_text(value: timedelta, fsp: int) -> str:
    """TIME as ``[-]HH:MM:SS[.f]``; hours may exceed 24 (up to 838)."""
    micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    sign = "-" if micros < 0 else ""
    seconds, micro = divmod(abs(micros), 1_000_000)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{sign}{hours:02d}:{minutes:02d}:{secs:02d}{fraction(micro, fsp)}"


def date_text(value: Any) -> str | None:
    """DATE as ``YYYY-MM-DD``; a zero date (pymysql gives it as text) is null."""
    if not isinstance(value, date):
        return None
    return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"


def datetime_text(value: Any, fsp: int, suffix: str = "") -> str | None:
    """DATETIME / TIMESTAMP (session in UTC, ``suffix`` ``Z``); zero dates are null."""
    if not isinstance(value, datetime):
        return None
    return (f"{value.year:04d}-{value.month:02d}-{value.day:02d} {value.hour:02d}:"
            f"{value.minute:02d}:{value.second:02d}{fraction(value.microsecond, fsp)}{suffix}")


def _bytes(value: Any) -> bytes:
    return bytes(value) if not isinstance(value, str) else value.encode("utf-8")


def b64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def bit_value(value: Any, bits: int) -> bool | str:
    """BIT(1) a boolean; BIT(n) base64 of its ceil(n/8) big-endian bytes."""
    data = _bytes(value) if not isinstance(value, int) else value.to_bytes((bits + 7) // 8, "big")
    if bits == 1:
        return any(data)
    return b64(data.rjust((bits + 7) // 8, b"\x00"))


def set_labels(value: Any, labels: tuple[str, ...]) -> list[str]:
    """SET as its labels in definition order; ``[]`` for the empty set."""
    members = set(value.split(",")) if isinstance(value, str) else {str(v) for v in value}
    members.discard("")
    return [label for label in labels if label in members]


def vector_value(value: Any) -> list[Float32Num]:
    """VECTOR (selected as BINARY): its little-endian float32 values, each like a FLOAT."""
    data = _bytes(value)
    return [float32_value(x) for (x,) in struct.iter_unpack("<f", data)]


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes | bytearray) else str(value)


def _integer(column: Column, tinyint1_as_boolean: bool) -> Converter:
    if tinyint1_as_boolean and column.is_tinyint1:
        return lambda v: int(v) != 0
    return int


def _binary(column: Column) -> Converter:
    width = column.octet_length or 0
    return lambda v: b64(_bytes(v).ljust(width, b"\x00"))


def converter(column: Column, tinyint1_as_boolean: bool = True) -> Converter:
    """The conversion of one column's non-NULL values; raises :class:`UnsupportedType`."""
    kind = column.data_type
    fsp = column.fsp
    simple: dict[str, Converter] = {
        "decimal": lambda v: decimal_value(v, column.scale),
        "numeric": lambda v: decimal_value(v, column.scale),
        "float": lambda v: float32_value(float(v)),
        "double": lambda v: Float64Num(repr(float(v))),
        "real": lambda v: Float64Num(repr(float(v))),
        "date": date_text,
        "time": lambda v: time_text(v, fsp),
        "datetime": lambda v: datetime_text(v, fsp),
        "timestamp": lambda v: datetime_text(v, fsp, "Z"),
        "year": int,
        "binary": _binary(column),
        "bit": lambda v: bit_value(v, column.bits),
        "set": lambda v: set_labels(v, column.labels),
        "vector": vector_value,
        # MariaDB's data-type plugins: the server sends the text it prints
        "uuid": _text,
        "inet4": _text,
        "inet6": _text,
    }
    if kind in simple:
        return simple[kind]
    if kind in INTEGERS:
        return _integer(column, tinyint1_as_boolean)
    if kind in TEXTS:
        return _text
    if kind in BLOBS:
        return lambda v: b64(_bytes(v))
    if kind in GEOMETRIES:
        return lambda v: GeoText(geometry_text(_bytes(v)))
    raise UnsupportedType(f"column {column.name} has type {column.column_type}")


def select_expression(column: Column, of: str | None = None) -> str:
    """How to select the column (or ``of``, an expression of its type such as
    ``DEFAULT(col)``) so that its value arrives exactly."""
    name = of or "`" + column.name.replace("`", "``") + "`"
    # The text protocol prints FLOAT with 6 significant digits; as a DOUBLE it is exact.
    if column.data_type == "float":
        return f"({name} + 0E0)"
    # pymysql cannot read VECTOR's own type; as BINARY it is the raw float32 values
    return f"CAST({name} AS BINARY)" if column.data_type == "vector" else name
