"""``sink.type: kafka``: changelog records -> Flink CDC's change events (Debezium or Canal JSON).

What Flink CDC's Kafka pipeline sink writes, field for field (docs/output-contract.md,
"type: kafka"), built from the changelog bytes without parsing the row images:

* **key** (``key.format``): ``{"TableId":"<db>.<table>",<key columns>}`` (json) or
  ``<db>.<table>,<key values>`` (csv, Jackson's quoting): the table id, then the key columns
  in key order, from the row after the change (before it for a delete).
* **value** (``value.format``): debezium-json
  ``{"before":…,"after":…,"op":"c|u|d","source":{"db":…,"table":…}}``, or canal-json
  ``{"old":[…]|null,"data":[…],"type":"INSERT|UPDATE|DELETE","database":…,"table":…,
  "pkNames":[…]}``. A delete is a message with a value, never a tombstone.
* **table id**: the source table, or the ``sink-table`` of each route that takes it (as in
  Flink CDC, where a route renames the table before the sink). A 1-part sink-table has no
  database: ``"db":null``.
* **topic**: ``topic``, else the first ``sink.tableId-to-topic.mapping`` rule that matches
  the table id, else the table id.
* **headers**: ``namespace``/``schemaName``/``tableName`` of the table id when
  ``sink.add-tableId-to-header-enabled``, then ``sink.custom-header``.

DDL writes nothing here, as in Flink CDC, except where the table's rows are gone (TRUNCATE,
DROP, CREATE OR REPLACE, a re-key): then every live row of it gets a delete event
(:meth:`EventSerde.deletes`), so a consumer's state holds no row the table does not have.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import msgspec
import orjson

from cdc_ingest.model.changelog import DdlRecord, check_version, decode_ddl, decode_full_record
from cdc_ingest.routing.routes import Router
from cdc_ingest.routing.selectors import table_id_selector
from cdc_ingest.sink.connect_schema import schema_block
from cdc_ingest.sink.event_values import (
    _NULL,
    _csv_value,
    _members,
    csv_field,
    decode_columns,
    iso_timestamps,
    without_nulls,
)
from cdc_ingest.sink.jackson import jackson_json
from cdc_ingest.sink.layouts import table_timestamps, typed_layout
from cdc_ingest.sink.serde import Headers, SinkMessage
from cdc_ingest.transform.records import Transformer
from cdc_ingest.transform.rules import RuleSpec

DEBEZIUM = "debezium-json"
CANAL = "canal-json"
_OPS = {"+I": (b"c", b"INSERT"), "+U": (b"u", b"UPDATE"), "-D": (b"d", b"DELETE")}
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
    schema_topic: str = ""  # where the typed layouts are (sink/layouts.py)
    kafka: tuple[tuple[str, Any], ...] = field(default=(), repr=False, compare=False)
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


class EventSerde:
    """Changelog records -> change events; the same interface as
    :class:`~cdc_ingest.sink.serde.SinkSerde` (the writer, resets and re-keys use either)."""

    def __init__(self, router: Router, options: EventOptions, with_headers: bool,
                 transforms: tuple[RuleSpec, ...] = ()) -> None:
        self.router = router
        self._transform = Transformer(transforms) if transforms else None
        self._options = options
        self._with_headers = with_headers
        self.canal = options.value_format == CANAL
        self._csv = options.key_format == "csv"
        self._targets: dict[tuple[str, str], tuple[Target, ...]] = {}
        self.ddl: DdlRecord | None = None
        # typed layout id -> (schema block, timestamp columns)
        self._layouts: dict[str, tuple[bytes | None, frozenset[bytes]]] = {}

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
            source = b"," + _members((b"database", orjson.dumps(schema)),
                                     (b"table", orjson.dumps(name)), skip_nulls=skip)
        else:
            source = b"{" + _members((b"db", orjson.dumps(schema)),
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

    def layout(self, lid: str | None, table: str, pos: str
               ) -> tuple[bytes | None, frozenset[bytes]]:
        """(the ``schema`` block, the timestamp columns) of a typed layout."""
        hit = self._layouts.get(lid or "")
        if hit is None:
            o = self._options
            columns = typed_layout(dict(o.kafka), o.schema_topic, lid, table, pos)
            hit = self._layouts[lid or ""] = self.layout_of(columns)
        return hit

    def table_timestamps(self, db: str, table: str) -> frozenset[bytes]:
        """The timestamp columns of a table (any of its layouts), when values are written in
        ISO-8601; else none."""
        o = self._options
        if not o.iso_values:
            return frozenset()
        return table_timestamps(dict(o.kafka), o.schema_topic, db, table)

    def layout_of(self, columns: list[dict[str, Any]]) -> tuple[bytes | None,
                                                                  frozenset[bytes]]:
        stamps = frozenset(str(c["name"]).encode() for c in columns
                           if str(c["type"]).startswith("TIMESTAMP"))
        return (schema_block(columns) if self._options.include_schema else None), stamps

    def key(self, target: Target, pk: bytes, stamps: frozenset[bytes] = frozenset()) -> bytes:
        """The message key of a row whose changelog key is ``pk`` (compact JSON object);
        ``stamps``: its timestamp columns (for ``json.timestamp-format.standard``)."""
        if self._options.iso_keys and stamps:
            pk = iso_timestamps(pk, stamps)
        if self._csv:
            values = decode_columns(pk).values()
            return b",".join([target.key_head, *(_csv_value(bytes(v)).encode() for v in values)])
        if self._options.key_ignore_nulls:
            pk = without_nulls(pk)
        # Flink CDC's json key is Jackson's: the same bytes for the same key
        return jackson_json(target.key_head + (b"}" if pk == b"{}" else b"," + pk[1:]))

    def value(self, target: Target, op: str, pk: bytes, before: bytes, after: bytes,
              names: bytes | None = None, schema: bytes | None = None) -> bytes:
        """The change event; ``names``: canal's ``pkNames`` (else the key's columns);
        ``schema``: the Kafka Connect schema block (``include-schema.enabled``)."""
        event = self._event(target, op, pk, before, after, names)
        if schema is not None:
            return b'{"schema":%b,"payload":%b}' % (schema, event)
        return event

    def _event(self, target: Target, op: str, pk: bytes, before: bytes, after: bytes,
               names: bytes | None) -> bytes:
        debezium_op, canal_type = _OPS[op]
        skip = self._options.value_ignore_nulls
        if skip:
            before = before if before == _NULL else without_nulls(before)
            after = after if after == _NULL else without_nulls(after)
        if not self.canal:
            if skip:
                return b"{%b}" % _members((b"before", before), (b"after", after),
                                          (b"op", b'"%b"' % debezium_op),
                                          (b"source", target.source), skip_nulls=True)
            return b'{"before":%b,"after":%b,"op":"%b","source":%b}' % (
                before, after, debezium_op, target.source)
        old = b"[%b]" % before if op == "+U" else _NULL
        data = before if op == "-D" else after
        names = names if names is not None else orjson.dumps(list(decode_columns(pk)))
        head = _members((b"old", old), skip_nulls=skip)
        return b'{%b"data":[%b],"type":"%b"%b,"pkNames":%b}' % (
            head + b"," if head else b"", data, canal_type, target.source, names)

    def add(self, out: list[SinkMessage], key: bytes | None, value: bytes) -> int:
        """Append the change events of one changelog record (one per table id); none for
        DDL (kept in :attr:`ddl`). Returns the record's ``ts_ms``."""
        if self._transform is not None:
            changed = self._transform.apply(value)
            if changed is None:
                return self._transform.ts_ms
            value = changed
        record = decode_full_record(value)
        check_version(record.v)
        if record.op == "DDL":
            self.ddl = decode_ddl(value)
            return record.ts_ms
        if record.db is None or record.table is None:
            raise msgspec.ValidationError("a row change needs `db` and `table`")
        pk, before, after = bytes(record.pk), bytes(record.before), bytes(record.after)
        name = f"{record.db}.{record.table}"
        schema, stamps = None, frozenset[bytes]()
        if self._options.typed:
            schema, stamps = self.layout(record.layout, name, record.pos)
            if self._options.iso_values and stamps:
                before = before if before == _NULL else iso_timestamps(before, stamps)
                after = after if after == _NULL else iso_timestamps(after, stamps)
        for target in self.targets(record.db, record.table):
            out.append((target.topic, self.key(target, pk, stamps),
                        self.value(target, record.op, pk, before, after, schema=schema),
                        target.headers, record.ts_ms, name))
        return record.ts_ms

    def messages(self, key: bytes | None, value: bytes) -> list[SinkMessage]:
        out: list[SinkMessage] = []
        self.add(out, key, value)
        return out
