"""A table's key schema: its key columns, in key order, and how each renders in a key.

Messages of a compacted topic are keyed by the JSON of the row's key (``{"id":5}``). Two key
schemas are the same when every row gets the same key bytes under both: the same column names
in the same order, and for each column the same *key class*, the part of its type that decides
how a value is spelled. ``INT`` -> ``BIGINT`` or ``VARCHAR(10)`` -> ``VARCHAR(40)`` keep the
class; ``INT`` -> ``VARCHAR``, ``DECIMAL(8,2)`` -> ``DECIMAL(8,3)`` (``"1.50"`` ->
``"1.500"``), ``DATETIME(0)`` -> ``DATETIME(3)`` or ``BINARY(4)`` -> ``BINARY(8)`` (padding)
change it. The class comes from the binlog's column description for binlog rows and from
``information_schema`` for snapshot rows; both must agree for every type
(tests/integration/test_snapshot_keys.py snapshots and then streams tables keyed on each).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cdc_ingest.capture.binlog_schema import ColumnSpec, FieldType, TableSchema
from cdc_ingest.mysql import Column

_INTEGERS = frozenset({FieldType.TINY, FieldType.SHORT, FieldType.INT24, FieldType.LONG,
                       FieldType.LONGLONG, FieldType.YEAR})
_TEXTS = frozenset({FieldType.VARCHAR, FieldType.VAR_STRING, FieldType.STRING, FieldType.BLOB,
                    FieldType.TINY_BLOB, FieldType.MEDIUM_BLOB, FieldType.LONG_BLOB})
_OTHERS = {FieldType.JSON: "json", FieldType.GEOMETRY: "geometry", FieldType.VECTOR: "vector"}
_SQL_INTEGERS = frozenset({"tinyint", "smallint", "mediumint", "int", "integer", "bigint",
                           "year"})
_SQL_TEXTS = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext",
                        "enum"})
_SQL_BINARIES = frozenset({"varbinary", "tinyblob", "blob", "mediumblob", "longblob"})
_SQL_GEOMETRIES = frozenset({"geometry", "point", "linestring", "polygon", "multipoint",
                             "multilinestring", "multipolygon", "geometrycollection",
                             "geomcollection"})


@dataclass(frozen=True)
class KeySchema:
    columns: tuple[str, ...]
    classes: tuple[str, ...]

    def describe(self) -> str:
        """``(id int, k2 string)``: what an error message shows."""
        return "(" + ", ".join(f"{c} {k}" for c, k in zip(self.columns, self.classes,
                                                          strict=True)) + ")"

    def as_json(self) -> dict[str, Any]:
        return {"columns": list(self.columns), "classes": list(self.classes)}

    @classmethod
    def from_json(cls, data: Any) -> KeySchema | None:
        if not isinstance(data, dict):
            return None
        return cls(tuple(data.get("columns") or ()), tuple(data.get("classes") or ()))


def binlog_class(col: ColumnSpec) -> str:
    """The key class of a column as a TableMap describes it."""
    t = col.type
    if t == FieldType.TINY and col.as_boolean:
        return "bool"
    if t in _INTEGERS:
        return "int"
    if t == FieldType.NEWDECIMAL:
        return f"decimal:{col.scale}"
    if t == FieldType.FLOAT:
        return "float"
    if t == FieldType.DOUBLE:
        return "double"
    if t == FieldType.DATE:
        return "date"
    if t in (FieldType.DATETIME2, FieldType.DATETIME):
        return f"datetime:{col.fsp}"
    if t in (FieldType.TIMESTAMP2, FieldType.TIMESTAMP):
        return f"timestamp:{col.fsp}"
    if t in (FieldType.TIME2, FieldType.TIME):
        return f"time:{col.fsp}"
    if t == FieldType.BIT:
        return "bool" if col.bits == 1 else f"bit:{col.bits}"
    if t == FieldType.ENUM:
        return "string"
    if t == FieldType.SET:
        return "set"
    if col.kind:  # MariaDB's UUID, INET4, INET6: their text
        return col.kind
    if t in _TEXTS:
        if col.encoding not in (None, "binary"):
            return "string"
        # BINARY(n) is padded to n bytes; VARBINARY and BLOB are not
        return f"binary:{col.length}" if t == FieldType.STRING else "binary"
    # not key types in MySQL; named so that a table's column list reads the same both ways
    return _OTHERS.get(t, f"type:{t}")


def catalog_class(col: Column, tinyint1_as_boolean: bool) -> str:
    """The key class of a column as ``information_schema.COLUMNS`` describes it."""
    kind = col.data_type
    if kind == "tinyint" and tinyint1_as_boolean and col.is_tinyint1:
        return "bool"
    if kind in _SQL_INTEGERS:
        return "int"
    if kind in ("decimal", "numeric"):
        return f"decimal:{col.scale}"
    if kind == "float":
        return "float"
    if kind in ("double", "real", "double precision"):
        return "double"
    if kind == "date":
        return "date"
    if kind in ("datetime", "timestamp", "time"):
        return f"{kind}:{col.fsp}"
    if kind == "bit":
        return "bool" if col.bits == 1 else f"bit:{col.bits}"
    if kind == "set":
        return "set"
    if kind in _SQL_TEXTS:
        return "string"
    if kind == "binary":
        return f"binary:{col.octet_length or 0}"
    if kind in _SQL_BINARIES:
        return "binary"
    if kind in ("json", "vector", "uuid", "inet4", "inet6"):
        return kind
    if kind in _SQL_GEOMETRIES:
        return "geometry"
    return f"sql:{kind}"


# (name, class) of every column, in table order: the layout the schema topic shows
Layout = list[tuple[str, str]]


def of_binlog(schema: TableSchema) -> tuple[KeySchema, Layout]:
    """The key schema and layout of rows a TableMap describes."""
    layout = [(c.name, binlog_class(c)) for c in schema.columns]
    classes = dict(layout)
    return KeySchema(schema.primary_key, tuple(classes[k] for k in schema.primary_key)), layout


def of_catalog(columns: Iterable[Column], key: tuple[str, ...],
               tinyint1_as_boolean: bool) -> tuple[KeySchema, Layout]:
    """The key schema and layout of rows the snapshot reads."""
    layout = [(c.name, catalog_class(c, tinyint1_as_boolean)) for c in columns]
    classes = dict(layout)
    return KeySchema(key, tuple(classes[k] for k in key)), layout


def binlog_primary_key(table_map: Any) -> tuple[str, ...] | None:
    """The primary key in key order as the TableMap's optional metadata gives it (MySQL and
    MariaDB write its column indexes in key order; a key with a prefix part, such as
    ``PRIMARY KEY (name(10))``, comes as index/prefix pairs); None without that metadata
    (``binlog_row_metadata=MINIMAL``)."""
    meta = getattr(table_map, "optional_metadata", None)
    columns = getattr(table_map, "columns", None) or []
    if meta is None or not columns or not getattr(columns[0], "name", None):
        return None
    indexes = list(getattr(meta, "simple_primary_key_list", None) or [])
    if not indexes:
        indexes = list((getattr(meta, "primary_keys_with_prefix", None) or {}).keys())
    return tuple(columns[i].name for i in indexes if 0 <= i < len(columns))
