"""Rows events -> changelog messages (key bytes, value bytes), DESIGN section 3."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from cdc_ingest.capture.binlog import Rows
from cdc_ingest.capture.schema import TableSchema
from cdc_ingest.errors import SourceError
from cdc_ingest.model import CHANGELOG_VERSION
from cdc_ingest.verify.values import dumps

Message = tuple[bytes, bytes]


class KeyPlan:
    """Where the key columns sit in a row, computed once per table layout."""

    __slots__ = ("indexes", "names")

    def __init__(self, schema: TableSchema, where: str) -> None:
        if not schema.primary_key:
            raise SourceError(
                f"table {schema.db}.{schema.table} has no primary key, so its changes cannot "
                f"be keyed (binlog {where}). Fix: add a primary key, or name its key columns "
                f"in source.tables.key-columns ('{schema.db}.{schema.table}: col1,col2'), or "
                "exclude the table with source.tables.exclude."
            )
        names = schema.names
        missing = [k for k in schema.primary_key if k not in names]
        if missing:
            raise SourceError(
                f"key column(s) {missing} of {schema.db}.{schema.table} are not in the table "
                f"(binlog {where}). Fix: correct source.tables.key-columns."
            )
        self.names = schema.primary_key
        self.indexes = tuple(names.index(k) for k in schema.primary_key)

    def key(self, row: list[Any]) -> dict[str, Any]:
        return {n: row[i] for n, i in zip(self.names, self.indexes, strict=True)}


def _value(
    op: str, ev: Rows, pk: dict[str, Any], before: Any, after: Any, ts_ms: int, pos: str
) -> bytes:
    return orjson.dumps(
        {
            "v": CHANGELOG_VERSION,
            "op": op,
            "db": ev.schema.db,
            "table": ev.schema.table,
            "pk": pk,
            "before": before,
            "after": after,
            "ts_ms": ts_ms,
            "pos": pos,
        }
    )


def row_messages(
    ev: Rows, plan: KeyPlan, before: list[Any] | None, after: list[Any] | None, pos: str
) -> Iterator[Message]:
    """One row change as changelog messages; a key-changing UPDATE is -D then +I."""
    names = ev.schema.names
    ts_ms = ev.ts * 1000
    if ev.kind == "I":
        assert after is not None
        pk = plan.key(after)
        row = dict(zip(names, after, strict=True))
        yield orjson.dumps(pk), _value("+I", ev, pk, None, row, ts_ms, pos)
        return
    assert before is not None
    old_pk = plan.key(before)
    old_row = dict(zip(names, before, strict=True))
    if ev.kind == "D":
        yield orjson.dumps(old_pk), _value("-D", ev, old_pk, old_row, None, ts_ms, pos)
        return
    assert after is not None
    new_pk = plan.key(after)
    new_row = dict(zip(names, after, strict=True))
    old_key, new_key = orjson.dumps(old_pk), orjson.dumps(new_pk)
    if old_key == new_key:
        yield new_key, _value("+U", ev, new_pk, old_row, new_row, ts_ms, pos)
    else:
        yield old_key, _value("-D", ev, old_pk, old_row, None, ts_ms, pos)
        yield new_key, _value("+I", ev, new_pk, None, new_row, ts_ms, pos)


def ddl_message(db: str, table: str, sql: str, ts: int, pos: str) -> bytes:
    return orjson.dumps(
        {
            "v": CHANGELOG_VERSION,
            "op": "DDL",
            "db": db,
            "table": table,
            "pk": None,
            "before": None,
            "after": None,
            "ts_ms": ts * 1000,
            "pos": pos,
            "ddl": sql,
        }
    )


def snapshot_message(
    db: str, table: str, pk: dict[str, Any], row: dict[str, Any], ts_ms: int
) -> bytes:
    """A snapshot row: ``+I`` with the row as of its chunk's high watermark."""
    return dumps(
        {
            "v": CHANGELOG_VERSION,
            "op": "+I",
            "db": db,
            "table": table,
            "pk": pk,
            "before": None,
            "after": row,
            "ts_ms": ts_ms,
            "pos": "snapshot",
        }
    )
