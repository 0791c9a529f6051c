"""Each column's type as Flink CDC's MySQL source names it: a table layout's typed description.

Flink CDC's schema of a MySQL table (its ``CreateTableEvent``) is what its Kafka sink turns
into the Kafka Connect ``schema`` block of ``debezium-json`` with ``include-schema.enabled``,
and what tells its json formats which values are timestamps (``timestamp-format.standard``).
Capture writes the same description for every table layout it writes rows of
(capture/schema_guard.py, "layout" records of the schema topic), each row names its layout, and
the sink looks the description up (sink/task/layouts.py).

The type of a column is Flink CDC's ``MySqlTypeUtils`` mapping (``INT UNSIGNED`` ->
``BIGINT``, ``BIGINT UNSIGNED`` -> ``DECIMAL(20, 0)``, ``FLOAT(M,D)`` -> ``DOUBLE``,
``DATETIME(3)`` -> ``TIMESTAMP(3)``, ``TIMESTAMP`` -> ``TIMESTAMP_LTZ``, ``SET`` ->
``ARRAY<STRING>``, ...), except where cdc-ingest writes a value of another kind: a column
it writes as a boolean (``TINYINT(1) UNSIGNED`` with ``treat-tinyint1-as-boolean``) is
``BOOLEAN``. Nullability, the default (as the DDL spells it) and the comment come from
``information_schema`` read when capture meets the layout; a column the catalog no longer
describes the same way (the table changed again since) takes its type from the binlog's
TableMap, nullable, without default or comment.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from cdc_ingest.capture.binlog_schema import ColumnSpec, FieldType
from cdc_ingest.capture.key_schema import Layout, binlog_class, catalog_class
from cdc_ingest.mysql import Column

# One column of a typed layout: {"name", "type", "nullable", "default", "comment"}
Typed = dict[str, Any]

_SIZE = re.compile(r"\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)")
_BLOBS = frozenset({"tinyblob", "blob", "mediumblob", "longblob"})
_BLOB_CODES = frozenset({FieldType.BLOB, FieldType.TINY_BLOB, FieldType.MEDIUM_BLOB,
                         FieldType.LONG_BLOB})


def _size(column_type: str) -> tuple[int | None, int | None]:
    match = _SIZE.search(column_type)
    if match is None:
        return None, None
    return int(match.group(1)), (int(match.group(2)) if match.group(2) else None)


def _decimal(precision: int, scale: int) -> str:
    return f"DECIMAL({precision}, {scale})" if precision <= 38 else "STRING"


def catalog_type(col: Column, tinyint1_as_boolean: bool) -> str:
    """Flink CDC's type of a column ``information_schema`` describes."""
    kind, spelled = col.data_type, col.column_type.lower()
    unsigned = "unsigned" in spelled or "zerofill" in spelled
    size, scale = _size(spelled)
    if catalog_class(col, tinyint1_as_boolean) == "bool":
        return "BOOLEAN"
    simple = {"tinyint": "SMALLINT" if unsigned else "TINYINT",
              "smallint": "INT" if unsigned else "SMALLINT", "mediumint": "INT",
              "int": "BIGINT" if unsigned else "INT", "integer": "BIGINT" if unsigned else "INT",
              "bigint": "DECIMAL(20, 0)" if unsigned else "BIGINT", "year": "INT",
              "double": "DOUBLE", "real": "DOUBLE", "double precision": "DOUBLE",
              "date": "DATE", "time": f"TIME({col.fsp})", "datetime": f"TIMESTAMP({col.fsp})",
              "timestamp": f"TIMESTAMP_LTZ({col.fsp})", "set": "ARRAY<STRING>",
              "vector": "ARRAY<FLOAT>"}
    if kind in simple:
        return simple[kind]
    if kind == "bit":
        return "BOOLEAN" if col.bits <= 1 else f"BINARY({(col.bits + 7) // 8})"
    if kind == "float":
        return "DOUBLE" if size is not None else "FLOAT"
    if kind in ("decimal", "numeric"):
        return _decimal(size if size is not None else 10, scale or 0)
    if kind == "char":
        return f"CHAR({size if size is not None else 1})"
    if kind == "varchar":
        return f"VARCHAR({size})" if size else "STRING"
    if kind == "binary":
        return f"BINARY({size if size is not None else 1})"
    if kind == "varbinary":
        return f"VARBINARY({size or 0})"
    if kind in _BLOBS:
        return "BYTES"
    return "STRING"  # text, JSON, ENUM, spatial types


def binlog_type(col: ColumnSpec) -> str:
    """Flink CDC's type of a column a TableMap describes (the catalog's is preferred)."""
    t, unsigned = col.type, col.unsigned
    if binlog_class(col) == "bool":
        return "BOOLEAN"
    if col.kind:  # MariaDB's UUID, INET4, INET6: their text
        return "STRING"
    simple = {FieldType.TINY: "SMALLINT" if unsigned else "TINYINT",
              FieldType.SHORT: "INT" if unsigned else "SMALLINT", FieldType.INT24: "INT",
              FieldType.LONG: "BIGINT" if unsigned else "INT",
              FieldType.LONGLONG: "DECIMAL(20, 0)" if unsigned else "BIGINT",
              FieldType.YEAR: "INT", FieldType.FLOAT: "FLOAT", FieldType.DOUBLE: "DOUBLE",
              FieldType.DATE: "DATE", FieldType.TIME: f"TIME({col.fsp})",
              FieldType.TIME2: f"TIME({col.fsp})", FieldType.DATETIME: f"TIMESTAMP({col.fsp})",
              FieldType.DATETIME2: f"TIMESTAMP({col.fsp})",
              FieldType.TIMESTAMP: f"TIMESTAMP_LTZ({col.fsp})",
              FieldType.TIMESTAMP2: f"TIMESTAMP_LTZ({col.fsp})",
              FieldType.SET: "ARRAY<STRING>", FieldType.VECTOR: "ARRAY<FLOAT>"}
    if t in simple:
        return simple[t]
    if t == FieldType.NEWDECIMAL:
        return _decimal(col.precision, col.scale)
    if t == FieldType.BIT:
        return f"BINARY({(col.bits + 7) // 8})"
    if col.encoding == "binary":
        if t == FieldType.STRING:
            return f"BINARY({col.length})"
        return "BYTES" if t in _BLOB_CODES else f"VARBINARY({col.length})"
    return "STRING"


def _entry(name: str, type_: str, nullable: bool = True, default: str | None = None,
           comment: str | None = None) -> Typed:
    return {"name": name, "type": type_, "nullable": nullable, "default": default,
            "comment": comment}


def typed_from_catalog(columns: Iterable[Column], tinyint1_as_boolean: bool) -> list[Typed]:
    """The typed layout of rows read with these columns (the snapshot)."""
    return [_entry(c.name, catalog_type(c, tinyint1_as_boolean), c.nullable, c.default,
                   c.comment) for c in columns]


def typed_from_binlog(layout: Layout, specs: Sequence[ColumnSpec], catalog: Iterable[Column],
                      tinyint1_as_boolean: bool) -> list[Typed]:
    """The typed layout of binlog rows: each column as the catalog describes it when the
    catalog's column of that name has the same class, else from the TableMap."""
    now = {c.name: c for c in catalog}
    out = []
    for (name, cls), spec in zip(layout, specs, strict=True):
        col = now.get(name)
        if col is not None and catalog_class(col, tinyint1_as_boolean) == cls:
            out.append(_entry(name, catalog_type(col, tinyint1_as_boolean), col.nullable,
                              col.default, col.comment))
        else:
            out.append(_entry(name, binlog_type(spec)))
    return out


def layout_id(db: str, table: str, typed: list[Typed]) -> str:
    """The id rows of this typed layout carry: 16 hex digits of its hash."""
    text = orjson.dumps([db, table, typed], option=orjson.OPT_SORT_KEYS)
    return hashlib.blake2b(text, digest_size=8).hexdigest()
