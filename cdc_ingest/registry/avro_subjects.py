"""The Schema Registry side of the avro-confluent sink (formats/upsert_avro.py): which subject,
which id, and what a new schema may change (that module's docstring says what is asked)."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

import orjson

from cdc_ingest.errors import SinkError
from cdc_ingest.formats.avro_schemas import RowCodec
from cdc_ingest.kafka import read_topic
from cdc_ingest.model.schema_topic import fold
from cdc_ingest.registry import RegistryClient, RegistryConfig, RegistryError, RegistryRefused

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


class Registries:
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
