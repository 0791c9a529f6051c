"""Binlog TableMap -> :class:`TableSchema` and its row decoder, compiled once per layout.

The TableMap is python-mysql-replication's object, read here by attribute only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cdc_ingest.capture.binlog_schema import (
    ColumnSpec,
    FieldType,
    JsonText,
    TableSchema,
    UnsupportedColumn,
)
from cdc_ingest.capture.decoder import EventDecoder, event_decoder
from cdc_ingest.capture.key_schema import binlog_primary_key
from cdc_ingest.capture.mariadb_types import PLUGIN_TYPES
from cdc_ingest.mysql import TableFacts

# (db, table) -> what the catalog knows of the table that its TableMap does not: the names of
# TINYINT(1) columns, the key columns in key order (the primary key, or the configured key
# columns of a table without one), whether those are configured (then they are the key
# whatever the binlog says), and the columns of a type the binlog writes as another
CatalogLookup = Callable[[str, str], TableFacts]


class SchemaCache:
    """TableMap -> (TableSchema, decoder), compiled once per distinct column layout."""

    def __init__(self, catalog: CatalogLookup, json_text: JsonText) -> None:
        self._catalog = catalog
        self._json_text = json_text
        self._by_signature: dict[tuple[object, ...], tuple[TableSchema, EventDecoder]] = {}
        # table id -> (TableMap object, what resolve() gave for it): the library parses a
        # fresh TableMap object per event group; its signature is computed once per object
        self._by_map: dict[int, tuple[Any, tuple[TableSchema, EventDecoder]]] = {}

    def resolve(self, table_map: Any) -> tuple[TableSchema, EventDecoder]:
        last = self._by_map.get(table_map.table_id)
        if last is not None and last[0] is table_map:
            return last[1]
        signature = _signature(table_map)
        hit = self._by_signature.get(signature)
        if hit is None:
            schema = self._build(table_map, signature)
            hit = (schema, event_decoder(schema, self._json_text))
            self._by_signature[signature] = hit
        self._by_map[table_map.table_id] = (table_map, hit)
        return hit

    def forget(self, db: str, table: str) -> None:
        """Drop what we know of a table after DDL (catalog facts may have changed)."""
        for key in [k for k in self._by_signature if k[0] == db and k[1] == table]:
            del self._by_signature[key]
        self._by_map.clear()

    def _build(self, table_map: Any, signature: tuple[object, ...]) -> TableSchema:
        db, table = table_map.schema, table_map.table
        facts = self._catalog(db, table)
        columns = tuple(_column_spec(c, facts.booleans, facts.kinds.get(c.name, ""))
                        for c in table_map.columns)
        catalog_keys, configured = facts.keys, facts.configured
        # The primary key when the event was written, in key order; the catalog's is today's,
        # which after an ALTER may not be the one these rows had.
        in_binlog = binlog_primary_key(table_map)
        pk = catalog_keys if configured or in_binlog is None else in_binlog
        return TableSchema(db, table, columns, pk, signature)


def _signature(table_map: Any) -> tuple[object, ...]:
    cols = tuple(
        (c.type, c.name, c.unsigned, c.is_primary, c.character_set_name, _meta(c))
        for c in table_map.columns
    )
    return (table_map.schema, table_map.table, cols)


def _meta(c: Any) -> tuple[object, ...]:
    return (
        getattr(c, "max_length", None),
        getattr(c, "length_size", None),
        getattr(c, "precision", None),
        getattr(c, "decimals", None),
        getattr(c, "fsp", None),
        getattr(c, "bits", None),
        getattr(c, "size", None),
        tuple(c.enum_values or ()),
        tuple(c.set_values or ()),
    )


def _column_spec(c: Any, booleans: frozenset[str], kind: str = "") -> ColumnSpec:
    """One column as the TableMap describes it; ``kind``: the catalog's type of a column the
    binlog writes as another type (MariaDB's UUID, INET4, INET6 and VECTOR)."""
    length = getattr(c, "max_length", None) or getattr(c, "length_size", None) or 0
    if c.type in (FieldType.ENUM, FieldType.SET):
        length = c.size
    labels = tuple((c.enum_values or [""])[1:]) if c.type == FieldType.ENUM else ()
    if c.type == FieldType.SET:
        labels = tuple(c.set_values or ())
    field_type, plugin = c.type, ""
    binary = c.character_set_name in (None, "binary")
    if kind in PLUGIN_TYPES:
        width = PLUGIN_TYPES[kind][0]
        if not (c.type == FieldType.STRING and binary and length == width):
            raise _catalog_mismatch(c, kind, f"BINARY({width})")
        plugin = kind
    elif kind == "vector" and c.type != FieldType.VECTOR:
        # MariaDB 11.7+ writes VECTOR(n) as VARBINARY(4n): its length prefix is 1 or 2 bytes
        if not (c.type == FieldType.VARCHAR and binary and length % 4 == 0):
            raise _catalog_mismatch(c, kind, "VARBINARY(4n)")
        field_type, length = FieldType.VECTOR, 1 if length <= 255 else 2
    return ColumnSpec(
        name=c.name,
        type=field_type,
        unsigned=bool(c.unsigned),
        length=int(length),
        precision=getattr(c, "precision", 0) or 0,
        scale=getattr(c, "decimals", 0) or 0,
        fsp=getattr(c, "fsp", 0) or 0,
        bits=getattr(c, "bits", 0) or 0,
        encoding=c.character_set_name,
        labels=labels,
        as_boolean=c.type == FieldType.TINY and c.name in booleans,
        kind=plugin,
    )


def _catalog_mismatch(c: Any, kind: str, expected: str) -> UnsupportedColumn:
    return UnsupportedColumn(
        f"the server's catalog says column {c.name} is {kind.upper()} (written to the binlog "
        f"as {expected}), but this TableMap describes type code {c.type}, length "
        f"{getattr(c, 'max_length', None)}, charset {c.character_set_name}: the table was "
        "altered after these rows were written, and reading them as today's type would guess",
        c.name)
