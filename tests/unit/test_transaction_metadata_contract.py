"""The transaction metadata contract (cdc_ingest/model/transaction_metadata.py) against the
code that writes it: the sink's fast reading of a row record's transaction agrees with a full
decode of every record capture's encoders write, a TX record is told from every other record
by its start, and the part, BEGIN and END records read back what was written."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from cdc_ingest.capture.binlog_schema import ColumnSpec, FieldType, TableSchema
from cdc_ingest.capture.decoder import compiled_available
from cdc_ingest.capture.encode import KeyPlan, TableEncoder, table_encoder
from cdc_ingest.model.changelog import (
    ddl_value,
    row_value,
    snapshot_parts,
    snapshot_value,
    value_head,
    value_tail,
)
from cdc_ingest.model.transaction_metadata import (
    COLLECTION_ORDER_HEADER,
    ID_HEADER,
    PART_ENTRIES,
    TOTAL_ORDER_HEADER,
    TX_VALUE_START,
    MetadataRecordError,
    begin_end,
    decode_end,
    decode_part,
    decode_tx,
    part_values,
    tx_headers,
    tx_value,
)

# column names and strings that spell the envelope's own fields, so a search that looked in
# the row instead of the envelope would find them
NAMES = ["pos", "ts_ms", "table_delta", "snapshot", "a#1", '","pos":"x#9', "é", "v", "op"]
PIECES = ['","pos":"', ',"pos":"0-1-1#5"}', ',"ts_ms":', ',"table_delta":-3', "#", "snapshot",
          '"', "\\", "}", "\n", "é", "9", " ", "0-1-2#"]
IDS = ["0-1-7", "3e11fa47-71ca-11e1-9e33-c80aa9429562:23",
       "3e11fa47-71ca-11e1-9e33-c80aa9429562:tag_1:5", "binlog.000003:1234", "0-4294967295-1"]


def _schema(rng: random.Random) -> TableSchema:
    names = rng.sample(NAMES, rng.randint(1, len(NAMES)))
    columns = [ColumnSpec("id", FieldType.LONG)]
    columns += [ColumnSpec(n, rng.choice([FieldType.VARCHAR, FieldType.LONG])) for n in names]
    return TableSchema("db", rng.choice(["t", "pos", '","pos":"']), tuple(columns), ("id",))


def _value(rng: random.Random, column: ColumnSpec) -> Any:
    if rng.random() < 0.1:
        return None
    if column.type == FieldType.LONG:
        return rng.randint(-(2 ** 31), 2 ** 31 - 1)
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 6)))


def _rows(rng: random.Random, schema: TableSchema, kind: str) -> list[tuple[Any, Any]]:
    def row() -> list[Any]:
        return [rng.randint(1, 10 ** 6), *(_value(rng, c) for c in schema.columns[1:])]
    out: list[tuple[Any, Any]] = []
    for _ in range(rng.randint(1, 4)):
        before = row() if kind in ("U", "D") else None
        after = row() if kind in ("U", "I") else None
        if kind == "U" and rng.random() < 0.5:
            after[0] = before[0]  # type: ignore[index]  # an update that keeps its key
        out.append((before, after))
    return out


def _encoders(schema: TableSchema) -> list[Any]:
    plan = KeyPlan(schema, "test")
    found: list[Any] = [TableEncoder(schema, plan)]
    if compiled_available():
        found.append(table_encoder(schema, plan))
    return found


def _decoded(value: bytes) -> list[tuple[str, bytes]] | None:
    """The headers from a full decode of the record: the reference the fast reading equals."""
    record = orjson.loads(value)
    if record["pos"] == "snapshot":
        return None
    tx_id, number = record["pos"].rsplit("#", 1)
    table_no = int(number) + record.get("table_delta", 0)
    return [(ID_HEADER, tx_id.encode()), (TOTAL_ORDER_HEADER, number.encode()),
            (COLLECTION_ORDER_HEADER, str(table_no).encode())]


def test_the_fast_reading_of_a_row_record_agrees_with_a_full_decode() -> None:
    rng = random.Random(46)
    seen = 0
    for _ in range(300):
        schema = _schema(rng)
        kind = rng.choice("IUD")
        rows = _rows(rng, schema, kind)
        first, prefix = rng.randint(1, 10 ** 6), rng.choice(IDS)
        ts, delta = rng.randint(0, 2 ** 41), rng.choice([None, 0, rng.randint(-1000, 1000)])
        written = []
        for encoder in _encoders(schema):
            sent: list[bytes] = []
            encoder.produce_rows(lambda t, v, k, ts_, out=sent: out.append(v), "t", kind, rows,
                                 first, prefix, ts, None, None, delta)
            written.append(sent)
        assert all(w == written[0] for w in written)  # every encoder, the same bytes
        for value in written[0]:
            assert tx_headers(value) == _decoded(value), value
            seen += 1
        # the reference encoder, and the snapshot's (no transaction)
        pk = {"id": first}
        after = {c.name: _value(rng, c) for c in schema.columns}
        reference = row_value("+I", "db", schema.table, pk, None, after, ts, f"{prefix}#{first}")
        assert tx_headers(reference) == _decoded(reference)
        head, mid, tail = snapshot_parts("db", schema.table, ts)
        snapshot = head + orjson.dumps(pk) + mid + orjson.dumps(after) + tail
        assert snapshot == snapshot_value("db", schema.table, pk, after, ts)
        assert tx_headers(snapshot) is None and _decoded(snapshot) is None
    assert seen > 500


def test_the_fast_reading_follows_the_envelope_s_spelling() -> None:
    # the bytes it searches for, as model/changelog.value_tail writes them
    assert value_tail(5, "0-1-2", -3) == b',"ts_ms":5,"table_delta":-3,"pos":"0-1-2#'
    assert value_tail(5, "0-1-2") == b',"ts_ms":5,"pos":"0-1-2#'
    value = value_head("+I", "db", "t") + b'{"id":1},"before":null,"after":{"id":1}' + \
        value_tail(5, "0-1-2", -3) + b'4"}'
    assert orjson.loads(value)["pos"] == "0-1-2#4"
    assert tx_headers(value) == [(ID_HEADER, b"0-1-2"), (TOTAL_ORDER_HEADER, b"4"),
                                 (COLLECTION_ORDER_HEADER, b"1")]


def test_a_tx_record_is_told_from_every_other_record_by_its_start() -> None:
    value = tx_value("0-1-20", 3, 1795299279000)
    assert value == b'{"v":1,"op":"TX","id":"0-1-20","partitions":3,"ts_ms":1795299279000}'
    assert value.startswith(TX_VALUE_START)
    record = decode_tx(value)
    assert (record.id, record.partitions, record.ts_ms) == ("0-1-20", 3, 1795299279000)
    others = [row_value(op, "db", "TX", {"id": 1}, None, {"op": "TX"}, 1, "0-1-1#1")
              for op in ("+I", "+U", "-D")]
    others += [snapshot_value("db", "t", {"id": 1}, {"id": 1}, 1),
               ddl_value("db", "t", "TRUNCATE TABLE t", 1, "0-1-1#1", "truncate"),
               value_head("+I", "db", "t", "9c1f0e7d2a4b6c80")]
    assert not [v for v in others if v.startswith(TX_VALUE_START)]


def test_part_records_read_back_what_was_written_in_records_of_bounded_size() -> None:
    entries = [(f"0-1-{n}", {"shop.orders": n} if n % 3 else {}, n % 4, n * 10, n + 100)
               for n in range(PART_ENTRIES * 2 + 7)]
    values = part_values(5, entries)
    parts = [decode_part(v) for v in values]
    assert [len(p.tx) for p in parts] == [PART_ENTRIES, PART_ENTRIES, 7]
    assert {(p.v, p.partition) for p in parts} == {(1, 5)}
    assert [e for p in parts for e in p.tx] == entries
    assert part_values(0, []) == []


def test_begin_and_end_read_back_and_a_malformed_end_says_why() -> None:
    key, begin, end = begin_end("0-1-9", {"shop.orders": 1, "shop.lines": 2}, 1700)
    assert orjson.loads(key) == {"id": "0-1-9"}
    assert decode_end(begin) is None
    record = decode_end(end)
    assert record is not None
    assert (record.id, record.ts_ms, record.event_count, record.counts) == (
        "0-1-9", 1700, 3, {"shop.lines": 2, "shop.orders": 1})
    with pytest.raises(MetadataRecordError, match=r"^not a JSON record \("):
        decode_end(b"{")
    with pytest.raises(MetadataRecordError,
                       match=r"^an END record without 'event_count' as the contract has it"):
        decode_end(b'{"status":"END","id":"x","data_collections":[]}')
