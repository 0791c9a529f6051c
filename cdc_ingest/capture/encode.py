"""Row images -> changelog records (key bytes, value bytes), produced straight to Kafka.

:func:`row_messages` is the reference: one envelope through
:func:`cdc_ingest.model.changelog.row_value` per record. :class:`TableEncoder` writes the same
bytes from pieces rendered once per table layout (the envelope up to ``pk``, the key's field
name), so per row only the key and the row go through orjson; the compiled ``RowEncoder``
(``_rowencode.pyx``) does the same in C. tests/integration/test_capture_decoder_parity.py
holds all three to identical output.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import orjson

from cdc_ingest.capture.binlog_schema import ColumnSpec, FieldType, TableSchema
from cdc_ingest.capture.decoder import decoder_kind
from cdc_ingest.capture.events import Rows
from cdc_ingest.errors import SourceError
from cdc_ingest.model.changelog import Op, key_bytes, row_value, value_head, value_tail

# One changelog record as Kafka takes it.
KeyValue = tuple[bytes, bytes]
# send(topic, value, key, timestamp_ms): one message to Kafka (TransactionalProducer.send)
Send = Callable[[str, bytes, bytes, int], None]
# the producer's own produce (TransactionalProducer.raw_produce): a message it refuses
# (BufferError, KafkaException) is passed to Send, which waits for room or reports the error
Produce = Callable[..., None]
# keep(before, after) -> which halves of a row change to write: KEEP_OLD (the before
# image's key: a delete, or the -D of a key-changing update), KEEP_NEW (the after image's
# key: an insert, or the +I of a key change), both (KEEP_ALL), or neither (0). An update
# that keeps its key is written when either bit is set.
Keep = Callable[[list[Any] | None, list[Any] | None], int]
KEEP_OLD, KEEP_NEW, KEEP_ALL = 1, 2, 3
RowPair = tuple[list[Any] | None, list[Any] | None]


class KeyPlan:
    """Where the key columns sit in a row, computed once per table layout."""

    __slots__ = ("indexes", "names")

    def __init__(self, schema: TableSchema, where: str) -> None:
        if not schema.primary_key:
            raise SourceError(
                f"table {schema.db}.{schema.table} has no primary key, so its changes cannot "
                f"be keyed (binlog {where}). Fix: add a primary key, or name its key columns "
                f"in source.tables.key-columns ('{schema.db}.{schema.table}: col1,col2'), or "
                "exclude the table with source.tables.exclude."
            )
        names = schema.names
        missing = [k for k in schema.primary_key if k not in names]
        if missing:
            raise SourceError(
                f"key column(s) {missing} of {schema.db}.{schema.table} are not in the table "
                f"(binlog {where}). Fix: correct source.tables.key-columns."
            )
        self.names = schema.primary_key
        self.indexes = tuple(names.index(k) for k in schema.primary_key)

    def key(self, row: list[Any]) -> dict[str, Any]:
        return {n: row[i] for n, i in zip(self.names, self.indexes, strict=True)}


def row_messages(ev: Rows, plan: KeyPlan, before: list[Any] | None, after: list[Any] | None,
                 pos: str, layout: str | None = None) -> Iterator[KeyValue]:
    """One row change as changelog records; a key-changing UPDATE is -D then +I."""
    names, db, table = ev.schema.names, ev.schema.db, ev.schema.table
    ts_ms = ev.ts * 1000

    def record(op: Op, pk: dict[str, Any], old: Any, new: Any) -> KeyValue:
        return key_bytes(pk), row_value(op, db, table, pk, old, new, ts_ms, pos, layout)

    old_row = None if before is None else dict(zip(names, before, strict=True))
    new_row = None if after is None else dict(zip(names, after, strict=True))
    if ev.kind == "I":
        assert after is not None
        yield record(Op.INSERT, plan.key(after), None, new_row)
        return
    assert before is not None
    old_pk = plan.key(before)
    if ev.kind == "D":
        yield record(Op.DELETE, old_pk, old_row, None)
        return
    assert after is not None
    new_pk = plan.key(after)
    if key_bytes(old_pk) == key_bytes(new_pk):
        yield record(Op.UPDATE, new_pk, old_row, new_row)
    else:
        yield record(Op.DELETE, old_pk, old_row, None)
        yield record(Op.INSERT, new_pk, None, new_row)


def table_encoder(schema: TableSchema, plan: KeyPlan, layout: str | None = None) -> TableEncoder:
    """The compiled encoder (``_rowencode.RowEncoder``) when capture uses the compiled
    decoder, else :class:`TableEncoder`; both produce the same bytes. ``layout``: the typed
    layout id every record names."""
    encoder = TableEncoder(schema, plan, layout)
    if decoder_kind() != "compiled":
        return encoder
    # here, not at the top: the compiled extension exists only in a build with a C compiler
    from cdc_ingest.capture import _rowencode  # type: ignore[attr-defined]  # noqa: PLC0415

    key1 = encoder._key1
    compiled: TableEncoder = _rowencode.RowEncoder(
        schema.names, key1[1] if key1 else -1, key1[0] if key1 else b"", encoder.key,
        encoder._heads["+I"], encoder._heads["+U"], encoder._heads["-D"], orjson.dumps, plan,
    )
    return compiled


class TableEncoder:
    """Changelog records of one table layout's rows, produced straight to Kafka."""

    __slots__ = ("_heads", "_key1", "indexes", "names", "plan")

    def __init__(self, schema: TableSchema, plan: KeyPlan, layout: str | None = None) -> None:
        self.plan = plan
        self.names = schema.names
        self.indexes = plan.indexes
        self._heads = {op.value: value_head(op, schema.db, schema.table, layout) for op in
                       (Op.INSERT, Op.UPDATE, Op.DELETE)}
        # a one-column key is rendered around its value; wider keys through a dict
        self._key1 = (
            (b"{" + orjson.dumps(plan.names[0]) + b":", plan.indexes[0])
            if len(plan.names) == 1 else None
        )

    def key(self, row: list[Any]) -> bytes:
        if self._key1 is not None:
            head, i = self._key1
            return head + orjson.dumps(row[i]) + b"}"
        return key_bytes(self.plan.key(row))

    def produce_rows(self, send: Send, topic: str, kind: str, rows: list[RowPair],
                     first_no: int, pos_prefix: str, ts_ms: int, keep: Keep | None,
                     produce: Produce | None = None, table_delta: int | None = None) -> int:
        """Send ``rows`` (the ``first_no``-th row of its transaction first); what ``keep``
        refuses is left out (of a key-changing update, each half on its own). Returns how
        many rows were sent. ``produce``: librdkafka's own call, which the compiled encoder
        tries first (this one always sends). ``table_delta``: see
        :func:`~cdc_ingest.model.changelog.value_tail`."""
        dumps = orjson.dumps
        names = self.names
        key_of = self.key
        heads = self._heads
        tail = value_tail(ts_ms, pos_prefix, table_delta)  # the same for all rows of the event
        produced = 0
        no = first_no - 1
        for before, after in rows:
            no += 1
            halves = KEEP_ALL if keep is None else keep(before, after)
            if not halves:
                continue
            end = b'%b%d"}' % (tail, no)
            if kind == "I":
                key = key_of(after)  # type: ignore[arg-type]
                value = b'%b%b,"before":null,"after":%b%b' % (
                    heads["+I"], key, dumps(dict(zip(names, after, strict=True))), end)  # type: ignore[arg-type]
                out: tuple[KeyValue, ...] = ((key, value),)
            elif kind == "D":
                key = key_of(before)  # type: ignore[arg-type]
                value = b'%b%b,"before":%b,"after":null%b' % (
                    heads["-D"], key, dumps(dict(zip(names, before, strict=True))), end)  # type: ignore[arg-type]
                out = ((key, value),)
            else:
                old_key, key = key_of(before), key_of(after)  # type: ignore[arg-type]
                old_row = dumps(dict(zip(names, before, strict=True)))  # type: ignore[arg-type]
                new_row = dumps(dict(zip(names, after, strict=True)))  # type: ignore[arg-type]
                if old_key == key:
                    out = ((key, b'%b%b,"before":%b,"after":%b%b' % (
                        heads["+U"], key, old_row, new_row, end)),)
                else:  # a key change: -D of the old key, then +I of the new one
                    out = ()
                    if halves & KEEP_OLD:
                        out += ((old_key, b'%b%b,"before":%b,"after":null%b' % (
                            heads["-D"], old_key, old_row, end)),)
                    if halves & KEEP_NEW:
                        out += ((key, b'%b%b,"before":null,"after":%b%b' % (
                            heads["+I"], key, new_row, end)),)
            for k, v in out:
                send(topic, v, k, ts_ms)
            produced += 1
        return produced


class Projected:
    """Rows of a layout written with other columns (``schema.change.behavior: ignore``): each
    pinned column's value, null for one the table no longer has; the rest left out."""

    __slots__ = ("_indexes", "inner", "plan")

    def __init__(self, inner: TableEncoder, indexes: list[int | None]) -> None:
        self.inner, self.plan, self._indexes = inner, inner.plan, indexes

    def _row(self, row: list[Any] | None) -> list[Any] | None:
        return None if row is None else [None if i is None else row[i] for i in self._indexes]

    def produce_rows(self, send: Send, topic: str, kind: str, rows: list[RowPair],
                     first_no: int, pos_prefix: str, ts_ms: int, keep: Keep | None,
                     produce: Produce | None = None, table_delta: int | None = None) -> int:
        project = self._row
        return self.inner.produce_rows(send, topic, kind,
                                       [(project(b), project(a)) for b, a in rows],
                                       first_no, pos_prefix, ts_ms, keep, produce,
                                       table_delta)


def pinned_schema(schema: TableSchema, columns: list[str]) -> tuple[TableSchema,
                                                                     list[int | None]]:
    """``schema`` shown with ``columns`` only (a column it lacks as NULL), and where each
    comes from in its rows."""
    by_name = {c.name: (i, c) for i, c in enumerate(schema.columns)}
    specs = tuple(by_name[n][1] if n in by_name else ColumnSpec(n, FieldType.NULL)
                  for n in columns)
    indexes = [by_name[n][0] if n in by_name else None for n in columns]
    return TableSchema(schema.db, schema.table, specs, schema.primary_key), indexes


class Encoders:
    """The encoder of each table layout, built once (schemas are cached objects: holding one
    keeps its id unique, so a schema change after DDL gets a new encoder)."""

    def __init__(self, on_layout: Callable[[TableSchema, str], str] | None = None,
                 pinned: Callable[[str, str], list[str] | None] | None = None) -> None:
        self._by_schema: dict[int, tuple[TableSchema, TableEncoder | Projected]] = {}
        # told of each layout before its first rows; returns the typed layout id
        self._on_layout = on_layout
        self._pinned = pinned  # the columns a table's rows are written with (None: all)

    def get(self, schema: TableSchema, where: str) -> TableEncoder | Projected:
        hit = self._by_schema.get(id(schema))
        if hit is None or hit[0] is not schema:
            plan = KeyPlan(schema, where)
            layout = self._on_layout(schema, where) if self._on_layout is not None else None
            columns = self._pinned(schema.db, schema.table) if self._pinned else None
            encoder: TableEncoder | Projected
            if columns is None or list(schema.names) == columns:
                encoder = table_encoder(schema, plan, layout)
            else:
                shown, indexes = pinned_schema(schema, columns)
                encoder = Projected(table_encoder(shown, KeyPlan(shown, where), layout),
                                    indexes)
            hit = (schema, encoder)
            self._by_schema[id(schema)] = hit
        return hit[1]
