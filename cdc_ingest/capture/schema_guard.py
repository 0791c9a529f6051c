"""The pipeline's schema topic, and the guard that keeps one key schema per table.

``cdc-ingest.<pipeline>.schema`` (compacted, key ``{"db":..,"table":..}``) holds, per
captured table, the key schema its changelog records are keyed by, its columns, and the last
DDL capture read for it (docs/changelog-format.md, "Schema topic"). Capture writes it in the
same Kafka transactions as the records and the position, so after any restart it says which
key the table's messages already in Kafka carry.

A table's key schema can only change where its old keys are gone from the topics: after a
``TRUNCATE``, ``DROP TABLE`` or ``CREATE OR REPLACE`` (the sink tombstones them all). Any other
change of the key (``DROP PRIMARY KEY, ADD PRIMARY KEY (id, k2)``, a key column renamed or
retyped so that its values are spelled differently) would leave every old key live beside
the new ones: :class:`SchemaGuard` stops capture there, after committing everything before it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from cdc_ingest.capture.key_schema import KeySchema, Layout
from cdc_ingest.capture.typed_layout import Typed, layout_id
from cdc_ingest.errors import SchemaChangeStopped
from cdc_ingest.kafka import read_topic
from cdc_ingest.model.changelog import EMPTIES_TABLE
from cdc_ingest.model.schema_topic import (
    SchemaTopic,
    TableId,
    TableRecord,
    encode,
    fold,
    layout_key,
    layout_value,
    table_key,
    table_value,
)


class KeySchemaChanged(SchemaChangeStopped):
    """A captured table's key schema changed where its old keys are still live."""


class RekeyNeeded(KeySchemaChanged):
    """The same with ``pipeline.schema.change.behavior: evolve``: the binlog phase re-keys
    the table in place (capture/rekey.py). Everything before is committed."""

    def __init__(self, message: str, db: str, table: str, key: KeySchema, columns: Layout,
                 where: str) -> None:
        super().__init__(message)
        self.db, self.table, self.key, self.columns, self.where = db, table, key, columns, where


def read_schema_topic(kafka: dict[str, Any], topic: str) -> SchemaTopic:
    """What the schema topic says now (its committed records)."""
    return fold(read_topic(kafka, topic))


class SchemaWriter(Protocol):
    """What the guard writes through: capture's changelog transaction
    (capture/transaction.py)."""

    def schema_record(self, key: bytes, value: bytes | None, ts_ms: int = 0) -> None: ...
    def commit(self, force: bool = False) -> None: ...


class SchemaGuard:
    """What capture knows of each table's schema, written to the schema topic (through
    ``writer``, in the transaction of the rows it describes) as it learns. Before a refused
    change it commits everything before it (``writer.commit``)."""

    def __init__(self, writer: SchemaWriter, read: SchemaTopic, behavior: str,
                 tinyint1_as_boolean: bool = False) -> None:
        self._writer = writer
        self._known: dict[TableId, TableRecord] = read.tables
        self._layouts = set(read.layouts)  # layout ids the topic holds
        self.tinyint1_as_boolean = tinyint1_as_boolean
        self._behavior = behavior

    def forget_all(self) -> None:
        """A first start: what the topic holds is from an earlier pipeline of this name."""
        for db, table in self._known:
            self._writer.schema_record(table_key(db, table), None)
        self._known.clear()

    def layout(self, db: str, table: str, key: KeySchema, columns: Layout, pos: str,
               ts_ms: int, typed: list[Typed]) -> str:
        """Records of ``db.table`` are about to be keyed by ``key``: record it, or stop when
        the table's messages in Kafka carry a different key. Returns the id of the typed
        layout (``typed``) its rows carry, recorded in the topic before them."""
        last = self._known.get((db, table))
        before = KeySchema.from_json(last.get("key")) if last else None
        if before is not None and before != key:
            self._writer.commit()
            message = key_change_message(db, table, before, key, pos, last or {})
            if self._behavior == "evolve":
                raise RekeyNeeded(message, db, table, key, columns, pos)
            raise KeySchemaChanged(message)
        lid = self._typed(db, table, typed, ts_ms)
        pinned = (last or {}).get("pinned")
        if self._behavior == "ignore":
            if pinned:
                lid = str(pinned["layout"])  # rows are written with the pinned columns
            else:
                pinned = {"columns": [c[0] for c in columns], "layout": lid}
        listed = [list(c) for c in columns]
        if (last is not None and before is not None and last.get("columns") == listed
                and last.get("pinned") == pinned):
            return lid
        value = {**(last or {}), "key": key.as_json(), "columns": listed, "pos": pos,
                 "ts_ms": ts_ms}
        if pinned:
            value["pinned"] = pinned
        self._write(db, table, value)
        return lid

    def pinned(self, db: str, table: str) -> list[str] | None:
        """``schema.change.behavior: ignore``: the columns the table's rows are written with,
        those it had when first captured (None: every column, as the rows come)."""
        if self._behavior != "ignore":
            return None
        pinned = (self._known.get((db, table)) or {}).get("pinned")
        return list(pinned["columns"]) if pinned else None

    def _typed(self, db: str, table: str, typed: list[Typed], ts_ms: int) -> str:
        lid = layout_id(db, table, typed)
        if lid not in self._layouts:
            self._writer.schema_record(layout_key(db, table, lid),
                                       encode(layout_value(db, table, lid, typed)), ts_ms)
            self._layouts.add(lid)
        return lid

    def rekeyed(self, db: str, table: str, key: KeySchema, columns: Layout, pos: str,
                ts_ms: int) -> None:
        """``db.table`` is re-keyed in place under ``key`` from binlog ``pos`` on."""
        last = self._known.get((db, table)) or {}
        self._write(db, table, {**last, "key": key.as_json(),
                                "columns": [list(c) for c in columns], "action": "rekey",
                                "pos": pos, "ts_ms": ts_ms})

    def key_record(self, db: str, table: str) -> Any:
        """The key schema the table's messages carry now, as the schema topic holds it
        (None: none written yet)."""
        return (self._known.get((db, table)) or {}).get("key")

    def keyed_tables(self, db: str) -> list[tuple[str, str]]:
        """The tables of database ``db`` whose messages the topics may hold live (a key
        recorded: written since their last emptying)."""
        return sorted(t for t, record in self._known.items()
                      if t[0] == db and record.get("key") is not None)

    def ddl(self, db: str, table: str, sql: str, action: str, pos: str, ts_ms: int,
            arriving: bool = False) -> None:
        """A DDL statement on a captured table, read at binlog ``pos``; ``arriving``: a
        rename gives the name to a table (which keeps the name's pinned columns)."""
        if self._behavior == "exception" and action != "create":
            self._writer.commit()
            raise SchemaChangeStopped(
                f"DDL on captured table {db}.{table} at binlog {pos}: {sql[:300]!r}. Nothing "
                "after it was captured (pipeline.schema.change.behavior: exception). Fix: "
                "set pipeline.schema.change.behavior: lenient to follow schema changes, or "
                "start a new pipeline (a new pipeline.name) after the change"
            )
        last = self._known.get((db, table)) or {}
        value = {**last, "ddl": sql, "action": action, "pos": pos, "ts_ms": ts_ms}
        if action in EMPTIES_TABLE:
            # every key of the table is tombstoned (the sink): the next layout starts afresh
            value.update(key=None, columns=None)
        if action in ("drop", "replace") or (action == "rename" and not arriving):
            value.pop("pinned", None)  # ignore: a table created again is pinned afresh
        self._write(db, table, value)

    def _write(self, db: str, table: str, fields: Mapping[str, Any]) -> None:
        value = table_value(db, table, fields)
        self._known[(db, table)] = value
        self._writer.schema_record(table_key(db, table), encode(value), value["ts_ms"])


def key_change_message(db: str, table: str, before: KeySchema, after: KeySchema, pos: str,
                       last: Mapping[str, Any]) -> str:
    ddl = last.get("ddl")
    cause = (f"by {str(ddl)[:300]!r} (binlog {last.get('pos')})" if ddl
             else "by a schema change capture did not see")
    return (
        f"the key of {db}.{table} changed from {before.describe()} to {after.describe()} "
        f"{cause}; its first row under the new key is at binlog {pos}. Its topics hold "
        "messages keyed by the old key: writing the new key beside them would leave every "
        "old key live (a phantom row per key) in the compacted topic. Nothing from that row "
        "on was captured; everything before it is committed. "
        f"Fix: exclude {db}.{table} from this pipeline (source.tables.exclude) and start it "
        "again: it goes on from here with the other tables. Then delete the sink topic(s) "
        f"{db}.{table} is routed to and capture it under its new key with a pipeline of its "
        f"own (another pipeline.name, tables: {db}.{table}, scan.startup.mode: initial). A "
        "sink topic shared with other tables holds their keys too: start every pipeline "
        "writing it again from scratch instead. "
        "Or re-key it in place: pipeline.schema.change.behavior: evolve (docs/"
        "output-contract.md, \"Primary-key changes\")."
    )
