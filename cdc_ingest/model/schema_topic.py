"""The schema topic's records: the second contract capture writes, read by capture at start,
by the sink (typed layouts) and by verify (pinned columns). docs/changelog-format.md,
"Schema topic", is the prose of this module.

``cdc-ingest.<pipeline>.schema`` (compacted, one partition) holds two kinds of record:

* a **table record** per captured table, key ``{"db":..,"table":..}``
  (:class:`TableRecord`): the key schema its messages are keyed by, its columns, the last
  DDL capture read for it; a tombstone forgets the table (a first start of a pipeline whose
  name was used before);
* a **layout record** per typed layout rows have named, key
  ``{"db":..,"table":..,"layout":"<id>"}`` (:class:`LayoutRecord`), never deleted.

:func:`fold` is the one reader: the messages of the topic, oldest first, to what they say
now. Writers build values with :func:`table_value` / :func:`layout_value`, whose field order
is the wire format's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict

import orjson

SCHEMA_VERSION = 1
TableId = tuple[str, str]


class TypedColumn(TypedDict):
    """A column of a typed layout: Flink CDC's type of it, as capture/typed_layout.py maps it."""

    name: str
    type: str
    nullable: bool
    default: str | None
    comment: str | None


class LayoutRecord(TypedDict):
    v: int
    db: str
    table: str
    layout: str
    columns: list[TypedColumn]


class TableRecord(TypedDict, total=False):
    """A table's record; ``key``/``columns`` are None after the table's rows are gone
    (TRUNCATE, DROP, CREATE OR REPLACE) until its next row, ``ddl``/``action`` until its
    first DDL. ``pinned`` only with ``schema.change.behavior: ignore``."""

    v: int
    db: str
    table: str
    key: dict[str, Any] | None  # {"columns": [...], "classes": [...]} (capture/key_schema.py)
    columns: list[list[str]] | None  # [[name, class], ...] in table order
    ddl: str | None
    action: str | None  # a DDL record's action, or "rekey"
    pos: str
    ts_ms: int
    pinned: dict[str, Any]  # {"columns": [...], "layout": "<id>"}


class KeyValue(Protocol):
    """A Kafka message as the readers get it (cdc_ingest.kafka.Message)."""

    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...


def table_key(db: str, table: str) -> bytes:
    return orjson.dumps({"db": db, "table": table})


def layout_key(db: str, table: str, layout: str) -> bytes:
    return orjson.dumps({"db": db, "table": table, "layout": layout})


def table_value(db: str, table: str, fields: Mapping[str, Any]) -> TableRecord:
    """A table record: the fields every record has first (``v``, ``db``, ``table``, then
    ``key``, ``columns``, ``ddl``, ``action`` as None unless ``fields`` sets them), then
    the rest of ``fields`` in their order."""
    value: dict[str, Any] = {"v": SCHEMA_VERSION, "db": db, "table": table, "key": None,
                             "columns": None, "ddl": None, "action": None, **fields}
    return value  # type: ignore[return-value]


def layout_value(db: str, table: str, layout: str, columns: list[Any]) -> LayoutRecord:
    return {"v": SCHEMA_VERSION, "db": db, "table": table, "layout": layout,
            "columns": columns}


def encode(record: TableRecord | LayoutRecord) -> bytes:
    return orjson.dumps(record)


@dataclass
class SchemaTopic:
    """What the topic says now: every table's last record, every layout by id."""

    tables: dict[TableId, TableRecord] = field(default_factory=dict)
    layouts: dict[str, LayoutRecord] = field(default_factory=dict)

    def pinned(self, db: str, table: str) -> list[str] | None:
        """``schema.change.behavior: ignore``: the columns the table's rows are written with
        (None: no pin, every column)."""
        pinned = (self.tables.get((db, table)) or {}).get("pinned")
        return list(pinned["columns"]) if pinned else None

    def pins(self) -> dict[TableId, list[str]]:
        """Every pinned table's columns."""
        return {t: list(r["pinned"]["columns"]) for t, r in self.tables.items()
                if r.get("pinned")}

    def timestamps(self, db: str, table: str) -> frozenset[str]:
        """The columns of ``db.table`` that are timestamps in any of its typed layouts."""
        return frozenset(str(c["name"]) for found in self.layouts.values()
                         if found["db"] == db and found["table"] == table
                         for c in found["columns"] if str(c["type"]).startswith("TIMESTAMP"))


def fold(messages: Iterable[KeyValue], into: SchemaTopic | None = None) -> SchemaTopic:
    """The topic's messages, oldest first, folded into what they say (``into``: on top of an
    earlier read). A layout record is never deleted: a tombstone of one is ignored."""
    topic = into if into is not None else SchemaTopic()
    for msg in messages:
        if msg.key is None:
            continue
        key = orjson.loads(msg.key)
        layout = key.get("layout")
        if layout is not None:
            if msg.value is not None:
                topic.layouts[str(layout)] = orjson.loads(msg.value)
            continue
        table_id = (str(key.get("db")), str(key.get("table")))
        if msg.value is None:
            topic.tables.pop(table_id, None)
        else:
            topic.tables[table_id] = orjson.loads(msg.value)
    return topic
