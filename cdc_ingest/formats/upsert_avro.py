"""``key.format`` / ``value.format: avro-confluent``: upsert messages whose key and/or value
are Avro records in Confluent's wire format, their schemas in a Schema Registry
(docs/output-contract.md, "avro-confluent").

Each changelog row names its typed layout (sink/task/layouts.py); the schemas of a
(topic, layout, key columns) are derived once (formats/avro_schemas.py) and their ids fetched
once, at the first row of that layout, before that row's message is built. Every later row
of it is converted and framed with the cached ids; the registry is never asked per message.
A registry that is down is retried (registry/client.py), then the task fails; its
transaction aborts, so no message is ever written without its schema.

What the registry is asked, per subject:

1. is this exact schema text already a version of the subject? Then its id (a restart, a
   replay, another task, another table of the same topic and schema).
2. key subjects: a subject that already holds another key schema means every key's bytes
   would change (the 4-byte id is part of them) and compaction would keep the old messages
   live: phantom rows. That is only allowed right after the table's keys were all tombstoned
   (a re-key's cut-over, TRUNCATE, DROP, CREATE OR REPLACE, a new snapshot); otherwise the
   task stops, naming the table, subject and fix.
3. value subjects: fields whose meaning would change under a change the registry accepts (a
   decimal's scale, a time unit, bytes <-> string) stop the task; the registry decides the
   rest under the subject's compatibility level, and a refusal stops the task naming the
   table, its last DDL, the subject, the level and the fix.
"""

from __future__ import annotations

import logging
from typing import Any

from cdc_ingest.errors import SinkError
from cdc_ingest.formats.avro_schemas import (
    AvroTypeError,
    AvroValueError,
    RowCodec,
    decode_json,
    frame,
)
from cdc_ingest.formats.jackson import jackson_json
from cdc_ingest.formats.lookups import Layouts, SchemaIds
from cdc_ingest.formats.upsert_json import (
    SinkMessage,
    SinkSerde,
    Topics,
    UpsertOptions,
    _columns_or_none,
    _json,
)
from cdc_ingest.model.changelog import (
    EMPTIES_TABLE,
    REKEY_CUT,
    check_version,
    decode_ddl,
    decode_full_record,
)

log = logging.getLogger(__name__)


class _Layout:
    """The codecs and schema ids of one (topic, layout, key columns)."""

    __slots__ = ("key", "key_id", "value", "value_id")

    def __init__(self, key: RowCodec | None, key_id: int, value: RowCodec | None,
                 value_id: int) -> None:
        self.key, self.key_id, self.value, self.value_id = key, key_id, value, value_id


class AvroSinkSerde(SinkSerde):
    """Changelog records -> upsert messages with Avro keys and/or values."""

    def __init__(self, topics: Topics, options: UpsertOptions, sides: tuple[bool, bool],
                 layouts: Layouts, schema_ids: SchemaIds) -> None:
        """``sides``: whether the key, and the value, are Avro (else json)."""
        super().__init__(topics, options)
        self._avro_key, self._avro_value = sides
        self._lookup = layouts
        self._registries = schema_ids
        self._layouts: dict[tuple[str, str | None, tuple[str, ...]], _Layout] = {}
        self._columns: dict[str | None, list[dict[str, Any]]] = {}
        # tables whose keys this task has just tombstoned: their key schema may change
        self._key_free: set[tuple[str, str]] = set()

    def add(self, out: list[SinkMessage], key: bytes | None, value: bytes) -> int:
        record = decode_full_record(value)
        check_version(record.v)
        ts = record.ts_ms
        if record.op == "DDL":
            self.ddl = decode_ddl(value)
            if self.ddl.action in EMPTIES_TABLE or self.ddl.action == REKEY_CUT:
                self._key_free.add((self.ddl.db, self.ddl.table))
            return ts
        if self._transform is not None:  # filters only: projections are refused with Avro
            changed = self._transform.apply(record)
            if changed is None:
                return ts
            record = changed
        topics, headers, name = self.route(record.db or "", record.table or "")
        pk_raw, after_raw = bytes(record.pk), bytes(record.after)
        pk = decode_json(pk_raw) or {}
        after = None if record.op == "-D" else after_raw
        for topic in topics:
            layout = self._layout(topic, record, tuple(pk), name)
            try:
                sink_key = (frame(layout.key_id, layout.key.encode(pk))
                            if layout.key is not None else self._json_key(pk_raw))
                body = None
                if after is not None:
                    body = (frame(layout.value_id, layout.value.encode(decode_json(after)))
                            if layout.value is not None else self._json_value(after, pk))
            except AvroValueError as exc:
                raise SinkError(
                    f"a change of {name} at binlog {record.pos} (key {pk_raw!r}) "
                    f"cannot be written in Avro: {exc}. Nothing of it was written. Fix: "
                    "change the row (or make the column nullable) at the source, or use json "
                    "values") from None
            out.append((topic, sink_key, body, headers, ts, name))
        return ts

    def _json_key(self, pk: bytes) -> bytes:
        """A json key beside an Avro value: what SinkSerde writes."""
        return jackson_json(pk) if self._jackson else pk

    def _json_value(self, after: bytes, pk: dict[str, Any]) -> bytes:
        """A json value beside an Avro key: the row's JSON text, number text included."""
        if not self._except_key:
            return after
        columns = _columns_or_none(after) or {}
        return _json({k: v for k, v in columns.items() if k not in pk})

    def _layout(self, topic: str, record: Any, key_names: tuple[str, ...],
                name: str) -> _Layout:
        slot = (topic, record.layout, key_names)
        found = self._layouts.get(slot)
        if found is not None:
            return found
        columns = self._columns.get(record.layout)
        if columns is None:
            columns = self._columns[record.layout] = self._lookup.columns(
                record.layout, name, record.pos)
        typed = {str(c["name"]): c for c in columns}
        missing = [k for k in key_names if k not in typed]
        if missing:
            raise SinkError(f"the key columns {missing} of {name} are not in its typed "
                            f"layout {record.layout}: the schema topic is not this changelog's")
        try:
            key_codec = RowCodec([(k, str(typed[k]["type"]), False) for k in key_names]) \
                if self._avro_key else None
            value_columns = [(str(c["name"]), str(c["type"]), bool(c["nullable"]),
                              c.get("default")) for c in columns
                             if not (self._except_key and c["name"] in key_names)]
            value_codec = RowCodec(value_columns) if self._avro_value else None
        except AvroTypeError as exc:
            raise SinkError(f"{name} cannot be written in Avro: {exc}. Fix: rename the column "
                            "at the source, or write the table as json") from None
        free = (record.db, record.table) in self._key_free
        key_id = value_id = 0
        if key_codec is not None:
            if not key_names:
                raise SinkError(f"{name} has no key columns; an Avro key needs at least one")
            key_id = self._registries.schema_id("key", topic, key_codec, name, record.pos,
                                                free)
        if value_codec is not None:
            value_id = self._registries.schema_id("value", topic, value_codec, name,
                                                  record.pos, True)
        found = self._layouts[slot] = _Layout(key_codec, key_id, value_codec, value_id)
        return found


__all__ = ["AvroSinkSerde"]
