"""The values of the ``avro-confluent`` format (formats/avro_schemas.py): a column's value in
the changelog's JSON form (docs/changelog-format.md, decoded with ``float_hook=Decimal``) to
the datum of its Avro type, and the datum as fastavro reads it back to the JSON form."""

from __future__ import annotations

import base64
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import orjson

from cdc_ingest.model.flink_types import shortest_float32, twos_complement, type_parts

_EPOCH_DAY = date(1970, 1, 1).toordinal()
_EPOCH = datetime(1970, 1, 1)
_US = timedelta(microseconds=1)


# -- values: JSON form -> Avro ----------------------------------------------------------

ToAvro = Callable[[Any], Any]


def _time_us(text: str) -> int:
    """``[-]H:MM:SS[.f]`` -> microseconds (any sign, any hours)."""
    negative = text.startswith("-")
    hours, minutes, seconds = text.lstrip("-").split(":")
    whole, _, fraction = seconds.partition(".")
    us = ((int(hours) * 60 + int(minutes)) * 60 + int(whole)) * 1_000_000 + int(
        (fraction + "000000")[:6])
    return -us if negative else us


def _timestamp_us(text: str) -> int:
    """``YYYY-MM-DD HH:MM:SS[.f][Z]`` (the wall clock, or UTC with Z) -> microseconds from
    1970-01-01 00:00:00."""
    moment = datetime.fromisoformat(text[:-1] if text.endswith("Z") else text)
    return (moment - _EPOCH) // _US


def unscaled(value: Any, scale: int) -> int:
    """A number's unscaled value at ``scale``, in integers only (a Decimal's arithmetic
    rounds beyond its context's 28 digits); ValueError where it has more decimals."""
    sign, digits, exponent = Decimal(value).as_tuple()
    if not isinstance(exponent, int):
        raise ValueError(f"{value} is not a number")
    whole = int("".join(map(str, digits)) or "0")
    shift = exponent + scale
    if shift >= 0:
        whole *= 10 ** shift
    else:
        whole, rest = divmod(whole, 10 ** -shift)
        if rest:
            raise ValueError(f"{value} has more than {scale} decimals")
    return -whole if sign else whole


def _decimal_bytes(precision: int, scale: int) -> ToAvro:
    limit = 10 ** precision

    def convert(value: Any) -> bytes:
        number = unscaled(value, scale)
        if not -limit < number < limit:
            raise ValueError(f"{value} does not fit DECIMAL({precision}, {scale})")
        return twos_complement(number)
    return convert


def to_avro(type_: str) -> ToAvro | None:
    """The converter of a column's JSON-form value (decoded with :data:`decode_json`), None
    where the value goes as it is."""
    if type_.startswith("ARRAY<"):
        inner = to_avro(type_[6:-1])
        if inner is None:
            return None
        return lambda items: [None if x is None else inner(x) for x in items]
    root, size, scale = type_parts(type_)
    if root in ("FLOAT", "DOUBLE"):
        return float
    if root == "DECIMAL":
        return _decimal_bytes(size or 10, scale or 0)
    if root in ("BINARY", "VARBINARY", "BYTES"):
        return base64.b64decode
    if root == "STRING":
        # DECIMAL beyond 38 digits is STRING in Flink CDC: its exact text
        return lambda v: (v if isinstance(v, str)
                          else format(v, "f") if isinstance(v, Decimal) else str(v))
    if root == "DATE":
        return lambda v: date.fromisoformat(v).toordinal() - _EPOCH_DAY
    fsp = size or 0
    if root == "TIME":
        return _time_us
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if fsp <= 3:
            return lambda text: _timestamp_us(text) // 1000
        return _timestamp_us
    return None


# -- values: Avro -> JSON form ----------------------------------------------------------

ToJson = Callable[[Any], Any]


def _fraction(us: int, fsp: int) -> str:
    return f".{us:06d}"[: fsp + 1] if fsp else ""


def to_json(type_: str) -> ToJson | None:
    """The converter of a column's Avro value (as fastavro reads it, logical types applied)
    back to the changelog's JSON form; None where it is the same."""
    if type_.startswith("ARRAY<"):
        inner = to_json(type_[6:-1])
        if inner is None:
            return None
        return lambda items: [None if x is None else inner(x) for x in items]
    root, size, _ = type_parts(type_)
    if root == "FLOAT":
        return lambda x: orjson.Fragment(shortest_float32(x))
    if root == "DECIMAL":
        return lambda d: orjson.Fragment(format(d, "f"))
    if root in ("BINARY", "VARBINARY", "BYTES"):
        return lambda b: base64.b64encode(b).decode()
    if root == "DATE":
        return lambda d: d.isoformat()
    fsp = size or 0
    if root == "TIME":
        def time_text(us: int) -> str:
            sign, us = ("-" if us < 0 else ""), abs(us)
            seconds, fraction = divmod(us, 1_000_000)
            minutes, second = divmod(seconds, 60)
            hours, minute = divmod(minutes, 60)
            return f"{sign}{hours:02d}:{minute:02d}:{second:02d}{_fraction(fraction, fsp)}"
        return time_text
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        zone = "Z" if root == "TIMESTAMP_LTZ" else ""

        def stamp(moment: datetime) -> str:
            moment = moment.astimezone(UTC)
            return (f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d} "
                    f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
                    f"{_fraction(moment.microsecond, fsp)}{zone}")
        return stamp
    return None
