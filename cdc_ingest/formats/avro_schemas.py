"""The ``avro-confluent`` format: Avro schemas derived from a typed layout the way Flink's
``avro-confluent`` format derives them, rows to Avro binary and back, the Confluent framing.

**Schemas** (docs/output-contract.md, "avro-confluent"): Flink 2.0's
``AvroSchemaConverter.convertToSchema`` (legacy timestamp mapping) of the columns' Flink CDC
types (capture/typed_layout.py): a record named ``record`` in namespace
``org.apache.flink.avro.generated``; a nullable column is the union ``["null", T]`` with
``"default": null``, a NOT NULL one (every key column) ``T`` without default. Where Flink 2.0
cannot derive a type (TIME/TIMESTAMP beyond millisecond precision, TIMESTAMP_LTZ) the schema
uses the Avro standard's type of the exact value (``timestamp-micros``, ``timestamp-millis``
for TIMESTAMP_LTZ(0..3)); never a truncated value. MySQL's TIME, a signed duration up to
838:59:59.999999, is a ``long`` of microseconds (Avro's time types hold one day only). The
text is compact JSON in the order Java's ``Schema.toString()`` writes, so equal tables give
equal text and equal schema ids.

**Values**: :meth:`RowCodec.encode` takes the changelog's JSON form (changelog-format.md);
:meth:`RowCodec.to_json` gives it back (verify, watch): exact inverses, except a DECIMAL
beyond 38 digits (Flink CDC's STRING: its text). What Avro cannot carry is refused
(:class:`AvroValueError`): a null (a zero date) in a NOT NULL column.

**Framing** (Confluent's wire format): byte 0 is 0, bytes 1-4 the schema id (big-endian),
then the Avro binary encoding of the record.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import fastavro
import msgspec
import orjson

from cdc_ingest.formats.avro_values import to_avro as _to_avro
from cdc_ingest.formats.avro_values import to_json as _to_json
from cdc_ingest.model.flink_types import type_parts

RECORD_NAME = "record"
NAMESPACE = "org.apache.flink.avro.generated"
MAGIC = b"\x00"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_EPOCH_DAY = date(1970, 1, 1).toordinal()
_EPOCH = datetime(1970, 1, 1)
# a JSON row with every non-integer number as its exact Decimal
decode_json = msgspec.json.Decoder(float_hook=Decimal).decode


class AvroTypeError(ValueError):
    """A column the Avro format cannot describe (its name); the message names it and the fix."""


class AvroValueError(ValueError):
    """A value the column's Avro type cannot carry; ``column`` and the message say which."""

    def __init__(self, column: str, text: str) -> None:
        super().__init__(text)
        self.column = column


def frame(schema_id: int, payload: bytes) -> bytes:
    return MAGIC + schema_id.to_bytes(4, "big") + payload


def unframe(message: bytes) -> tuple[int, bytes]:
    """(schema id, Avro payload) of a message in Confluent's wire format."""
    if len(message) < 5 or message[:1] != MAGIC:
        raise ValueError("not in Confluent's wire format (magic byte 0, 4-byte schema id)")
    return int.from_bytes(message[1:5], "big"), message[5:]


# -- schemas ----------------------------------------------------------------------------


def avro_type(type_: str) -> Any:
    """The Avro type of a Flink CDC type (not null)."""
    if type_.startswith("ARRAY<") and type_.endswith(">"):
        return {"type": "array", "items": ["null", avro_type(type_[6:-1])]}
    root, size, scale = type_parts(type_)
    simple = {"BOOLEAN": "boolean", "TINYINT": "int", "SMALLINT": "int", "INT": "int",
              "BIGINT": "long", "FLOAT": "float", "DOUBLE": "double", "CHAR": "string",
              "VARCHAR": "string", "STRING": "string", "BINARY": "bytes",
              "VARBINARY": "bytes", "BYTES": "bytes"}
    if root in simple:
        return simple[root]
    if root == "DECIMAL":
        return {"type": "bytes", "logicalType": "decimal", "precision": size or 10,
                "scale": scale or 0}
    if root == "DATE":
        return {"type": "int", "logicalType": "date"}
    fsp = size or 0
    if root == "TIME":
        # MySQL's TIME is a signed duration up to 838:59:59.999999; Avro's time-millis and
        # time-micros hold one day: a plain long of microseconds holds every value exactly
        return "long"
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return {"type": "long",
                "logicalType": "timestamp-millis" if fsp <= 3 else "timestamp-micros"}
    raise AvroTypeError(f"the type {type_} has no Avro mapping")


Columns = Sequence[tuple[str, str, bool] | tuple[str, str, bool, str | None]]
_NO_DEFAULT = object()


def record_schema(columns: Columns) -> dict[str, Any]:
    """The record schema of ``(name, Flink CDC type, nullable[, default as the DDL spells
    it])`` columns, in their order. A column with a constant default gets it as the field's
    default (first in its union), so a reader of this schema reads older messages, written
    before the column was added, with the value MySQL gave the rows then; a nullable column
    without one is Flink's ``["null", T]`` with default null."""
    fields: list[dict[str, Any]] = []
    for name, type_, nullable, *more in columns:
        if not _NAME.match(name):
            raise AvroTypeError(
                f"column {name!r} is not a valid Avro field name (letters, digits and _, not "
                "starting with a digit)")
        kind = avro_type(type_)
        default = _field_default(type_, kind, more[0]) if more else _NO_DEFAULT
        field: dict[str, Any] = {"name": name, "type": kind}
        if default is not _NO_DEFAULT:
            field = {"name": name, "type": [kind, "null"] if nullable else kind,
                     "default": default}
        elif nullable:
            field = {"name": name, "type": ["null", kind], "default": None}
        fields.append(field)
    return {"type": "record", "name": RECORD_NAME, "namespace": NAMESPACE, "fields": fields}


def _field_default(type_: str, kind: Any, text: str | None) -> Any:
    """A column default as an Avro field default (JSON), or ``_NO_DEFAULT`` where it is not
    a constant this mapping can state exactly (CURRENT_TIMESTAMP, expressions, binary, SET,
    TIMESTAMP_LTZ, which the session's time zone decides)."""
    root = type_parts(type_)[0]
    if text is None or root in ("BINARY", "VARBINARY", "BYTES", "TIMESTAMP_LTZ") or \
            type_.startswith("ARRAY<") or (root != "STRING" and "(" in text) or \
            (root == "TIMESTAMP" and not text[:1].isdigit()):
        return _NO_DEFAULT
    try:
        if root == "BOOLEAN":
            return {"1": True, "0": False}[text.lower().replace("true", "1")
                                            .replace("false", "0")]
        value: Any = text if root in ("CHAR", "VARCHAR", "STRING", "DATE", "TIME",
                                      "TIMESTAMP") else decode_json(text.encode())
        convert = _to_avro(type_)
        value = convert(value) if convert is not None else value
        if isinstance(value, bytes):  # a decimal: Avro states bytes as ISO-8859-1 text
            return value.decode("latin-1")
        return value if kind not in ("int", "long") or isinstance(value, int) \
            else _NO_DEFAULT
    except (ValueError, KeyError, ArithmeticError, TypeError, msgspec.DecodeError):
        return _NO_DEFAULT


def schema_text(schema: dict[str, Any]) -> str:
    """The schema as the registry gets it: compact JSON, keys in Java's order."""
    return json.dumps(schema, separators=(",", ":"))


class RowCodec:
    """One record schema (a table layout's key or value columns): JSON form <-> Avro."""

    def __init__(self, columns: Columns) -> None:
        self.columns = tuple(columns)
        self.schema = record_schema(self.columns)
        self.text = schema_text(self.schema)
        self.parsed = fastavro.parse_schema(self.schema)
        self._to_avro = [(c[0], _to_avro(c[1]), c[2]) for c in self.columns]
        self._to_json = [(c[0], _to_json(c[1])) for c in self.columns]

    def datum(self, row: dict[str, Any]) -> dict[str, Any]:
        """A JSON-form row (:data:`decode_json`) as the record's Avro datum."""
        out: dict[str, Any] = {}
        for name, convert, nullable in self._to_avro:
            value = row.get(name)
            if value is None:
                if not nullable:
                    raise AvroValueError(name, (
                        f"column {name} is null" if name in row else
                        f"column {name} is missing") + " but its Avro field is not nullable "
                        "(a NOT NULL column; a zero date reads as null)")
                out[name] = None
                continue
            if convert is not None:
                try:
                    value = convert(value)
                except (ValueError, TypeError, ArithmeticError) as exc:
                    raise AvroValueError(name, f"column {name}: {exc}") from None
            out[name] = value
        return out

    def encode(self, row: dict[str, Any]) -> bytes:
        """The Avro binary encoding of a JSON-form row."""
        buffer = io.BytesIO()
        try:
            fastavro.schemaless_writer(buffer, self.parsed, self.datum(row))
        except (ValueError, TypeError, OverflowError) as exc:
            if isinstance(exc, AvroValueError):
                raise
            raise AvroValueError("?", f"the row does not fit its Avro schema: {exc}") from None
        return buffer.getvalue()

    def read(self, payload: bytes, writer: Any | None = None) -> dict[str, Any]:
        """An Avro payload (written with ``writer``, a parsed schema; default this one) as
        fastavro reads it into this schema."""
        return fastavro.schemaless_reader(io.BytesIO(payload), writer or self.parsed,
                                          self.parsed)  # type: ignore[return-value]

    def to_json(self, payload: bytes, writer: Any | None = None,
                numbers: frozenset[str] = frozenset()) -> bytes:
        """An Avro payload as the JSON form's row object (the json format's value);
        ``numbers``: STRING columns that hold a DECIMAL beyond 38 digits, a JSON number."""
        record = self.read(payload, writer)
        out: dict[str, Any] = {}
        for name, convert in self._to_json:
            value = record.get(name)
            if name in numbers and isinstance(value, str):
                value = orjson.Fragment(value)
            out[name] = value if value is None or convert is None else convert(value)
        return orjson.dumps(out)
