"""The Kafka Connect ``schema`` block of Flink CDC's ``debezium-json`` with
``include-schema.enabled``, from a typed layout (capture/typed_layout.py).

Flink CDC builds it with Kafka Connect's ``SchemaBuilder`` from its table schema
(``DebeziumJsonSerializationSchema.convertSchemaToDebeziumSchema``) and writes
``JsonConverter.asJsonSchema`` of it, re-read and written by Jackson. So, byte for byte:

* ``{"type":"struct","fields":[<before>,<after>],"optional":false}``: only ``before`` and
  ``after`` (each ``{"type":"struct","fields":[...],"optional":true,"field":...}``), no
  ``op`` or ``source``;
* each column ``{"type":..,"optional":..,"name":..,"version":..,"doc":..,"parameters":..,
  "default":..,"field":<column>}``, members absent where Connect has nothing: ``int16``
  (TINYINT, SMALLINT), ``int32``, ``int64``, ``float``, ``double``, ``boolean``, ``string``,
  ``bytes`` named ``io.debezium.data.Bits`` with ``{"length":"<n>"}`` (BINARY, VARBINARY,
  BYTES), ``bytes`` named ``org.apache.kafka.connect.data.Decimal`` with
  ``{"scale":..,"connect.decimal.precision":..}``, ``int32`` ``io.debezium.time.Date``,
  ``int64`` ``io.debezium.time.MicroTime`` (TIME), ``int64`` ``io.debezium.time.Timestamp``
  (TIMESTAMP(0..3)) or ``MicroTimestamp`` (4..9), ``string``
  ``io.debezium.time.ZonedTimestamp`` (TIMESTAMP_LTZ), ``array`` with ``items``;
* ``default``: the column default converted as Flink CDC's ``convertDefaultValue`` does
  (``Boolean.parseBoolean``, ``Short/Integer/Long.parseLong`` for the integer, DATE, TIME
  and TIMESTAMP types, so ``CURRENT_TIMESTAMP`` or ``2024-01-01`` there is left out, as
  Flink CDC leaves it out with a warning; a DECIMAL's unscaled value as base64 bytes; a
  BINARY default's UTF-8 bytes as base64; TIMESTAMP_LTZ and text as written).

The values in ``payload`` are the row images as without the schema (Flink CDC does not
convert them to the Connect types the schema names).
"""

from __future__ import annotations

import base64
import re
import struct
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

import orjson

from cdc_ingest.formats.jackson import jackson_json
from cdc_ingest.model.flink_types import twos_complement as _twos_complement
from cdc_ingest.model.flink_types import type_parts as _parts
from cdc_ingest.model.java_numbers import java_double

_JAVA_INT = re.compile(r"^[+-]?\d+$")
_JAVA_FLOAT = re.compile(r"^[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)[fFdD]?$")
_BOUNDS = {"int16": 1 << 15, "int32": 1 << 31, "int64": 1 << 63}


def _number(text: str, kind: str) -> int | None:
    """Java's ``Short/Integer/Long.parseLong``: a decimal integer in range, else None."""
    if not _JAVA_INT.match(text):
        return None
    value = int(text)
    bound = _BOUNDS[kind]
    return value if -bound <= value < bound else None


def _default(root: str, scale: int | None, text: str) -> Any:
    """The default as Flink CDC converts it, as a JSON fragment; None: left out."""
    if root == "BOOLEAN":
        return text.lower() == "true"
    if root in ("TINYINT", "SMALLINT"):
        return _number(text, "int16")
    if root in ("INT", "DATE"):
        return _number(text, "int32")
    if root in ("BIGINT", "TIME", "TIMESTAMP"):
        return _number(text, "int64")
    if root in ("FLOAT", "DOUBLE"):
        if not _JAVA_FLOAT.match(text.strip()):
            return None
        number = float(text.strip().rstrip("fFdD"))
        if root == "FLOAT":  # Float.parseFloat, then read back as a double by Jackson
            number = _to_float32(number)
        return orjson.Fragment(java_double(number).encode())
    if root == "DECIMAL":
        try:
            value = Decimal(text).quantize(Decimal(1).scaleb(-(scale or 0)), ROUND_HALF_UP)
        except InvalidOperation:
            return None
        unscaled = int(value.scaleb(scale or 0))
        return base64.b64encode(_twos_complement(unscaled)).decode()
    if root in ("BINARY", "VARBINARY", "BYTES"):
        return base64.b64encode(text.encode()).decode()
    return text


def _to_float32(value: float) -> float:
    """``Float.parseFloat`` then ``Float.toString``, read back as a double: the shortest
    decimal that is the same 32-bit float."""
    exact = struct.pack("f", value)
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        if struct.pack("f", float(text)) == exact:
            return float(text)
    return value


def _field_type(type_: str) -> dict[str, Any]:
    """The Connect schema of a type, without optional/default/doc (an array's items)."""
    if type_.startswith("ARRAY<") and type_.endswith(">"):
        return {"type": "array", "items": {**_field_type(type_[6:-1]), "optional": False}}
    root, size, scale = _parts(type_)
    simple = {"TINYINT": "int16", "SMALLINT": "int16", "INT": "int32", "BIGINT": "int64",
              "BOOLEAN": "boolean", "FLOAT": "float", "DOUBLE": "double"}
    if root in simple:
        return {"type": simple[root]}
    named: dict[str, tuple[str, str]] = {
        "DATE": ("int32", "io.debezium.time.Date"),
        "TIME": ("int64", "io.debezium.time.MicroTime"),
        "TIMESTAMP": ("int64", "io.debezium.time.MicroTimestamp" if (
            size if size is not None else 6) > 3 else "io.debezium.time.Timestamp"),
        "TIMESTAMP_LTZ": ("string", "io.debezium.time.ZonedTimestamp"),
    }
    if root in named:
        kind, name = named[root]
        return {"type": kind, "name": name, "version": 1}
    if root == "DECIMAL":
        return {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
                "parameters": {"scale": str(scale or 0),
                               "connect.decimal.precision": str(size or 10)}}
    if root in ("BINARY", "VARBINARY", "BYTES"):
        length = 2147483647 if root == "BYTES" else (size or 0)
        return {"type": "bytes", "name": "io.debezium.data.Bits", "version": 1,
                "parameters": {"length": str(length)}}
    return {"type": "string"}


def column_schema(column: dict[str, Any]) -> dict[str, Any]:
    """One column's member of the ``before``/``after`` struct."""
    type_ = str(column["type"])
    base = _field_type(type_)
    out: dict[str, Any] = {"type": base.pop("type")}
    if "items" in base:
        out["items"] = base.pop("items")
    out["optional"] = bool(column.get("nullable", True))
    for member in ("name", "version"):
        if member in base:
            out[member] = base[member]
    if column.get("comment"):
        out["doc"] = column["comment"]
    if "parameters" in base:
        out["parameters"] = base["parameters"]
    default = column.get("default")
    if default is not None:
        root, _, scale = _parts(type_)
        converted = _default(root, scale, str(default))
        if converted is not None:
            out["default"] = converted
    out["field"] = column["name"]
    return out


def schema_block(columns: list[dict[str, Any]]) -> bytes:
    """The whole ``schema`` member's value, as Flink CDC's Jackson writes it."""
    fields = [column_schema(c) for c in columns]
    block = {"type": "struct", "fields": [
        {"type": "struct", "fields": fields, "optional": True, "field": "before"},
        {"type": "struct", "fields": fields, "optional": True, "field": "after"},
    ], "optional": False}
    return jackson_json(orjson.dumps(block))
