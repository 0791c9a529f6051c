"""``key.format`` / ``value.format: avro-confluent``: upsert messages whose key and/or value
are Avro records in Confluent's wire format, their schemas in a Schema Registry
(docs/output-contract.md, "avro-confluent").

Each changelog row names its typed layout (sink/layouts.py); the schemas of a
(topic, layout, key columns) are derived once (change_events/avro.py) and their ids fetched
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
import threading
import time
from dataclasses import dataclass
from typing import Any

import orjson

from cdc_ingest.change_events.avro import (
    AvroTypeError,
    AvroValueError,
    RowCodec,
    decode_json,
    frame,
)
from cdc_ingest.errors import SinkError
from cdc_ingest.kafka import read_topic
from cdc_ingest.model.changelog import (
    EMPTIES_TABLE,
    REKEY_CUT,
    check_version,
    decode_ddl,
    decode_full_record,
)
from cdc_ingest.model.schema_topic import fold
from cdc_ingest.registry import RegistryClient, RegistryConfig, RegistryError, RegistryRefused
from cdc_ingest.sink.layouts import typed_layout
from cdc_ingest.sink.serde import SinkMessage, SinkSerde, Topics

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AvroSettings:
    """The avro-confluent side of the sink settings; picklable. ``key`` / ``value``: the
    registry of each side written in Avro (None: that side is json)."""

    kafka: dict[str, Any]
    schema_topic: str
    key: RegistryConfig | None
    value: RegistryConfig | None
    key_subject: str | None = None  # default <topic>-key
    value_subject: str | None = None  # default <topic>-value


def _plain(type_: Any) -> Any:
    """A field's type without its null branch."""
    if isinstance(type_, list):
        rest = [t for t in type_ if t != "null"]
        return rest[0] if len(rest) == 1 else rest
    return type_


def _underlying(type_: Any) -> Any:
    return type_.get("type") if isinstance(type_, dict) else type_


def meaning_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The fields of both record schemas whose values a reader resolving one schema with
    the other would take for something else, silently, as ``name: old -> new``: the same
    underlying type with another logical meaning (a decimal's scale, millis vs micros, a
    date vs an int), or ``string`` <-> ``bytes``. Changes readers cannot resolve at all
    (``long`` -> ``int``) are the registry's to refuse under the subject's level."""
    before = {f["name"]: _plain(f["type"]) for f in old.get("fields", [])}
    found = []
    for field in new.get("fields", []):
        name, now = field["name"], _plain(field["type"])
        was = before.get(name)
        if was is None or was == now:
            continue
        kinds = {_underlying(was), _underlying(now)}
        if kinds == {"string", "bytes"} or (len(kinds) == 1 and not _wider_decimal(was, now)):
            found.append(f"{name}: {orjson.dumps(was).decode()} -> "
                         f"{orjson.dumps(now).decode()}")
    return found


def _wider_decimal(was: Any, now: Any) -> bool:
    """A decimal of the same scale and more digits: the same values."""
    return (isinstance(was, dict) and isinstance(now, dict)
            and was.get("logicalType") == now.get("logicalType") == "decimal"
            and was.get("scale") == now.get("scale")
            and now.get("precision", 0) >= was.get("precision", 0))


class _Registries:
    """The registry calls of one task, cached for the life of the Python worker."""

    _ids: dict[tuple[str, str], int] = {}  # (subject, schema text) -> id
    _lock = threading.Lock()

    def __init__(self, settings: AvroSettings) -> None:
        self._settings = settings
        self._clients = {side: RegistryClient(config) for side, config in
                         (("key", settings.key), ("value", settings.value)) if config}

    def subject(self, side: str, topic: str) -> str:
        given = self._settings.key_subject if side == "key" else self._settings.value_subject
        return given or f"{topic}-{side}"

    def schema_id(self, side: str, topic: str, codec: RowCodec, table: str, pos: str,
                  key_free: bool) -> int:
        subject = self.subject(side, topic)
        cached = self._ids.get((subject, codec.text))
        if cached is not None:
            return cached
        with self._lock:
            client = self._clients[side]
            try:
                found = client.lookup(subject, codec.text)
                if found is None:
                    found = self._register(side, client, subject, codec, table, pos, key_free)
            except RegistryError as exc:
                raise SinkError(f"the {side} schema of {table} (row at binlog {pos}) for "
                                f"subject {subject}: {exc}") from None
            self._ids[(subject, codec.text)] = found
            return found

    def _register(self, side: str, client: RegistryClient, subject: str, codec: RowCodec,
                  table: str, pos: str, key_free: bool) -> int:
        latest = client.latest(subject)
        if latest is not None:
            version, latest_id, text = latest
            if text == codec.text:  # another task registered it since the lookup
                return latest_id
            again = client.lookup(subject, codec.text)
            if again is not None:
                return again
            if side == "key" and not key_free:
                raise SinkError(
                    f"the key schema of {table} changed at binlog {pos}: subject {subject} "
                    f"holds version {version} {text}, the rows now need {codec.text}. The "
                    "schema id is part of every key's bytes, so the table's old messages "
                    "would stay live beside the new ones (phantom rows after compaction); "
                    "only a key-column change re-keys a table in place, not a key column's "
                    "type. Nothing was written under the new key schema. Fix: start a new "
                    "pipeline (a new pipeline.name, which snapshots the table again) writing "
                    "the table to a new topic (a route), or to this topic after deleting it")
            changed = meaning_changes(orjson.loads(text), codec.schema)
            if changed:
                raise SinkError(
                    f"the {side} schema of {table} changed at binlog {pos} ({self._ddl(table)})"
                    f" in a way the registry may accept but readers would misread: "
                    f"{'; '.join(changed)} (subject {subject}, version {version}). Nothing "
                    "was written under the new schema. Fix: write the table to a new topic "
                    "(a route), or change the column back")
        try:
            schema_id = self._register_racing(client, subject, codec.text)
        except RegistryRefused as exc:
            if exc.status != 409:
                raise
            level = client.compatibility(subject)
            raise SinkError(
                f"the schema registry refused the new {side} schema of {table} at binlog "
                f"{pos} ({self._ddl(table)}): subject {subject} has compatibility level "
                f"{level}, and the registry says: {exc.message[:400]}. Nothing was written "
                "under it. Fix: make the change compatible (a new column nullable or with a "
                "default), or give the subject a level that takes it if its readers can (PUT "
                f"/config/{subject}; a key that gains a column: FORWARD), or route the table "
                "to a new topic; then start again") from None
        log.info("registered the %s schema of %s under subject %s: id %d", side, table,
                 subject, schema_id)
        return schema_id

    @staticmethod
    def _register_racing(client: RegistryClient, subject: str, text: str) -> int:
        """Register; a 409 that is another task creating the subject at the same moment
        (Apicurio: "already exists") is followed by the id that task registered."""
        for attempt in range(5):
            try:
                return client.register(subject, text)
            except RegistryRefused as exc:
                if exc.status != 409:
                    raise
                found = client.lookup(subject, text)
                if found is not None:
                    return found
                if "already exists" not in exc.message or attempt == 4:
                    raise
                time.sleep(0.2 * (attempt + 1))
        raise AssertionError("unreachable")

    def _ddl(self, table: str) -> str:
        """The table's last DDL, as the schema topic has it."""
        db, _, name = table.partition(".")
        try:
            found = fold(read_topic(self._settings.kafka, self._settings.schema_topic))
            ddl = (found.tables.get((db, name)) or {}).get("ddl")
        except Exception:  # noqa: BLE001 - only for the message
            ddl = None
        return f"DDL: {ddl}" if ddl else "its last DDL is in the schema topic"


class _Layout:
    """The codecs and schema ids of one (topic, layout, key columns)."""

    __slots__ = ("key", "key_id", "value", "value_id")

    def __init__(self, key: RowCodec | None, key_id: int, value: RowCodec | None,
                 value_id: int) -> None:
        self.key, self.key_id, self.value, self.value_id = key, key_id, value, value_id


class AvroSinkSerde(SinkSerde):
    """Changelog records -> upsert messages with Avro keys and/or values."""

    def __init__(self, topics: Topics, except_key: bool, with_headers: bool,
                 avro: AvroSettings) -> None:
        super().__init__(topics, except_key, with_headers)
        self._avro = avro
        self._registries = _Registries(avro)
        self._layouts: dict[tuple[str, str | None, tuple[str, ...]], _Layout] = {}
        self._columns: dict[str | None, list[dict[str, Any]]] = {}
        # tables whose keys this task has just tombstoned: their key schema may change
        self._key_free: set[tuple[str, str]] = set()

    def add(self, out: list[SinkMessage], key: bytes | None, value: bytes) -> int:
        record = decode_full_record(value)
        check_version(record.v)
        op, ts = record.op, record.ts_ms
        if op == "DDL":
            self.ddl = decode_ddl(value)
            if self.ddl.action in EMPTIES_TABLE or self.ddl.action == REKEY_CUT:
                self._key_free.add((self.ddl.db, self.ddl.table))
            return ts
        topics, headers, name = self.route(record.db or "", record.table or "")
        pk = decode_json(bytes(record.pk)) or {}
        after = None if op == "-D" else decode_json(bytes(record.after))
        for topic in topics:
            layout = self._layout(topic, record, tuple(pk), name)
            try:
                if layout.key is not None:
                    sink_key = frame(layout.key_id, layout.key.encode(pk))
                else:
                    sink_key = key if key is not None else bytes(record.pk)
                body = None
                if after is not None:
                    if layout.value is not None:
                        body = frame(layout.value_id, layout.value.encode(after))
                    elif self._except_key:
                        body = orjson.dumps({k: v for k, v in orjson.loads(
                            bytes(record.after)).items() if k not in pk})
                    else:
                        body = bytes(record.after)
            except AvroValueError as exc:
                raise SinkError(
                    f"a change of {name} at binlog {record.pos} (key {bytes(record.pk)!r}) "
                    f"cannot be written in Avro: {exc}. Nothing of it was written. Fix: "
                    "change the row (or make the column nullable) at the source, or use json "
                    "values") from None
            out.append((topic, sink_key, body, headers, ts, name))
        return ts

    def _layout(self, topic: str, record: Any, key_names: tuple[str, ...],
                name: str) -> _Layout:
        slot = (topic, record.layout, key_names)
        found = self._layouts.get(slot)
        if found is not None:
            return found
        columns = self._columns.get(record.layout)
        if columns is None:
            a = self._avro
            columns = self._columns[record.layout] = typed_layout(
                dict(a.kafka), a.schema_topic, record.layout, name, record.pos)
        typed = {str(c["name"]): c for c in columns}
        missing = [k for k in key_names if k not in typed]
        if missing:
            raise SinkError(f"the key columns {missing} of {name} are not in its typed "
                            f"layout {record.layout}: the schema topic is not this changelog's")
        try:
            key_codec = RowCodec([(k, str(typed[k]["type"]), False) for k in key_names]) \
                if self._avro.key is not None else None
            value_columns = [(str(c["name"]), str(c["type"]), bool(c["nullable"]),
                              c.get("default")) for c in columns
                             if not (self._except_key and c["name"] in key_names)]
            value_codec = RowCodec(value_columns) if self._avro.value is not None else None
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
