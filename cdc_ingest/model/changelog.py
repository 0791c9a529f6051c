"""The changelog record: the one contract between capture and the sink.

One Kafka message per row change in the pipeline's changelog topic:

* **key**: the canonical JSON of the key columns in key order, ``{"id":42}`` (compact, as
  orjson writes it), so one key always lands in one changelog partition, in binlog order.
  DDL records have no key and go to every partition.
* **value**: a JSON object with these fields, in this order (``layout`` only where capture
  knows the row's typed layout, docs/changelog-format.md)::

    {"v":1,"op":"+U","db":"shop","table":"orders","layout":"9c1f0e7d2a4b6c80","pk":{"id":42},
     "before":{...},"after":{...},"ts_ms":1700000000000,"pos":"0-1-9#3"}

  ``op`` is one of :class:`Op`; ``before``/``after`` are the row images (``null`` where the
  op has none), already in their output JSON form (docs/changelog-format.md); ``ts_ms`` is
  the binlog event time; ``pos`` is ``<transaction>#<row number in it>`` for binlog rows and
  ``snapshot`` for snapshot rows. DDL records add ``"ddl":"<statement>"`` and
  ``"action"`` (``truncate``, ``drop``, ``replace``, ``create``, ``alter``, ``rename``,
  ``other``); the sink tombstones a table's keys after ``truncate``/``drop``/``replace``.

A key-changing UPDATE travels as ``-D`` of the old key then ``+I`` of the new one. The format
is versioned by ``v``; a reader refuses a version it does not know
(:func:`check_version`). Capture writes it three ways, all byte-identical: the reference
(:func:`row_value`), the pure-Python fast encoder and the compiled one, both assembled from
:func:`value_head` and :func:`value_tail`. The sink reads it with :data:`decode_record`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import msgspec
import orjson

CHANGELOG_VERSION = 1
SNAPSHOT_POS = "snapshot"


class Op(StrEnum):
    INSERT = "+I"
    UPDATE = "+U"
    DELETE = "-D"
    DDL = "DDL"
    TX = "TX"  # a MySQL transaction ended (model/transaction_metadata.py, ``tx_value``)


class ChangelogVersionError(ValueError):
    """A record of a changelog version this reader does not know."""


def key_bytes(pk: dict[str, Any]) -> bytes:
    """The record key: the key columns as compact JSON, in key order."""
    return orjson.dumps(pk)


def value_head(op: str, db: str, table: str, layout: str | None = None) -> bytes:
    """Everything of a row record's value before the key object: ``{"v":1,...,"pk":``."""
    named = b'"layout":"%b",' % layout.encode() if layout else b""
    return b'{"v":%d,"op":"%s","db":%b,"table":%b,%b"pk":' % (
        CHANGELOG_VERSION, op.encode(), orjson.dumps(db), orjson.dumps(table), named)


def value_tail(ts_ms: int, pos_prefix: str, table_delta: int | None = None) -> bytes:
    """What follows ``"after":...`` up to the row number: ``,"ts_ms":N,"pos":"<prefix>#``.
    The row number and ``"}`` close the value. ``table_delta`` (transaction metadata on,
    docs/changelog-format.md): the row's number among its transaction's changes of its
    table is its row number plus this; the same for every row of a rows event."""
    delta = b"" if table_delta is None else b',"table_delta":%d' % table_delta
    return b',"ts_ms":%d%b,"pos":%b' % (ts_ms, delta, orjson.dumps(pos_prefix + "#")[:-1])


def row_value(op: str, db: str, table: str, pk: dict[str, Any], before: Any, after: Any,
              ts_ms: int, pos: str, layout: str | None = None) -> bytes:
    """A row record's value, from its parts (the reference every encoder must equal)."""
    head: dict[str, Any] = {"v": CHANGELOG_VERSION, "op": op, "db": db, "table": table}
    if layout:
        head["layout"] = layout
    return orjson.dumps({**head, "pk": pk, "before": before, "after": after, "ts_ms": ts_ms,
                         "pos": pos})


def snapshot_value(db: str, table: str, pk: dict[str, Any], row: dict[str, Any],
                   ts_ms: int, layout: str | None = None) -> bytes:
    """A snapshot row: ``+I`` with the row as of its chunk's high watermark."""
    return row_value(Op.INSERT, db, table, pk, None, row, ts_ms, SNAPSHOT_POS, layout)


def snapshot_parts(db: str, table: str, ts_ms: int, layout: str | None = None
                   ) -> tuple[bytes, bytes, bytes]:
    """The parts of a snapshot row's value around its key and row JSON: ``head + key + mid +
    row + tail`` is :func:`snapshot_value` of the same row, byte for byte."""
    return (value_head(Op.INSERT, db, table, layout), b',"before":null,"after":',
            b',"ts_ms":%d,"pos":%b}' % (ts_ms, orjson.dumps(SNAPSHOT_POS)))


def ddl_value(db: str, table: str, sql: str, ts_ms: int, pos: str, action: str,
              key: dict[str, Any] | None = None) -> bytes:
    """A DDL record's value (it has no key; it goes to every partition). ``action`` is what
    the statement does to the table (``capture.ddl.action_of``); ``key``, the table's key
    schema before the statement (``{"columns": [...], "classes": [...]}``, the schema
    topic's), is written for a statement that empties the table: its columns as ``key``, their
    key classes as ``classes``."""
    value = {"v": CHANGELOG_VERSION, "op": Op.DDL.value, "db": db, "table": table,
             "pk": None, "before": None, "after": None, "ts_ms": ts_ms,
             "pos": pos, "ddl": sql, "action": action}
    if key is not None:
        value["key"] = list(key["columns"])
        value["classes"] = list(key["classes"])
    return orjson.dumps(value)


# -- reading -------------------------------------------------------------------------------


class RawRecord(msgspec.Struct):
    """The fields of a record the sink reads; ``pk`` and ``after`` stay their raw JSON text
    (numbers never go through a float); the others are skipped unparsed."""

    v: int
    op: str
    db: str | None
    table: str | None
    pk: msgspec.Raw
    after: msgspec.Raw
    ts_ms: int


class FullRecord(msgspec.Struct):
    """A record with both row images, each its raw JSON text (change events, transforms)."""

    v: int
    op: str
    db: str | None
    table: str | None
    pk: msgspec.Raw
    before: msgspec.Raw
    after: msgspec.Raw
    ts_ms: int
    pos: str = ""
    layout: str | None = None  # the typed layout id (capture/typed_layout.py)


class ColumnsRecord(msgspec.Struct):
    """The same with ``pk`` and ``after`` as their columns, each value its raw JSON text."""

    v: int
    op: str
    db: str | None
    table: str | None
    pk: dict[str, msgspec.Raw] | None
    after: dict[str, msgspec.Raw] | None
    ts_ms: int


# A table snapshotted again on request (``cdc-ingest snapshot``, capture/signals.py): the
# record goes before the table's new snapshot rows, and the sink tombstones its keys as for
# TRUNCATE, so no key the new snapshot lacks stays live.
RESNAPSHOT = "resnapshot"

# DDL actions after which a table's earlier rows are gone: the sink tombstones every key of
# the table in its topics (docs/output-contract.md, "Schema changes"). A rename empties both
# names it touches: the old name holds no table any more, and a table arriving under the new
# name is snapshotted after the record (capture/binlog_phase.py).
EMPTIES_TABLE = frozenset({"truncate", "drop", "replace", "rename", RESNAPSHOT})

# A swap (``RENAME TABLE t TO t_old, t_new TO t``: a name that a table leaves and another
# arrives at in one statement, capture/table_ddl.py): ``swap`` at the statement empties
# nothing where the sink can tell which keys the arriving table's snapshot writes (plain JSON
# upserts; elsewhere it empties the name as ``rename`` does); ``swap-end``, after that
# snapshot's last row, tombstones the keys it did not write (sink/task/swaps.py).
SWAP = "swap"
SWAP_END = "swap-end"

# Re-keying a table in place (capture/rekey.py, docs/output-contract.md): ``rekey`` goes to
# every partition where the table's key changed; ``rekey-cut`` and ``rekey-end`` enclose, in
# one partition, the table's rows under its new key, which the sink writes in one transaction
# with a tombstone for every old key.
REKEY = "rekey"
REKEY_CUT = "rekey-cut"
REKEY_END = "rekey-end"


class DdlRecord(msgspec.Struct):
    """A DDL record as the sink reads it (decoded only for records whose ``op`` is DDL)."""

    db: str
    table: str
    ddl: str
    pos: str
    action: str = "other"
    key: list[str] | None = None  # the key columns, on a record that empties the table
    classes: list[str] | None = None  # their key classes (capture/key_schema.py), in order


decode_record = msgspec.json.Decoder(RawRecord).decode
decode_record_columns = msgspec.json.Decoder(ColumnsRecord).decode
decode_full_record = msgspec.json.Decoder(FullRecord).decode
decode_ddl = msgspec.json.Decoder(DdlRecord).decode


def older_capture(record: str, field: str, needed_for: str) -> str:
    """The one compatibility rule within a version (docs/changelog-format.md, "Versions"):
    fields are only ever added, so a record without one was written by an older capture. A
    reader that can be exact without the field goes on; one that cannot stops with this
    message: which record, which field, what needs it, the fix."""
    return (f"{record} has no \"{field}\": a capture older than this sink wrote it, and "
            f"{needed_for} needs it. Fix: run capture and the sink from the same cdc-ingest "
            "release; the records written before the upgrade are read by a new pipeline "
            "(a new pipeline.name)")


def check_version(v: int) -> None:
    """Raise :class:`ChangelogVersionError` unless ``v`` is a version this code reads."""
    if v != CHANGELOG_VERSION:
        raise ChangelogVersionError(
            f"changelog record version {v}, but this cdc-ingest reads version "
            f"{CHANGELOG_VERSION}: capture and sink must run the same cdc-ingest release")
