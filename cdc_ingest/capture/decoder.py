"""Row decoder compiled once per table from its binlog TableMap.

python-mysql-replication decodes each value through a chain of type checks, where most of
capture's time went (decision 0001). Here each table gets one generated function with the
column types resolved up front: straight-line ``struct`` unpacks at running offsets, helpers
only for the types that need them. It returns the row's values already in their output JSON form.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from typing import Any

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
from cdc_ingest.capture.mysql_json import json_text as python_json_text
from cdc_ingest.capture.plan import compile_plan, compiled_available, compiled_json_text

RowDecoder = Callable[[bytes, int], tuple[list[Any], int]]
RowPair = tuple[list[Any] | None, list[Any] | None]
# (event buffer, offset of the first row, end of the rows, kind) -> (before, after) pairs;
# kind is INSERT, UPDATE or DELETE below
EventDecoder = Callable[[bytes, int, int, int], list[RowPair]]

INSERT, UPDATE, DELETE = 0, 1, 2
# Which decoder capture uses: "compiled" (the C plan; the default when it is built) or
# "python" (the reference path: generated Python, same records, slower).
DECODER_ENV = "CDC_INGEST_DECODER"

_FIXED = {
    # type, unsigned -> (struct format, size)
    (FieldType.TINY, False): ("b", 1),
    (FieldType.TINY, True): ("B", 1),
    (FieldType.SHORT, False): ("h", 2),
    (FieldType.SHORT, True): ("H", 2),
    (FieldType.LONG, False): ("i", 4),
    (FieldType.LONG, True): ("I", 4),
    (FieldType.LONGLONG, False): ("q", 8),
    (FieldType.LONGLONG, True): ("Q", 8),
    (FieldType.DOUBLE, False): ("d", 8),
    (FieldType.DOUBLE, True): ("d", 8),
}



_HELPERS = (
    "float32", "decimal_json", "date", "datetime2", "timestamp2", "time2", "datetime_v1",
    "timestamp_v1", "time_v1", "year", "bit_value", "enum_label", "set_labels",
    "fixed_binary", "base64_text", "text", "vector",
)


def _length_read(width: int) -> list[str]:
    if width == 1:
        return ["n = raw[off]; off += 1"]
    return [f"n = int.from_bytes(raw[off:off + {width}], 'little'); off += {width}"]


def _payload(col: ColumnSpec, i: int, width: int) -> list[str]:
    """Lines reading a length-prefixed value into ``v{i}``."""
    lines = _length_read(width)
    lines.append("b = raw[off:off + n]; off += n")
    if col.type == FieldType.GEOMETRY:
        lines.append(f"v{i} = geometry_json(b)")
    elif col.type == FieldType.JSON:
        lines.append(f"v{i} = json_text(b)")
    elif col.type == FieldType.VECTOR:
        lines.append(f"v{i} = vector(b)")
    elif col.kind:
        lines.append(f"v{i} = {col.kind}_text(b)")
    elif col.encoding in (None, "binary"):
        if col.type == FieldType.STRING:
            lines.append(f"v{i} = fixed_binary(b, {col.length})")
        else:
            lines.append(f"v{i} = base64_text(b)")
    elif col.encoding == "utf8":
        lines.append(f"v{i} = b.decode('utf-8')")
    else:
        lines.append(f"v{i} = text(b, {col.encoding!r})")
    return lines


def _column_lines(col: ColumnSpec, i: int, consts: dict[str, Any]) -> list[str]:
    t = col.type
    fixed = _FIXED.get((t, col.unsigned))
    if fixed is not None:
        fmt, size = fixed
        consts[f"u{i}"] = struct.Struct("<" + fmt).unpack_from
        value = f"u{i}(raw, off)[0]"
        if col.as_boolean and t == FieldType.TINY:
            value = f"{value} != 0"
        return [f"v{i} = {value}; off += {size}"]
    if t == FieldType.INT24:
        signed = "False" if col.unsigned else "True"
        return [f"v{i} = int.from_bytes(raw[off:off + 3], 'little', signed={signed}); off += 3"]
    if t == FieldType.FLOAT:
        return [f"v{i} = float32(raw, off); off += 4"]
    if t == FieldType.NEWDECIMAL:
        size = binlog_values.decimal_size(col.precision, col.scale)
        consts[f"d{i}"] = binlog_values.decimal_reader(col.precision, col.scale)
        return [f"v{i} = d{i}(raw[off:off + {size}]); off += {size}"]
    if t == FieldType.DATE:
        return [f"v{i} = date(raw, off); off += 3"]
    if t == FieldType.DATETIME2:
        return [f"v{i}, off = datetime2(raw, off, {col.fsp})"]
    if t == FieldType.TIMESTAMP2:
        return [f"v{i}, off = timestamp2(raw, off, {col.fsp})"]
    if t == FieldType.TIME2:
        return [f"v{i}, off = time2(raw, off, {col.fsp})"]
    if t == FieldType.DATETIME:
        return [f"v{i} = datetime_v1(raw, off); off += 8"]
    if t == FieldType.TIMESTAMP:
        return [f"v{i} = timestamp_v1(raw, off); off += 4"]
    if t == FieldType.TIME:
        return [f"v{i} = time_v1(raw, off); off += 3"]
    if t == FieldType.YEAR:
        return [f"v{i} = year(raw, off); off += 1"]
    if t == FieldType.BIT:
        size = (col.bits + 7) // 8
        return [f"v{i}, off = bit_value(raw, off, {size}, {col.bits})"]
    if t == FieldType.ENUM:
        consts[f"l{i}"] = col.labels
        return [
            f"v{i} = enum_label(int.from_bytes(raw[off:off + {col.length}], 'little'), l{i});"
            f" off += {col.length}"
        ]
    if t == FieldType.SET:
        consts[f"l{i}"] = col.labels
        return [
            f"v{i} = set_labels(int.from_bytes(raw[off:off + {col.length}], 'little'), l{i});"
            f" off += {col.length}"
        ]
    if t in (FieldType.VARCHAR, FieldType.VAR_STRING, FieldType.STRING):
        return _payload(col, i, 2 if col.length > 255 else 1)
    if t in LENGTH_PREFIXED:
        return _payload(col, i, col.length)
    raise UnsupportedColumn(f"binlog column type code {t} is not supported", col.name)


def _source(schema: TableSchema, consts: dict[str, Any]) -> str:
    count = len(schema.columns)
    nbytes = (count + 7) // 8
    lines = ["def decode(raw, off):"]
    for k in range(nbytes):
        lines.append(f"    m{k} = raw[off + {k}]")
    lines.append(f"    off += {nbytes}")
    for i, col in enumerate(schema.columns):
        lines.append(f"    if m{i >> 3} & {1 << (i & 7)}:")
        lines.append(f"        v{i} = None")
        lines.append("    else:")
        lines.append(f"        c = {i}")
        lines.extend("        " + line for line in _column_lines(col, i, consts))
    values = ", ".join(f"v{i}" for i in range(count))
    lines.append(f"    return [{values}], off")
    return "\n".join(lines)


def compile_decoder(schema: TableSchema, json_text: JsonText) -> RowDecoder:
    """Build the decoder of one row image (null bitmap, then the non-null values).

    It assumes every column is present (``binlog_row_image=FULL``); the reader checks the
    columns-present bitmap before calling it.
    """
    namespace: dict[str, Any] = {
        name: getattr(binlog_values, name)
        for name in _HELPERS
    }
    namespace["geometry_json"] = geometry_json
    namespace.update((f"{kind}_text", text) for kind, (_, text) in PLUGIN_TYPES.items())
    namespace["json_text"] = json_text
    source = _source(schema, namespace)
    code = compile(source, f"<decoder {schema.db}.{schema.table}>", "exec")
    exec(code, namespace)
    decoder: RowDecoder = namespace["decode"]
    return decoder


def python_event_decoder(decode: RowDecoder) -> EventDecoder:
    """The reference path's :data:`EventDecoder`: its row decoder, row by row."""

    def decode_event(raw: bytes, off: int, end: int, kind: int) -> list[RowPair]:
        rows: list[RowPair] = []
        while off < end:
            first, off = decode(raw, off)
            if kind == UPDATE:
                second, off = decode(raw, off)
                rows.append((first, second))
            elif kind == INSERT:
                rows.append((None, first))
            else:
                rows.append((first, None))
        return rows

    return decode_event


def decoder_kind() -> str:
    """``compiled`` or ``python``: what :func:`event_decoder` builds in this process."""
    wanted = os.environ.get(DECODER_ENV, "").strip().lower() or "auto"
    if wanted not in ("auto", "compiled", "python"):
        raise ValueError(f"{DECODER_ENV}={wanted!r}: use compiled, python or auto")
    if wanted == "python":
        return "python"
    if not compiled_available():
        if wanted == "compiled":
            raise RuntimeError(
                f"{DECODER_ENV}=compiled but the compiled row decoder is not built. Fix: "
                "reinstall with a C compiler (apt-get install gcc; pip install -e .)"
            )
        return "python"
    return "compiled"


def capture_json_text() -> JsonText:
    """The reader of MySQL's binary JSON that goes with :func:`decoder_kind`: the compiled one
    (``_jsontext.pyx``) when built, else, and with ``CDC_INGEST_DECODER=python``, the reference
    :func:`cdc_ingest.capture.mysql_json.json_text`. Both give the same text."""
    compiled = compiled_json_text() if decoder_kind() == "compiled" else None
    return python_json_text if compiled is None else compiled


def event_decoder(schema: TableSchema, json_text: JsonText) -> EventDecoder:
    """The :data:`EventDecoder` capture uses for one layout (see :func:`decoder_kind`)."""
    if decoder_kind() == "compiled":
        plan = compile_plan(schema, json_text)
        decode_event: EventDecoder = plan.decode_event
        return decode_event
    return python_event_decoder(compile_decoder(schema, json_text))


def failing_column(schema: TableSchema, error: BaseException) -> str:
    """Name the column the decoder was on when ``error`` was raised (from ``c``)."""
    column = getattr(error, "column", None)
    if isinstance(column, int) and 0 <= column < len(schema.columns):
        return schema.columns[column].name
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        if tb.tb_frame.f_code.co_name == "decode":
            break
        tb = tb.tb_next
    index = tb.tb_frame.f_locals.get("c") if tb is not None else None
    if isinstance(index, int) and 0 <= index < len(schema.columns):
        return schema.columns[index].name
    return "?"
