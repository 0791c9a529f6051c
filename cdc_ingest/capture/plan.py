"""The compiled decoding plan of a row image layout: one opcode per column, run in C by
``_rowdecode.pyx``; the rare types call the same Python helpers as the reference decoder."""

from __future__ import annotations

from typing import Any

import orjson

from cdc_ingest.capture import values as binlog_values
from cdc_ingest.capture.binlog_schema import (
    LENGTH_PREFIXED,
    ColumnSpec,
    FieldType,
    JsonText,
    TableSchema,
    UnsupportedColumn,
)
from cdc_ingest.capture.geometry import geometry_json
from cdc_ingest.capture.mariadb_types import PLUGIN_TYPES
from cdc_ingest.capture.mysql_json import Compiled

try:
    # the compiled decoder and its encoder twin (_rowencode.pyx) are built together
    from cdc_ingest.capture import _rowdecode, _rowencode  # type: ignore[attr-defined]  # noqa: F401
except ImportError:  # built without a C compiler or Cython: the pure-Python decoder serves
    _rowdecode = None
try:
    from cdc_ingest.capture import _jsontext  # type: ignore[attr-defined]
except ImportError:  # likewise: mysql_json.json_text reads binary JSON
    _jsontext = None

# Opcodes of _rowdecode.pyx (keep in step with its DEF lines).
OP_I8, OP_U8, OP_I16, OP_U16, OP_I24, OP_U24, OP_I32, OP_U32, OP_I64, OP_U64 = range(1, 11)
OP_BOOL, OP_DOUBLE, OP_UTF8, OP_DECIMAL, OP_DATE, OP_DATETIME2, OP_TIMESTAMP2 = range(11, 18)
OP_TIME2, OP_YEAR, OP_ENUM, OP_PY_FIXED, OP_PY_VAR, OP_PY_PAYLOAD = range(18, 24)

_INT_OPS = {
    (FieldType.TINY, False): OP_I8,
    (FieldType.TINY, True): OP_U8,
    (FieldType.SHORT, False): OP_I16,
    (FieldType.SHORT, True): OP_U16,
    (FieldType.INT24, False): OP_I24,
    (FieldType.INT24, True): OP_U24,
    (FieldType.LONG, False): OP_I32,
    (FieldType.LONG, True): OP_U32,
    (FieldType.LONGLONG, False): OP_I64,
    (FieldType.LONGLONG, True): OP_U64,
}

PlanOp = tuple[int, int, int, Any]  # opcode, a, b, Python object (helper, labels or fallback)


def compiled_available() -> bool:
    """Whether the C extension was built (``pip install`` with a C compiler)."""
    return _rowdecode is not None


def compiled_json_text() -> JsonText | None:
    """The compiled twin of :func:`cdc_ingest.capture.mysql_json.json_text`, if built."""
    return None if _jsontext is None else _jsontext.json_text


def compiled_json_reader() -> Compiled | None:
    """The compiled reader of binary JSON documents' parts (``mysql_json.Compiled``), if
    built: a partial JSON update's document tree reads its bytes with it."""
    return None if _jsontext is None else _jsontext


def _payload_op(col: ColumnSpec, width: int, json_text: JsonText) -> PlanOp:
    if col.type == FieldType.GEOMETRY:
        return OP_PY_PAYLOAD, width, 0, geometry_json
    if col.type == FieldType.JSON:
        return OP_PY_PAYLOAD, width, 0, json_text
    if col.type == FieldType.VECTOR:
        return OP_PY_PAYLOAD, width, 0, binlog_values.vector
    if col.kind:
        return OP_PY_PAYLOAD, width, 0, PLUGIN_TYPES[col.kind][1]
    if col.encoding in (None, "binary"):
        if col.type == FieldType.STRING:
            length = col.length
            return OP_PY_PAYLOAD, width, 0, lambda b: binlog_values.fixed_binary(b, length)
        return OP_PY_PAYLOAD, width, 0, binlog_values.base64_text
    if col.encoding == "utf8":
        return OP_UTF8, width, 0, None
    encoding = col.encoding
    return OP_PY_PAYLOAD, width, 0, lambda b: binlog_values.text(b, encoding)


def _column_op(col: ColumnSpec, json_text: JsonText) -> PlanOp:
    """One column's opcode; the same cases, in the same order, as :func:`_column_lines`."""
    t = col.type
    int_op = _INT_OPS.get((t, col.unsigned))
    if int_op is not None:
        return (OP_BOOL if col.as_boolean and t == FieldType.TINY else int_op), 0, 0, None
    if t == FieldType.DOUBLE:
        return OP_DOUBLE, 0, 0, None
    if t == FieldType.FLOAT:
        return OP_PY_FIXED, 4, 0, binlog_values.float32
    fsp = col.fsp
    if t == FieldType.NEWDECIMAL:
        return (OP_DECIMAL, col.precision, col.scale,
                binlog_values.decimal_reader(col.precision, col.scale))
    if t == FieldType.DATE:
        return OP_DATE, 0, 0, lambda raw, off: (binlog_values.date(raw, off), off + 3)
    if t == FieldType.DATETIME2:
        return OP_DATETIME2, fsp, 0, lambda raw, off: binlog_values.datetime2(raw, off, fsp)
    if t == FieldType.TIMESTAMP2:
        return OP_TIMESTAMP2, fsp, 0, lambda raw, off: binlog_values.timestamp2(raw, off, fsp)
    if t == FieldType.TIME2:
        return OP_TIME2, fsp, 0, lambda raw, off: binlog_values.time2(raw, off, fsp)
    if t == FieldType.DATETIME:
        return OP_PY_FIXED, 8, 0, binlog_values.datetime_v1
    if t == FieldType.TIMESTAMP:
        return OP_PY_FIXED, 4, 0, binlog_values.timestamp_v1
    if t == FieldType.TIME:
        return OP_PY_FIXED, 3, 0, binlog_values.time_v1
    if t == FieldType.YEAR:
        return OP_YEAR, 0, 0, None
    if t == FieldType.BIT:
        size, bits = (col.bits + 7) // 8, col.bits
        return OP_PY_VAR, 0, 0, lambda raw, off: binlog_values.bit_value(raw, off, size, bits)
    if t == FieldType.ENUM:
        return OP_ENUM, col.length, 0, tuple(col.labels)
    if t == FieldType.SET:
        size, labels = col.length, col.labels

        def set_value(raw: bytes, off: int) -> list[str]:
            return binlog_values.set_labels(int.from_bytes(raw[off:off + size], "little"), labels)

        return OP_PY_FIXED, size, 0, set_value
    if t in (FieldType.VARCHAR, FieldType.VAR_STRING, FieldType.STRING):
        return _payload_op(col, 2 if col.length > 255 else 1, json_text)
    if t in LENGTH_PREFIXED:
        return _payload_op(col, col.length, json_text)
    raise UnsupportedColumn(f"binlog column type code {t} is not supported", col.name)


def compile_plan(schema: TableSchema, json_text: JsonText) -> Any:
    """The C decoding plan of one row image layout (needs :func:`compiled_available`).

    Its ``decode(raw, off)`` is a :data:`RowDecoder`; ``decode_event(raw, off, end, kind)``
    decodes every row of a rows event in one call.
    """
    if _rowdecode is None:
        raise RuntimeError("the compiled row decoder is not built")
    ops = [_column_op(col, json_text) for col in schema.columns]
    return _rowdecode.RowPlan(
        [o[0] for o in ops], [o[1] for o in ops], [o[2] for o in ops], [o[3] for o in ops],
        orjson.Fragment,
    )


