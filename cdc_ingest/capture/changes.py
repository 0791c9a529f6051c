"""Rows events -> changelog messages (key bytes, value bytes), DESIGN section 3."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import orjson

from cdc_ingest.capture.binlog import Rows
from cdc_ingest.capture.decoder import decoder_kind
from cdc_ingest.capture.schema import TableSchema
from cdc_ingest.errors import SourceError
from cdc_ingest.model import CHANGELOG_VERSION
from cdc_ingest.verify.values import dumps

Message = tuple[bytes, bytes]


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


def _value(
    op: str, ev: Rows, pk: dict[str, Any], before: Any, after: Any, ts_ms: int, pos: str
) -> bytes:
    return orjson.dumps(
        {
            "v": CHANGELOG_VERSION,
            "op": op,
            "db": ev.schema.db,
            "table": ev.schema.table,
            "pk": pk,
            "before": before,
            "after": after,
            "ts_ms": ts_ms,
            "pos": pos,
        }
    )


def row_messages(
    ev: Rows, plan: KeyPlan, before: list[Any] | None, after: list[Any] | None, pos: str
) -> Iterator[Message]:
    """One row change as changelog messages; a key-changing UPDATE is -D then +I."""
    names = ev.schema.names
    ts_ms = ev.ts * 1000
    if ev.kind == "I":
        assert after is not None
        pk = plan.key(after)
        row = dict(zip(names, after, strict=True))
        yield orjson.dumps(pk), _value("+I", ev, pk, None, row, ts_ms, pos)
        return
    assert before is not None
    old_pk = plan.key(before)
    old_row = dict(zip(names, before, strict=True))
    if ev.kind == "D":
        yield orjson.dumps(old_pk), _value("-D", ev, old_pk, old_row, None, ts_ms, pos)
        return
    assert after is not None
    new_pk = plan.key(after)
    new_row = dict(zip(names, after, strict=True))
    old_key, new_key = orjson.dumps(old_pk), orjson.dumps(new_pk)
    if old_key == new_key:
        yield new_key, _value("+U", ev, new_pk, old_row, new_row, ts_ms, pos)
    else:
        yield old_key, _value("-D", ev, old_pk, old_row, None, ts_ms, pos)
        yield new_key, _value("+I", ev, new_pk, None, new_row, ts_ms, pos)


def ddl_message(db: str, table: str, sql: str, ts: int, pos: str) -> bytes:
    return orjson.dumps(
        {
            "v": CHANGELOG_VERSION,
            "op": "DDL",
            "db": db,
            "table": table,
            "pk": None,
            "before": None,
            "after": None,
            "ts_ms": ts * 1000,
            "pos": pos,
            "ddl": sql,
        }
    )


def snapshot_message(
    db: str, table: str, pk: dict[str, Any], row: dict[str, Any], ts_ms: int
) -> bytes:
    """A snapshot row: ``+I`` with the row as of its chunk's high watermark."""
    return dumps(
        {
            "v": CHANGELOG_VERSION,
            "op": "+I",
            "db": db,
            "table": table,
            "pk": pk,
            "before": None,
            "after": row,
            "ts_ms": ts_ms,
            "pos": "snapshot",
        }
    )


# -- the fast path ---------------------------------------------------------------------------
#
# row_messages() above is the reference: one envelope dict per record through orjson. The
# encoder below writes the same bytes from pieces rendered once per table layout (the envelope
# up to "pk", the key's field name), so per row only the key and the row go through orjson.
# tests/integration/test_capture_decoder_parity.py holds the two to identical output.

Produce = Callable[..., None]
Keep = Callable[[list[Any] | None, list[Any] | None], bool]


def table_encoder(schema: TableSchema, plan: KeyPlan) -> TableEncoder:
    """The compiled encoder (``_rowdecode.RowEncoder``) when capture uses the compiled
    decoder, else :class:`TableEncoder`; both produce the same bytes."""
    encoder = TableEncoder(schema, plan)
    if decoder_kind() != "compiled":
        return encoder
    from cdc_ingest.capture import _rowdecode  # type: ignore[attr-defined]  # noqa: PLC0415

    key1 = encoder._key1
    compiled: TableEncoder = _rowdecode.RowEncoder(
        schema.names, key1[1] if key1 else -1, key1[0] if key1 else b"", encoder.key,
        encoder._heads["+I"], encoder._heads["+U"], encoder._heads["-D"], orjson.dumps, plan,
    )
    return compiled


class TableEncoder:
    """Changelog messages of one table layout's rows, produced straight to Kafka."""

    __slots__ = ("_heads", "_key1", "indexes", "names", "plan")

    def __init__(self, schema: TableSchema, plan: KeyPlan) -> None:
        self.plan = plan
        self.names = schema.names
        self.indexes = plan.indexes
        db, table = orjson.dumps(schema.db), orjson.dumps(schema.table)
        self._heads = {
            op: b'{"v":%d,"op":"%s","db":%b,"table":%b,"pk":'
            % (CHANGELOG_VERSION, op.encode(), db, table)
            for op in ("+I", "+U", "-D")
        }
        # a one-column key is rendered around its value; wider keys through a dict
        self._key1 = (
            (b"{" + orjson.dumps(plan.names[0]) + b":", plan.indexes[0])
            if len(plan.names) == 1 else None
        )

    def key(self, row: list[Any]) -> bytes:
        if self._key1 is not None:
            head, i = self._key1
            return head + orjson.dumps(row[i]) + b"}"
        return orjson.dumps(self.plan.key(row))

    def produce_rows(
        self,
        produce: Produce,
        room: Callable[[], None],
        topic: str,
        kind: str,
        rows: list[tuple[list[Any] | None, list[Any] | None]],
        first_no: int,
        pos_prefix: str,
        ts_ms: int,
        keep: Keep | None,
    ) -> int:
        """Produce ``rows`` (the ``first_no``-th row of its transaction first); rows that
        ``keep`` refuses are skipped. ``room()`` serves the producer when its queue is full.
        Returns how many rows were produced."""
        dumps = orjson.dumps
        names = self.names
        key_of = self.key
        heads = self._heads
        # everything after the row number is the same for all rows of the event
        tail = b',"ts_ms":%d,"pos":%b' % (ts_ms, dumps(pos_prefix + "#")[:-1])
        produced = 0
        no = first_no - 1
        for before, after in rows:
            no += 1
            if keep is not None and not keep(before, after):
                continue
            end = b'%b%d"}' % (tail, no)
            if kind == "I":
                key = key_of(after)  # type: ignore[arg-type]
                value = b'%b%b,"before":null,"after":%b%b' % (
                    heads["+I"], key, dumps(dict(zip(names, after, strict=True))), end)  # type: ignore[arg-type]
                out: tuple[tuple[bytes, bytes], ...] = ((key, value),)
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
                else:
                    out = (
                        (old_key, b'%b%b,"before":%b,"after":null%b' % (
                            heads["-D"], old_key, old_row, end)),
                        (key, b'%b%b,"before":null,"after":%b%b' % (
                            heads["+I"], key, new_row, end)),
                    )
            for k, v in out:
                while True:
                    try:
                        produce(topic, v, k, timestamp=ts_ms)
                        break
                    except BufferError:
                        room()
            produced += 1
        return produced
