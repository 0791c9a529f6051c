"""JSON values as verify holds and compares them.

Both sides of a comparison are plain parsed JSON, except that numbers with a fraction or an
exponent stay their exact text (:class:`Num`), so ``0.50`` (DECIMAL(3,2)) is not ``0.5``.
The MySQL side marks what the contract defines by value rather than by spelling: FLOAT and
DOUBLE numbers (any spelling of the same IEEE value is the same JSON number) and GEOMETRY
strings (GeoJSON-style text, compared as JSON). Everything else must match exactly, types
included: ``true`` is not ``1`` and the number ``1.5`` is not the string ``"1.5"``.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import orjson


class Num(str):
    """A JSON number with a fraction or an exponent, kept as its exact text."""

    __slots__ = ()


class Float32Num(Num):
    """A FLOAT value: equal to a number of the same 32-bit float that is no longer than it."""

    __slots__ = ()


class Float64Num(Num):
    """A DOUBLE value: equal to any number of the same 64-bit float."""

    __slots__ = ()


class GeoText(str):
    """A GEOMETRY value: GeoJSON-style text, equal to a string holding the same JSON."""

    __slots__ = ()


def parse(raw: bytes | str) -> Any:
    """Kafka bytes -> JSON value, non-integer numbers as :class:`Num`."""
    return json.loads(raw, parse_float=Num)


def _fragment(value: Any) -> Any:
    if isinstance(value, Num):
        return orjson.Fragment(str(value))
    if isinstance(value, str):
        return str(value)
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def _wide_ints(value: Any) -> Any:
    """``value`` with every integer orjson cannot write (beyond 64 bits: a DECIMAL(65,0))
    as its exact text."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if -(1 << 63) <= value < (1 << 64) else orjson.Fragment(str(value))
    if isinstance(value, dict):
        return {k: _wide_ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_wide_ints(v) for v in value]
    return value


def dumps(value: Any) -> bytes:
    """Compact JSON with every number in its exact text (keys keep their order)."""
    option = orjson.OPT_PASSTHROUGH_SUBCLASS
    try:
        out = orjson.dumps(value, default=_fragment, option=option)
    except orjson.JSONEncodeError:  # an integer beyond 64 bits (rare: it costs a second pass)
        out = orjson.dumps(_wide_ints(value), default=_fragment, option=option)
    # orjson's result keeps its whole output buffer (kilobytes) allocated; a copy does not,
    # which matters for the millions of keys a materialized topic holds.
    return bytes(memoryview(out))


def render(value: Any, limit: int = 160) -> str:
    """Short one-line JSON for reports."""
    text = dumps(value).decode("utf-8", errors="replace")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def float32(value: float) -> float:
    """``value`` rounded to the nearest 32-bit float (OverflowError beyond its range)."""
    result: float = struct.unpack("<f", struct.pack("<f", value))[0]
    return result


def significant_digits(text: str) -> int:
    """How many significant digits a JSON number text has (``0.0120`` -> 2, ``0`` -> 1)."""
    mantissa = text.lstrip("+-").lower().partition("e")[0].replace(".", "")
    return max(len(mantissa.strip("0")), 1)


def _is_number(value: Any) -> bool:
    return isinstance(value, Num) or (isinstance(value, int) and not isinstance(value, bool))


def _same_float32(expected: Float32Num, actual: Any) -> bool:
    if not _is_number(actual):
        return False
    try:
        same_bits = float32(float(actual)) == float32(float(expected))
    except OverflowError:
        return False
    return same_bits and significant_digits(str(actual)) <= significant_digits(expected)


def _same_geometry(expected: GeoText, actual: Any) -> bool:
    if type(actual) is not str:
        return False
    try:
        return bool(json.loads(actual) == json.loads(expected))
    except ValueError:
        return False


def same(expected: Any, actual: Any) -> bool:
    """``actual`` (parsed from Kafka) is the JSON value ``expected`` (from MySQL)."""
    kind = type(expected)
    if kind is str or kind is int:  # the common case first: exact type and value
        return type(actual) is kind and bool(actual == expected)
    if expected is None or kind is bool:
        return actual is expected
    if kind is dict:
        return (type(actual) is dict and actual.keys() == expected.keys()
                and all(same(v, actual[k]) for k, v in expected.items()))
    if kind is list:
        return (type(actual) is list and len(actual) == len(expected)
                and all(same(e, a) for e, a in zip(expected, actual, strict=True)))
    if kind is Float32Num:
        return _same_float32(expected, actual)
    if kind is Float64Num:
        return _is_number(actual) and float(actual) == float(expected)
    if kind is Num:
        return isinstance(actual, Num) and str(actual) == str(expected)
    if kind is GeoText:
        return _same_geometry(expected, actual)
    return False
