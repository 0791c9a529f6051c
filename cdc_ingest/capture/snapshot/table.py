"""What the snapshot needs of one table: columns, key order, SELECT, row conversion."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from cdc_ingest.capture.key_schema import of_catalog
from cdc_ingest.capture.snapshot.keyorder import KeyColumn, KeyOrder, quote
from cdc_ingest.capture.snapshot.state import Key
from cdc_ingest.capture.snapshot.values import (
    UnsupportedType,
    json_converter,
    select_expression,
    snapshot_converter,
    text_kind,
)
from cdc_ingest.capture.typed_layout import typed_from_catalog
from cdc_ingest.errors import SourceError
from cdc_ingest.mysql import Column

try:
    from cdc_ingest.capture.snapshot import _textrows  # type: ignore[attr-defined]
except ImportError:  # built without a C compiler or Cython: PyMySQL reads the rows
    _textrows = None

# A chunk's rows: key JSON -> (key JSON, row JSON), the bytes the changelog record carries.
RowsJson = dict[bytes, tuple[bytes, bytes]]


class TableInfo:
    """What the snapshot needs of one table: columns, key order, SELECTs."""

    def __init__(self, db: str, table: str, columns: list[Column], collations: dict[str, str],
                 key: tuple[str, ...], compare_text: Callable[[str, str, str, str], int],
                 tinyint1_as_boolean: bool) -> None:
        self.db, self.table = db, table
        by_name = {c.name: c for c in columns}
        missing = [k for k in key if k not in by_name]
        if not key or missing:
            raise SourceError(
                f"table {db}.{table} has no usable key ({missing or 'no primary key'}), so it "
                "cannot be snapshotted. Fix: add a primary key or name its key columns in "
                "source.tables.key-columns, or exclude it with source.tables.exclude."
            )
        self.names = tuple(c.name for c in columns)
        self.columns = columns
        self.booleans = tinyint1_as_boolean
        self.key = key
        # what the schema topic records for rows read here (cdc_ingest.capture.schema_guard)
        self.key_schema, self.layout = of_catalog(columns, key, tinyint1_as_boolean)
        self.typed = typed_from_catalog(columns, tinyint1_as_boolean)  # capture/typed_layout.py
        self.order = KeyOrder(
            tuple(KeyColumn(k, by_name[k].data_type, by_name[k].charset, collations.get(k))
                  for k in key),
            compare_text,
        )
        try:
            convert = [snapshot_converter(c, tinyint1_as_boolean) for c in columns]
        except UnsupportedType as exc:
            raise SourceError(f"{db}.{table}: {exc}, which the snapshot cannot read") from None
        # Only the columns whose driver value is not already its JSON form are converted.
        self.fixes = tuple((i, c.name, f) for i, (c, f) in enumerate(zip(columns, convert,
                                                                         strict=True)) if f)
        self.select = ", ".join(select_expression(c) for c in columns)
        self.source = f"{quote(db)}.{quote(table)}"
        self.mvcc = True  # the engine has read views (consistent snapshots)
        self.order_by = ", ".join(quote(k) for k in key)

    def row(self, values: tuple[Any, ...]) -> tuple[Key, dict[str, Any]]:
        row = dict(zip(self.names, values, strict=True))
        for i, name, fix in self.fixes:
            value = values[i]
            if value is not None:
                row[name] = fix(value)
        return {k: row[k] for k in self.key}, row

    def row_json(self, values: tuple[Any, ...], columns: list[str] | None
                 ) -> tuple[bytes, bytes]:
        """A SELECTed row's key and row JSON; ``columns``: the row's columns (None: all)."""
        key, row = self.row(values)
        return key_bytes(key), row_json(row, columns)

    def text_rows(self, converters: list[tuple[str | None, Any]], seq: int,
                  columns: list[str] | None, rows: RowsJson) -> Any:
        """The compiled reader of this table's SELECT into ``rows`` (``_textrows.TextRows``),
        given PyMySQL's (encoding, converter) of each column and the first row packet's
        sequence number: the same bytes as :meth:`row_json` of PyMySQL's row."""
        fixes = {i: fix for i, _, fix in self.fixes}
        kinds, generic = [], []
        for i, (column, (enc, conv)) in enumerate(zip(self.columns, converters, strict=True)):
            kinds.append(text_kind(column, self.booleans, enc, conv))
            generic.append(json_converter(enc, conv, fixes.get(i)))
        index = {name: i for i, name in enumerate(self.names)}
        out = [(orjson.dumps(n) + b":", index.get(n, -1)) for n in columns or self.names]
        key = [(orjson.dumps(k) + b":", index[k]) for k in self.key]
        return _textrows.TextRows(kinds, generic, out, key, seq, rows)


def row_json(row: dict[str, Any], columns: list[str] | None) -> bytes:
    """A row's JSON with ``columns`` (None: all it has; a column it lacks is null)."""
    return orjson.dumps(row if columns is None else {n: row.get(n) for n in columns})


def key_bytes(key: Key) -> bytes:
    """The changelog key, byte-identical to the one binlog rows of the same key get."""
    return orjson.dumps(key)


def same_key(key: bytes | str) -> bytes:
    """A key JSON text in one spelling (columns sorted, numbers as orjson writes them), to
    tell whether two texts name the same key (a key chunk, verify --repair)."""
    return orjson.dumps(orjson.loads(key), option=orjson.OPT_SORT_KEYS)
