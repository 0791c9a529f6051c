"""Changelog record -> sink messages (docs/output-contract.md): topic, key, value, headers,
time.

Values travel from capture already in their output JSON form (orjson's compact text), so the
upsert value is the record's ``after`` object *as it is in the changelog bytes*: msgspec
decodes only the fields the sink looks at and hands ``after`` (and ``pk``) over as the raw
JSON text, unparsed. Numbers with a fraction or an exponent (DECIMAL, FLOAT, DOUBLE) therefore
never go through a float (``0.50`` and 65-digit decimals come out as they went in), and
integers beyond 64 bits, which orjson cannot write, pass through as well.
``value.fields-include: EXCEPT_KEY`` decodes ``after`` into its columns, each value still its
raw JSON text, and writes the others back with orjson.

For any changelog that capture writes (orjson output: compact, strings escaped one canonical
way, no duplicate keys) this is byte for byte what parsing the record and serializing ``after``
again would give, only without doing either.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import msgspec
import orjson

from cdc_ingest.formats.event_routing import Headers
from cdc_ingest.formats.jackson import jackson_json
from cdc_ingest.model.changelog import (
    DdlRecord,
    check_version,
    decode_ddl,
    decode_full_record,
    decode_record,
    decode_record_columns,
)
from cdc_ingest.transform.records import Transformer
from cdc_ingest.transform.rules import RuleSpec

Topics = Callable[[str, str], tuple[str, ...]]

# One sink message: (topic, key, value (None: a tombstone), headers, timestamp ms, "db.table").
# A plain tuple: the writer makes one per changelog record and sink topic.
SinkMessage = tuple[str, bytes, bytes | None, Headers | None, int, str]

# The per-(db, table) part of every message of that table: its topics, headers and name.
_Route = tuple[tuple[str, ...], Headers | None, str]


def _json(columns: dict[str, msgspec.Raw]) -> bytes:
    return orjson.dumps({name: orjson.Fragment(bytes(raw)) for name, raw in columns.items()})


# a key or row object as its columns, each value its raw JSON text (None: null)
_columns_or_none = msgspec.json.Decoder(dict[str, msgspec.Raw] | None).decode


@dataclass(frozen=True)
class UpsertOptions:
    """What upsert messages look like (picklable): ``except_key`` (``value.fields-include:
    EXCEPT_KEY``), ``with_headers`` (``sink.add-tableId-to-header-enabled``), ``transforms``
    (the ``transform:`` rules, applied first), ``jackson_keys`` (``key.json.encoding:
    jackson``)."""

    except_key: bool = False
    with_headers: bool = False
    transforms: tuple[RuleSpec, ...] = ()
    jackson_keys: bool = False


class SinkSerde:
    """Turns changelog records into sink messages; built once per task from the settings.

    :meth:`add` is the per-record hot path: it appends to a list the caller owns and keeps
    what every message of a table shares (topics, headers, name) in a per-table cache.
    """

    def __init__(self, topics: Topics, options: UpsertOptions) -> None:
        self._topics = topics
        self._jackson = options.jackson_keys
        self._transform = Transformer(options.transforms) if options.transforms else None
        self._except_key = options.except_key
        self._with_headers = options.with_headers
        self._routes: dict[tuple[str | None, str | None], _Route] = {}
        # the DDL record :meth:`add` met last; the caller takes it (and sets it back to None)
        self.ddl: DdlRecord | None = None

    def route(self, db: str, table: str) -> _Route:
        """A table's topics, headers and ``db.table`` name."""
        return self._routes.get((db, table)) or self._route(db, table)

    def _route(self, db: str | None, table: str | None) -> _Route:
        if db is None or table is None:
            raise msgspec.ValidationError("a row change needs `db` and `table`")
        headers: Headers | None = (
            [("namespace", b""), ("schemaName", db.encode()), ("tableName", table.encode())]
            if self._with_headers
            else None
        )  # one list shared by the table's messages: the producer only reads it
        route = self._routes[(db, table)] = (self._topics(db, table), headers, f"{db}.{table}")
        return route

    def add(self, out: list[SinkMessage], key: bytes | None, value: bytes) -> int:
        """Append the messages of one changelog record to ``out``: one per routed topic,
        none for DDL (kept in :attr:`ddl` instead). Returns the record's ``ts_ms``. Raises
        ``ValueError`` (a ``msgspec.DecodeError``, or a ``ChangelogVersionError``) for a
        value that is not a changelog record of this version."""
        if self._transform is not None:
            return self._add_transformed(out, key, value)
        if self._except_key:
            return self._add_except_key(out, key, value)
        record = decode_record(value)
        check_version(record.v)
        op, ts = record.op, record.ts_ms
        if op == "DDL":
            self.ddl = decode_ddl(value)
            return ts
        route = self._routes.get((record.db, record.table))
        if route is None:
            route = self._route(record.db, record.table)
        topics, headers, name = route
        if key is None:
            key = bytes(record.pk)
        if self._jackson:
            key = jackson_json(key)
        body = None if op == "-D" else bytes(record.after)
        if len(topics) == 1:
            out.append((topics[0], key, body, headers, ts, name))
        else:
            out.extend([(topic, key, body, headers, ts, name) for topic in topics])
        return ts

    def _add_except_key(self, out: list[SinkMessage], key: bytes | None, value: bytes) -> int:
        record = decode_record_columns(value)
        check_version(record.v)
        op, ts = record.op, record.ts_ms
        if op == "DDL":
            self.ddl = decode_ddl(value)
            return ts
        return self._emit(out, key, op, record.db, record.table, record.pk, record.after, ts)

    def _add_transformed(self, out: list[SinkMessage], key: bytes | None, value: bytes) -> int:
        """The record decoded once, the transform applied to it, its messages."""
        assert self._transform is not None
        record = decode_full_record(value)
        check_version(record.v)
        if record.op == "DDL":
            self.ddl = decode_ddl(value)
            return record.ts_ms
        changed = self._transform.apply(record)
        if changed is None:
            return record.ts_ms
        if not self._except_key:
            pk, after = bytes(changed.pk), bytes(changed.after)
            return self._emit_raw(out, key, changed.op, changed.db, changed.table, pk, after,
                                  changed.ts_ms)
        return self._emit(out, key, changed.op, changed.db, changed.table,
                          _columns_or_none(bytes(changed.pk)),
                          _columns_or_none(bytes(changed.after)), changed.ts_ms)

    def _emit_raw(self, out: list[SinkMessage], key: bytes | None, op: str, db: str | None,
                  table: str | None, pk: bytes, after: bytes, ts: int) -> int:
        """The messages of a row change whose key and row are their JSON text."""
        topics, headers, name = self._routes.get((db, table)) or self._route(db, table)
        if key is None:
            key = pk
        if self._jackson:
            key = jackson_json(key)
        body = None if op == "-D" else after
        out.extend([(topic, key, body, headers, ts, name) for topic in topics])
        return ts

    def _emit(self, out: list[SinkMessage], key: bytes | None, op: str, db: str | None,
              table: str | None, pk: dict[str, msgspec.Raw] | None,
              after: dict[str, msgspec.Raw] | None, ts: int) -> int:
        """The messages of a row change, its key and row as their columns
        (``value.fields-include: EXCEPT_KEY``: the row without its key columns)."""
        topics, headers, name = self._routes.get((db, table)) or self._route(db, table)
        columns = pk or {}
        if key is None:
            key = b"null" if pk is None else _json(columns)
        if self._jackson:
            key = jackson_json(key)
        body = None
        if op != "-D":
            body = (b"null" if after is None
                    else _json({k: v for k, v in after.items() if k not in columns}))
        out.extend([(topic, key, body, headers, ts, name) for topic in topics])
        return ts

    def messages(self, key: bytes | None, value: bytes) -> list[SinkMessage]:
        """The messages of one changelog record (tests, tools; the writer uses :meth:`add`)."""
        out: list[SinkMessage] = []
        self.add(out, key, value)
        return out


class Serde(Protocol):
    """What the writer, resets and re-keys need of a serde: :class:`SinkSerde` (upserts) or
    :class:`~cdc_ingest.formats.change_events.EventSerde` (change events)."""

    ddl: DdlRecord | None

    def route(self, db: str, table: str) -> tuple[tuple[str, ...], Headers | None, str]: ...
    def add(self, out: list[SinkMessage], key: bytes | None, value: bytes) -> int: ...
    def messages(self, key: bytes | None, value: bytes) -> list[SinkMessage]: ...


def last_per_key(messages: list[SinkMessage]) -> list[SinkMessage]:
    """``sink.buffer-flush``: only the last message per (topic, key), in last-write order."""
    latest: dict[tuple[str, bytes], SinkMessage] = {}
    for msg in messages:
        slot = (msg[0], msg[1])
        latest.pop(slot, None)
        latest[slot] = msg
    return list(latest.values())
