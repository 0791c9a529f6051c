"""The ``avro-confluent`` format: Avro schemas derived from a typed layout the way Flink's
``avro-confluent`` format derives them, rows to Avro binary and back, the Confluent framing.

**Schemas** (docs/output-contract.md, "avro-confluent"): Flink 2.0's
``AvroSchemaConverter.convertToSchema`` (legacy timestamp mapping) of the columns' Flink CDC
types (capture/flinktypes.py): a record named ``record`` in namespace
``org.apache.flink.avro.generated``; a nullable column is the union ``["null", T]`` with
``"default": null``, a NOT NULL one (every key column) ``T`` without default. Where Flink 2.0
cannot derive a type (TIME/TIMESTAMP beyond millisecond precision, TIMESTAMP_LTZ) the schema
uses the Avro standard's type of the exact value (``timestamp-micros``, ``timestamp-millis``
for TIMESTAMP_LTZ(0..3)); never a truncated value. MySQL's TIME, a signed duration up to
838:59:59.999999, is a ``long`` of microseconds (Avro's time types hold one day only). The
text is compact JSON in the order Java's ``Schema.toString()`` writes, so equal tables give
equal text and equal schema ids.

**Values**: :meth:`RowCodec.encode` takes the changelog's JSON form (changelog-format.md),
:meth:`RowCodec.to_json` gives it back (verify, watch): exact inverses, except a DECIMAL
beyond 38 digits (Flink CDC's STRING: its text). What Avro cannot carry is refused
(:class:`AvroValueError`): a null (a zero date) in a NOT NULL column.

**Framing** (Confluent's wire format): byte 0 is 0, bytes 1-4 the schema id (big-endian),
then the Avro binary encoding of the record.
"""

from __future__ import annotations

import base64
import io
import json
import re
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import fastavro
import msgspec
import orjson

from cdc_ingest.model.flink_types import shortest_float32, twos_complement, type_parts

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


def record_schema(columns: Sequence[tuple[str, str, bool]]) -> dict[str, Any]:
    """The record schema of ``(name, Flink CDC type, nullable)`` columns, in their order."""
    fields: list[dict[str, Any]] = []
    for name, type_, nullable in columns:
        if not _NAME.match(name):
            raise AvroTypeError(
                f"column {name!r} is not a valid Avro field name (letters, digits and _, not "
                "starting with a digit)")
        field: dict[str, Any] = {"name": name, "type": avro_type(type_)}
        if nullable:
            field = {"name": name, "type": ["null", field["type"]], "default": None}
        fields.append(field)
    return {"type": "record", "name": RECORD_NAME, "namespace": NAMESPACE, "fields": fields}


def schema_text(schema: dict[str, Any]) -> str:
    """The schema as the registry gets it: compact JSON, keys in Java's order."""
    return json.dumps(schema, separators=(",", ":"))


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
    return (moment - _EPOCH) // timedelta(microseconds=1)


def _decimal_bytes(precision: int, scale: int) -> ToAvro:
    limit = 10 ** precision

    def convert(value: Any) -> bytes:
        number = Decimal(value)
        unscaled = number.scaleb(scale)
        if unscaled != unscaled.to_integral_value() or not -limit < unscaled < limit:
            raise ValueError(f"{value} does not fit DECIMAL({precision}, {scale})")
        return twos_complement(int(unscaled))
    return convert


def _to_avro(type_: str) -> ToAvro | None:
    """The converter of a column's JSON-form value (decoded with :data:`decode_json`), None
    where the value goes as it is."""
    if type_.startswith("ARRAY<"):
        inner = _to_avro(type_[6:-1])
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


def _to_json(type_: str) -> ToJson | None:
    """The converter of a column's Avro value (as fastavro reads it, logical types applied)
    back to the changelog's JSON form; None where it is the same."""
    if type_.startswith("ARRAY<"):
        inner = _to_json(type_[6:-1])
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


class RowCodec:
    """One record schema (a table layout's key or value columns): JSON form <-> Avro."""

    def __init__(self, columns: Sequence[tuple[str, str, bool]]) -> None:
        self.columns = tuple(columns)
        self.schema = record_schema(self.columns)
        self.text = schema_text(self.schema)
        self.parsed = fastavro.parse_schema(self.schema)
        self._to_avro = [(name, _to_avro(type_), nullable)
                         for name, type_, nullable in self.columns]
        self._to_json = [(name, _to_json(type_)) for name, type_, _ in self.columns]

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

    def to_json(self, payload: bytes, writer: Any | None = None) -> bytes:
        """An Avro payload as the JSON form's row object (the json format's value)."""
        record = self.read(payload, writer)
        out: dict[str, Any] = {}
        for name, convert in self._to_json:
            value = record.get(name)
            out[name] = value if value is None or convert is None else convert(value)
        return orjson.dumps(out)
