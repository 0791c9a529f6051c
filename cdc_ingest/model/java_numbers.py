"""Numbers spelled as Java writes them, where cdc-ingest's output must equal a Java tool's."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any


def java_double(value: float) -> str:
    """``Double.toString`` (shortest digits): ``1.0``, ``3.14``, ``1.0E10``, ``1.5E-5``."""
    if math.isnan(value):
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if str(value).startswith("-") else "0.0"
    if 1e-3 <= abs(value) < 1e7:
        text = repr(value)
        return text if "." in text else text + ".0"
    shortest = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, shortest.digits))
    power = int(shortest.exponent) + len(digits) - 1
    return f"{'-' if value < 0 else ''}{digits[0]}.{digits[1:] or '0'}E{power}"


def geojson_number(value: float) -> str:
    """A coordinate as Flink CDC's geometry text has it: Esri's ``asGeoJson`` writes
    ``%.17g`` without trailing zeros, and Jackson reads that back and writes it again, so an
    integral coordinate below 1e17 is an integer (``1``), any other ``Double.toString``."""
    if value.is_integer() and abs(value) < 1e17:
        return str(int(value))
    return java_double(value)


def geojson_text(body: Any) -> str:
    """A geometry's GeoJSON-style object as compact JSON, coordinates as
    :func:`geojson_number` spells them."""
    if isinstance(body, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{geojson_text(v)}" for k, v in body.items()) + "}"
    if isinstance(body, list):
        return "[" + ",".join(geojson_text(v) for v in body) + "]"
    if isinstance(body, float):
        return geojson_number(body)
    return json.dumps(body)
