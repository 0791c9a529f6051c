"""Avro messages read back (verify, watch): key and value to the changelog's JSON form, the
form a ``json`` topic holds, so everything after reading is the same for both formats.

A message's schema id gives its writer schema (asked of the registry once per id). The
columns it was written with are those of a typed layout (the schema topic) of a table routed
to the topic: the layout whose columns, named by the writer schema's fields and with its
nullability, derive exactly the writer's schema text (formats/avro_schemas.py). That is how a
message written before an ADD COLUMN reads back without the column, as a json message would.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import orjson

from cdc_ingest.formats.avro_schemas import AvroTypeError, RowCodec, unframe
from cdc_ingest.kafka import read_topic
from cdc_ingest.model.schema_topic import SchemaTopic, TableId, fold
from cdc_ingest.registry import RegistryClient, RegistryConfig


class AvroReadError(ValueError):
    """A message this reader cannot turn back into the JSON form (the message says why)."""


def _fields(text: str) -> list[tuple[str, bool]]:
    schema = json.loads(text)
    if not isinstance(schema, dict) or schema.get("type") != "record":
        raise AvroReadError(f"writer schema is not a record: {text[:200]}")
    return [(str(f["name"]), isinstance(f["type"], list) and "null" in f["type"])
            for f in schema.get("fields", [])]


class AvroReader:
    """Turns a topic's Avro keys and values back into JSON-form bytes."""

    def __init__(self, kafka: dict[str, Any], schema_topic: str, key: RegistryConfig | None,
                 value: RegistryConfig | None, tables: Iterable[TableId],
                 numbers: dict[TableId, frozenset[str]] | None = None) -> None:
        self._kafka, self._schema_topic = kafka, schema_topic
        self._clients = {side: RegistryClient(config) for side, config in
                         (("key", key), ("value", value)) if config is not None}
        self._tables = frozenset(tables)
        self._numbers = numbers or {}
        self._topic: SchemaTopic | None = None
        self._by_id: dict[tuple[str, int], tuple[RowCodec, frozenset[str]]] = {}

    def key(self, raw: bytes | None) -> bytes | None:
        return self._decode("key", raw)

    def value(self, raw: bytes | None) -> bytes | None:
        return self._decode("value", raw)

    def _decode(self, side: str, raw: bytes | None) -> bytes | None:
        if raw is None or side not in self._clients:
            return raw
        try:
            schema_id, payload = unframe(raw)
        except ValueError as exc:
            raise AvroReadError(f"a message {side}: {exc}") from None
        codec, numbers = self._codec(side, schema_id)
        return codec.to_json(payload, numbers=numbers)

    def _codec(self, side: str, schema_id: int) -> tuple[RowCodec, frozenset[str]]:
        found = self._by_id.get((side, schema_id))
        if found is not None:
            return found
        text = self._clients[side].schema(schema_id)
        fields = _fields(text)
        for reread in (False, True):
            match = self._match(text, fields, reread)
            if match is not None:
                self._by_id[(side, schema_id)] = match
                return match
        raise AvroReadError(
            f"the {side} schema id {schema_id} ({text[:300]}) is not one this pipeline's "
            "tables derive: another writer wrote the message, or the schema topic lost the "
            "table's layouts")

    def _match(self, text: str, fields: list[tuple[str, bool]], reread: bool
               ) -> tuple[RowCodec, frozenset[str]] | None:
        if self._topic is None or reread:
            self._topic = fold(read_topic(self._kafka, self._schema_topic))
        for layout in self._topic.layouts.values():
            table = (layout["db"], layout["table"])
            if table not in self._tables:
                continue
            typed = {str(c["name"]): c for c in layout["columns"]}
            if any(name not in typed for name, _ in fields):
                continue
            # values carry their columns' defaults (formats/avro_schemas.py), keys none
            for defaults in (True, False):
                try:
                    codec = RowCodec([(name, str(typed[name]["type"]), nullable,
                                       typed[name]["default"] if defaults else None)
                                      for name, nullable in fields])
                except AvroTypeError:
                    break
                if codec.text == text:
                    return codec, self._numbers.get(table, frozenset())
        return None


def shown(reader: AvroReader | None, side: str, raw: bytes | None) -> bytes | None:
    """A key or value for a person: the JSON form, or the raw bytes when not Avro."""
    if reader is None or raw is None:
        return raw
    try:
        return reader.key(raw) if side == "key" else reader.value(raw)
    except (AvroReadError, ValueError) as exc:
        return orjson.dumps({"undecodable avro": str(exc)[:200]})
