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

from typing import Any

import msgspec
import orjson

from cdc_ingest.formats.connect_schema import schema_block
from cdc_ingest.formats.event_routing import EventAddress, EventOptions, Target
from cdc_ingest.formats.event_values import (
    NULL,
    decode_columns,
    iso_timestamps,
    members,
    without_nulls,
)
from cdc_ingest.formats.lookups import Layouts
from cdc_ingest.formats.upsert_json import SinkMessage
from cdc_ingest.model.changelog import DdlRecord, check_version, decode_ddl, decode_full_record
from cdc_ingest.routing.routes import Router
from cdc_ingest.transform.records import Transformer
from cdc_ingest.transform.rules import RuleSpec

_OPS = {"+I": (b"c", b"INSERT"), "+U": (b"u", b"UPDATE"), "-D": (b"d", b"DELETE")}


class EventSerde(EventAddress):
    """Changelog records -> change events; the same interface as
    :class:`~cdc_ingest.formats.upsert_json.SinkSerde` (the writer, resets and re-keys use either).
    Where each goes and its key: :class:`~cdc_ingest.formats.event_routing.EventAddress`."""

    def __init__(self, router: Router, options: EventOptions, with_headers: bool,
                 transforms: tuple[RuleSpec, ...] = (), layouts: Layouts | None = None
                 ) -> None:
        super().__init__(router, options, with_headers)
        self._lookup = layouts  # needed when options.typed
        self._transform = Transformer(transforms) if transforms else None
        self.ddl: DdlRecord | None = None
        # typed layout id -> (schema block, timestamp columns)
        self._layouts: dict[str, tuple[bytes | None, frozenset[bytes]]] = {}

    def layout(self, lid: str | None, table: str, pos: str
               ) -> tuple[bytes | None, frozenset[bytes]]:
        """(the ``schema`` block, the timestamp columns) of a typed layout."""
        hit = self._layouts.get(lid or "")
        if hit is None:
            assert self._lookup is not None, "typed events need the layouts"
            columns = self._lookup.columns(lid, table, pos)
            hit = self._layouts[lid or ""] = self.layout_of(columns)
        return hit

    def table_timestamps(self, db: str, table: str) -> frozenset[bytes]:
        """The timestamp columns of a table (any of its layouts), when values are written in
        ISO-8601; else none."""
        if not self._options.iso_values:
            return frozenset()
        assert self._lookup is not None, "typed events need the layouts"
        return self._lookup.timestamps(db, table)

    def layout_of(self, columns: list[dict[str, Any]]) -> tuple[bytes | None,
                                                                  frozenset[bytes]]:
        stamps = frozenset(str(c["name"]).encode() for c in columns
                           if str(c["type"]).startswith("TIMESTAMP"))
        return (schema_block(columns) if self._options.include_schema else None), stamps

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
            before = before if before == NULL else without_nulls(before)
            after = after if after == NULL else without_nulls(after)
        if not self.canal:
            if skip:
                return b"{%b}" % members((b"before", before), (b"after", after),
                                          (b"op", b'"%b"' % debezium_op),
                                          (b"source", target.source), skip_nulls=True)
            return b'{"before":%b,"after":%b,"op":"%b","source":%b}' % (
                before, after, debezium_op, target.source)
        old = b"[%b]" % before if op == "+U" else NULL
        data = before if op == "-D" else after
        names = names if names is not None else orjson.dumps(list(decode_columns(pk)))
        head = members((b"old", old), skip_nulls=skip)
        return b'{%b"data":[%b],"type":"%b"%b,"pkNames":%b}' % (
            head + b"," if head else b"", data, canal_type, target.source, names)

    def add(self, out: list[SinkMessage], key: bytes | None, value: bytes) -> int:
        """Append the change events of one changelog record (one per table id); none for
        DDL (kept in :attr:`ddl`). Returns the record's ``ts_ms``."""
        record = decode_full_record(value)
        check_version(record.v)
        if record.op == "DDL":
            self.ddl = decode_ddl(value)
            return record.ts_ms
        if self._transform is not None:  # on the record as decoded here
            changed = self._transform.apply(record)
            if changed is None:
                return record.ts_ms
            record = changed
        if record.db is None or record.table is None:
            raise msgspec.ValidationError("a row change needs `db` and `table`")
        pk, before, after = bytes(record.pk), bytes(record.before), bytes(record.after)
        name = f"{record.db}.{record.table}"
        schema, stamps = None, frozenset[bytes]()
        if self._options.typed:
            schema, stamps = self.layout(record.layout, name, record.pos)
            if self._options.iso_values and stamps:
                before = before if before == NULL else iso_timestamps(before, stamps)
                after = after if after == NULL else iso_timestamps(after, stamps)
        for target in self.targets(record.db, record.table):
            out.append((target.topic, self.key(target, pk, stamps),
                        self.value(target, record.op, pk, before, after, schema=schema),
                        target.headers, record.ts_ms, name))
        return record.ts_ms

    def messages(self, key: bytes | None, value: bytes) -> list[SinkMessage]:
        out: list[SinkMessage] = []
        self.add(out, key, value)
        return out
