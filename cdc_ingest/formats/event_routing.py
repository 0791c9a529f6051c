"""Where a change event goes and how its key is spelled (``sink.type: kafka``, Flink CDC's Kafka
pipeline sink): its table ids, topics, headers and message key, from the routes and the sink
options. The sink writes events with it (formats/change_events.py); verify spells the keys it
expects with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import orjson

from cdc_ingest.formats.event_values import (
    csv_field,
    csv_value,
    decode_columns,
    iso_timestamps,
    members,
    without_nulls,
)
from cdc_ingest.formats.jackson import jackson_json
from cdc_ingest.routing.routes import Router
from cdc_ingest.routing.selectors import table_id_selector

Headers = list[tuple[str, bytes]]
DEBEZIUM = "debezium-json"
CANAL = "canal-json"
_REGEX_CHARS = frozenset("\\*+?[](){}|^$,")


@dataclass(frozen=True)
class EventOptions:
    """The ``type: kafka`` options a task needs (picklable)."""

    value_format: str = DEBEZIUM
    key_format: str = "json"
    topic: str | None = None
    mapping: tuple[tuple[str, str], ...] = ()  # (table selector, topic), in order
    all_to_zero: bool = True
    custom_headers: tuple[tuple[str, str], ...] = ()
    value_ignore_nulls: bool = False  # <format>.encode.ignore-null-fields
    key_ignore_nulls: bool = False  # json.encode.ignore-null-fields (json keys)
    include_schema: bool = False  # debezium-json.include-schema.enabled
    iso_values: bool = False  # <format>.timestamp-format.standard: ISO-8601
    iso_keys: bool = False  # json.timestamp-format.standard: ISO-8601 (json keys)
    _rules: list[tuple[list[list[re.Pattern[str]]], str]] = field(
        default_factory=list, repr=False, compare=False)

    @property
    def typed(self) -> bool:
        """Whether the events need each row's column types."""
        return self.include_schema or self.iso_values or self.iso_keys

    @property
    def partition(self) -> int:
        """The partition every message goes to (-1: by key, as Kafka's Java producer)."""
        return 0 if self.all_to_zero else -1

    def topic_of(self, table_id: str) -> str:
        if self.topic:
            return self.topic
        if self.mapping and not self._rules:
            self._rules.extend((table_id_selector(s), t) for s, t in self.mapping)
        parts = table_id.split(".")
        for alternatives, topic in self._rules:
            for patterns in alternatives:
                if len(patterns) == len(parts) and all(
                        p.fullmatch(part) for p, part in zip(patterns, parts, strict=True)):
                    return topic
        return table_id


def exclusive(router: Router, db: str, table: str, table_id: str) -> bool:
    """True when no other source table can carry ``table_id``: every rule that takes this
    table names it alone (no regex), and no other rule can give a table that name."""
    for rule in router.rules:
        if rule.source.matches(db, table):
            if _REGEX_CHARS & set(str(rule.source).replace("\\.", "")):
                return False
        elif rule.could_name(table_id):
            return False
    return True


# What every message of one (source table, table id) shares
@dataclass(frozen=True)
class Target:
    table_id: str
    topic: str
    key_head: bytes  # json: {"TableId":"..." ; csv: the quoted table id
    source: bytes  # debezium: {"db":..,"table":..}; canal: ,"database":..,"table":..
    headers: Headers | None


class EventAddress:
    """A table's change events' table ids, topics, headers and keys."""

    def __init__(self, router: Router, options: EventOptions, with_headers: bool) -> None:
        self.router = router
        self._options = options
        self._with_headers = with_headers
        self.canal = options.value_format == CANAL
        self._csv = options.key_format == "csv"
        self._targets: dict[tuple[str, str], tuple[Target, ...]] = {}

    @property
    def ignores_nulls(self) -> bool:
        """Whether null fields are left out of the values (``encode.ignore-null-fields``)."""
        return self._options.value_ignore_nulls

    @property
    def iso_values(self) -> bool:
        """Whether the values' timestamps are in ISO-8601 (``timestamp-format.standard``)."""
        return self._options.iso_values

    def targets(self, db: str, table: str) -> tuple[Target, ...]:
        found = self._targets.get((db, table))
        if found is None:
            found = self._targets[(db, table)] = tuple(
                self._target(tid) for tid in self.router.sink_topics(db, table))
        return found

    def _target(self, table_id: str) -> Target:
        parts = table_id.split(".")
        namespace = parts[-3] if len(parts) >= 3 else None
        schema = parts[-2] if len(parts) >= 2 else None
        name = parts[-1]
        skip = self._options.value_ignore_nulls
        if self.canal:
            source = b"," + members((b"database", orjson.dumps(schema)),
                                     (b"table", orjson.dumps(name)), skip_nulls=skip)
        else:
            source = b"{" + members((b"db", orjson.dumps(schema)),
                                     (b"table", orjson.dumps(name)), skip_nulls=skip) + b"}"
        headers: Headers | None = None
        if self._with_headers or self._options.custom_headers:
            headers = []
            if self._with_headers:
                headers += [("namespace", (namespace or "").encode()),
                            ("schemaName", (schema or "").encode()),
                            ("tableName", name.encode())]
            headers += [(k, v.encode()) for k, v in self._options.custom_headers]
        key_head = (csv_field(table_id).encode() if self._csv
                    else b'{"TableId":' + orjson.dumps(table_id))
        return Target(table_id, self._options.topic_of(table_id), key_head, source, headers)

    def route(self, db: str, table: str) -> tuple[tuple[str, ...], Headers | None, str]:
        """A table's topics, headers (of its first table id) and ``db.table`` name."""
        targets = self.targets(db, table)
        return (tuple(dict.fromkeys(t.topic for t in targets)), targets[0].headers,
                f"{db}.{table}")

    def key(self, target: Target, pk: bytes, stamps: frozenset[bytes] = frozenset()) -> bytes:
        """The message key of a row whose changelog key is ``pk`` (compact JSON object);
        ``stamps``: its timestamp columns (for ``json.timestamp-format.standard``)."""
        if self._options.iso_keys and stamps:
            pk = iso_timestamps(pk, stamps)
        if self._csv:
            values = decode_columns(pk).values()
            return b",".join([target.key_head, *(csv_value(bytes(v)).encode() for v in values)])
        if self._options.key_ignore_nulls:
            pk = without_nulls(pk)
        # Flink CDC's json key is Jackson's: the same bytes for the same key
        return jackson_json(target.key_head + (b"}" if pk == b"{}" else b"," + pk[1:]))
