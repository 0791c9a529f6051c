"""What the snapshot needs of one table: columns, key order, SELECT, row conversion."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from cdc_ingest.capture.flinktypes import typed_from_catalog
from cdc_ingest.capture.keyschema import of_catalog
from cdc_ingest.capture.snapshot.keyorder import KeyColumn, KeyOrder, quote
from cdc_ingest.capture.snapshot.state import Key
from cdc_ingest.capture.snapshot.values import (
    UnsupportedType,
    select_expression,
    snapshot_converter,
)
from cdc_ingest.errors import SourceError
from cdc_ingest.mysql import Column


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
        self.key = key
        # what the schema topic records for rows read here (cdc_ingest.capture.schemas)
        self.key_schema, self.layout = of_catalog(columns, key, tinyint1_as_boolean)
        self.typed = typed_from_catalog(columns, tinyint1_as_boolean)  # capture/flinktypes.py
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


def key_bytes(key: Key) -> bytes:
    """The changelog key, byte-identical to the one binlog rows of the same key get."""
    return orjson.dumps(key)
