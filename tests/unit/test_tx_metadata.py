"""Transaction metadata's pieces: capture's table orders and TX records, the headers a task
reads back from a row record, a task's part records, and the driver's adding up of parts
into BEGIN and END (docs/output-contract.md, "Transaction metadata")."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from cdc_ingest.capture.binlog_schema import ColumnSpec, FieldType, TableSchema
from cdc_ingest.capture.decoder import compiled_available
from cdc_ingest.capture.encode import KeyPlan, TableEncoder, table_encoder
from cdc_ingest.capture.metadata_marks import MetadataMarks
from cdc_ingest.model.changelog import snapshot_value
from cdc_ingest.model.transaction_metadata import (
    TX_VALUE_START,
    PartRecord,
    begin_end,
    tx_headers,
)
from cdc_ingest.sink.driver.metadata_writer import Tally
from cdc_ingest.sink.driver.task_settings import sink_settings
from cdc_ingest.sink.task.metadata_parts import TxTally, with_tx_headers
from cdc_ingest.sink.task.record_loop import Counters, chunks
from cdc_ingest.sink.task.writer import make_serde
from tests.unit.test_config import minimal, parse

# a table whose column names are the envelope's own, so a search from the wrong end would
# find the row's fields
SCHEMA = TableSchema("db", "t", (ColumnSpec("id", FieldType.LONG),
                                 ColumnSpec("pos", FieldType.VARCHAR),
                                 ColumnSpec("ts_ms", FieldType.LONG),
                                 ColumnSpec("table_delta", FieldType.LONG)), ("id",))
ROWS = [(None, [1, '","pos":"x#9"}', 5, 7]), (None, [2, "b", 6, 8])]


def _encoders() -> list[Any]:
    plan = KeyPlan(SCHEMA, "test")
    found = [TableEncoder(SCHEMA, plan)]
    if compiled_available():
        found.append(table_encoder(SCHEMA, plan))
        assert type(found[1]) is not TableEncoder
    return found


def _values(encoder: Any, delta: int | None) -> list[bytes]:
    sent: list[bytes] = []
    encoder.produce_rows(lambda t, v, k, ts: sent.append(v), "t", "I", ROWS, 4, "0-1-7",
                         1000, None, None, delta)
    return sent


@pytest.mark.parametrize("encoder", _encoders(), ids=lambda e: type(e).__name__)
def test_rows_carry_table_delta_only_with_metadata_and_the_headers_read_back(
        encoder: Any) -> None:
    plain = _values(encoder, None)
    assert b"table_delta\":-" not in plain[0] and b',"table_delta":' not in plain[0][-40:]
    assert [tx_headers(v) for v in plain] == [
        [("transaction.id", b"0-1-7"), ("transaction.total_order", b"4"),
         ("transaction.data_collection_order", b"4")],
        [("transaction.id", b"0-1-7"), ("transaction.total_order", b"5"),
         ("transaction.data_collection_order", b"5")]]
    with_delta = _values(encoder, -2)
    assert [orjson.loads(v)["table_delta"] for v in with_delta] == [-2, -2]
    assert [orjson.loads(v)["after"]["table_delta"] for v in with_delta] == [7, 8]
    assert [tx_headers(v) for v in with_delta] == [
        [("transaction.id", b"0-1-7"), ("transaction.total_order", b"4"),
         ("transaction.data_collection_order", b"2")],
        [("transaction.id", b"0-1-7"), ("transaction.total_order", b"5"),
         ("transaction.data_collection_order", b"3")]]
    assert _values(_encoders()[0], -2) == with_delta  # both encoders, the same bytes


def test_a_snapshot_row_has_no_transaction() -> None:
    value = snapshot_value("db", "t", {"id": 1}, {"id": 1, "pos": "a#1"}, 5)
    assert tx_headers(value) is None


def test_a_gtid_with_colons_and_a_file_position_id() -> None:
    for tx_id in ("3e11fa47-71ca-11e1-9e33-c80aa9429562:23", "binlog.000003:1234"):
        value = b'{"v":1,"op":"+I","after":{},"ts_ms":1,"pos":"%b#12"}' % tx_id.encode()
        assert tx_headers(value) == [("transaction.id", tx_id.encode()),
                                     ("transaction.total_order", b"12"),
                                     ("transaction.data_collection_order", b"12")]


def test_headers_are_added_per_message_without_touching_the_shared_list() -> None:
    shared = [("tableName", b"t")]
    messages: list[Any] = [("a", b"k0", b"v", shared, 1, "db.t"),
                           ("a", b"k1", b"v", shared, 1, "db.t"),
                           ("b", b"k1", b"v", None, 1, "db.t")]
    value = b'{"op":"+I","ts_ms":1,"table_delta":3,"pos":"0-1-2#4"}'
    with_tx_headers(messages, 1, value)
    assert messages[0][3] is shared and shared == [("tableName", b"t")]
    assert messages[1][3] == [("tableName", b"t"), ("transaction.id", b"0-1-2"),
                              ("transaction.total_order", b"4"),
                              ("transaction.data_collection_order", b"7")]
    assert messages[2][3] == messages[1][3][1:]


def _tx_record(tx_id: str, partitions: int = 2, ts: int = 9) -> bytes:
    value = orjson.dumps({"v": 1, "op": "TX", "id": tx_id, "partitions": partitions,
                          "ts_ms": ts})
    assert value.startswith(TX_VALUE_START)
    return value


def _message(topic: str, tx_id: str | None) -> Any:
    headers = None if tx_id is None else [("transaction.id", tx_id.encode()),
                                          ("transaction.total_order", b"1"),
                                          ("transaction.data_collection_order", b"1")]
    return (topic, b"k", b"v", headers, 1, "db.t")


def test_a_task_tallies_messages_and_tx_records_per_transaction_in_order() -> None:
    tally = TxTally(partition=1)
    assert tally.parts() == []
    tally.marker(_tx_record("A"), 10)
    tally.row([("transaction.id", b"B")], 11)
    tally.row([("transaction.id", b"B")], 12)
    tally.count([_message("orders", "B"), _message("lines", "B"), _message("lines", "B"),
                 _message("orders", None)])
    tally.row([("transaction.id", b"C")], 14)  # C's TX record is in a later chunk
    tally.count([_message("orders", "C")])
    [part] = [orjson.loads(p) for p in tally.parts()]
    assert part == {"v": 1, "partition": 1,
                    "tx": [["A", {}, 2, 9, 10], ["B", {"orders": 1, "lines": 2}, 0, 0, 12],
                           ["C", {"orders": 1}, 0, 0, 14]]}
    assert tally.parts() == []  # it starts again


def test_part_records_stay_small_however_many_transactions_a_chunk_holds() -> None:
    tally = TxTally(partition=0)
    for n in range(4500):
        tally.marker(_tx_record(f"0-1-{n}"), n)
    parts = [orjson.loads(p) for p in tally.parts()]
    assert [len(p["tx"]) for p in parts] == [2000, 2000, 500]
    assert [e[0] for p in parts for e in p["tx"]] == [f"0-1-{n}" for n in range(4500)]


def _part(partition: int, *entries: Any) -> PartRecord:
    return PartRecord(1, partition, [tuple(e) for e in entries])


def test_a_transaction_is_whole_once_every_partition_passed_its_tx_record() -> None:
    tally = Tally()
    # partition 0 wrote 2 orders messages of A and passed A's TX (offset 5); 1 is behind
    assert tally.add(_part(0, ["A", {"orders": 2}, 2, 7, 5]), 100) == []
    assert tally.add(_part(1, ["A", {"lines": 1}, 0, 0, 3]), 101) == []
    # partition 1 passes A's TX and B's (B wrote nothing there); B waits for partition 0
    assert tally.add(_part(1, ["A", {"lines": 3}, 2, 7, 8], ["B", {}, 2, 8, 9]), 102) == [
        ("A", {"orders": 2, "lines": 4}, 7)]
    assert list(tally.open) == ["B"] and tally.cut == {0: 5, 1: 8}
    assert tally.restart_offset(103) == 102
    assert tally.add(_part(0, ["B", {"x": 1}, 2, 8, 6]), 103) == [("B", {"x": 1}, 8)]
    assert tally.open == {} and tally.cut == {0: 6, 1: 9}
    assert tally.restart_offset(104) == 104


def test_a_restart_reads_parts_again_and_rebuilds_only_what_was_not_whole() -> None:
    parts = [(0, ["A", {"t": 1}, 0, 0, 1]),           # 0: A's row in partition 0
             (1, ["A", {"t": 2}, 2, 5, 4]),           # 1: A's rows and TX in partition 1
             (1, ["B", {"t": 1}, 0, 0, 6]),           # 2: B's row in partition 1
             (0, ["A", {}, 2, 5, 2], ["B", {"t": 4}, 2, 6, 3]),  # 3: A whole; B's TX in 0
             (1, ["B", {}, 2, 6, 7], ["C", {"t": 1}, 0, 0, 8])]  # 4: B whole; C open
    whole = []
    once = Tally()
    for offset, (p, *entries) in enumerate(parts):
        whole += once.add(_part(p, *entries), offset)
    assert whole == [("A", {"t": 3}, 5), ("B", {"t": 5}, 6)]
    # after part 3 the state was: cut {0: 2, 1: 4}, read again from part 2 (B's first)
    again = Tally({0: 2, 1: 4})
    assert again.add(_part(1, ["B", {"t": 1}, 0, 0, 6]), 2) == []
    assert again.add(_part(0, ["A", {}, 2, 5, 2], ["B", {"t": 4}, 2, 6, 3]), 3) == []
    assert again.add(_part(1, ["B", {}, 2, 6, 7], ["C", {"t": 1}, 0, 0, 8]), 4) == [
        ("B", {"t": 5}, 6)]  # A is not made whole twice; B's counts are whole
    assert list(again.open) == ["C"]


def test_begin_and_end_as_debezium_writes_them() -> None:
    key, begin, end = begin_end("0-1-9", {"shop.orders": 1, "shop.lines": 2}, 1700)
    assert key == b'{"id":"0-1-9"}'
    assert begin == (b'{"status":"BEGIN","id":"0-1-9","event_count":null,'
                     b'"data_collections":null,"ts_ms":1700}')
    assert end == (b'{"status":"END","id":"0-1-9","event_count":3,"data_collections":['
                   b'{"data_collection":"shop.lines","event_count":2},'
                   b'{"data_collection":"shop.orders","event_count":1}],"ts_ms":1700}')


def test_capture_numbers_rows_per_table_and_ends_transactions_with_rows_only() -> None:
    marks = MetadataMarks(True, partitions=3)
    marks.begin()
    assert marks.end(5) is None  # no rows of a captured table: no TX record
    marks.begin()
    assert marks.rows("0-1-3", "db", "a", 0, 2) == 0      # a: rows 1-2 -> 1-2
    assert marks.rows("0-1-3", "db", "b", 2, 3) == -2     # b: rows 3-5 -> 1-3
    assert marks.rows("0-1-3", "db", "a", 5, 1) == -3     # a: row 6 -> 3
    assert orjson.loads(marks.end(77) or b"") == {"v": 1, "op": "TX", "id": "0-1-3",
                                                  "partitions": 3, "ts_ms": 77}
    marks.begin()
    assert marks.rows("0-1-4", "db", "a", 0, 1) == 0  # counting starts again
    off = MetadataMarks(False, partitions=3)
    assert off.rows("0-1-3", "db", "a", 0, 2) is None and off.end(1) is None


def _row(n: int, table: str) -> bytes:
    return orjson.dumps({"v": 1, "op": "+I", "db": "shop", "table": table, "pk": {"id": n},
                         "before": None, "after": {"id": n}, "ts_ms": 5,
                         "table_delta": -1, "pos": f"0-1-9#{n}"})


@pytest.mark.parametrize("sink_type", ["upsert-kafka", "kafka"])
def test_the_task_loop_gives_both_sink_types_headers_and_tallies_what_it_wrote(
        sink_type: str) -> None:
    defn = parse(minimal(sink={"type": sink_type, "sink.delivery-guarantee": "exactly-once",
                               "sink.transaction-metadata.topic": "tx"}))
    settings = sink_settings(defn)
    assert settings.tx_parts_topic == "cdc-ingest.cdc-ingest.tx-parts"
    snapshot = snapshot_value("shop", "a", {"id": 9}, {"id": 9}, 5)
    records = [(b'{"id":1}', _row(1, "a")), (b'{"id":9}', snapshot),
               (b'{"id":2}', _row(2, "b")), (None, _tx_record("0-1-9", 1))]
    columns = (list(range(10, 14)), [k for k, _v in records], [v for _k, v in records])
    tally = TxTally(0)
    out = list(chunks(settings, make_serde(settings), Counters(partition=0),
                      iter([(0, columns)]), 0, lambda *a: [], tally))
    [(messages, last)] = out
    assert last == 13
    assert isinstance(messages, list)
    found = [(m[0], dict(m[3] or ()).get("transaction.id"),
              dict(m[3] or ()).get("transaction.data_collection_order")) for m in messages]
    assert found == [("shop.a", b"0-1-9", b"0"), ("shop.a", None, None),
                     ("shop.b", b"0-1-9", b"1")]
    tally.count(messages)
    [part] = [orjson.loads(p) for p in tally.parts()]
    assert part["tx"] == [["0-1-9", {"shop.a": 1, "shop.b": 1}, 1, 9, 13]]
