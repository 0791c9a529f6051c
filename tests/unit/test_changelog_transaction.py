"""capture/transaction.py: the one writer of capture's Kafka transactions, against a
recording producer (the exactly-once tests run it against a real broker)."""

from __future__ import annotations

import time
from typing import Any

import orjson

from cdc_ingest.capture.positions import SOURCE_KEY, PositionStore
from cdc_ingest.capture.transaction import ChangelogTransaction, Limits
from cdc_ingest.model import Position


class _Producer:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def init(self) -> None:
        self.calls.append(("init",))

    def begin(self) -> None:
        self.calls.append(("begin",))

    def abort(self) -> None:
        self.calls.append(("abort",))

    def send(self, topic: str, value: bytes | None, key: bytes | None = None,
             timestamp: int = 0, headers: Any = None, partition: int = -1) -> None:
        self.calls.append(("send", topic, key, value, partition))

    def raw_produce(self, *args: Any, **kwargs: Any) -> None:
        self.calls.append(("raw_produce",))

    def commit(self) -> None:
        self.calls.append(("commit",))


START = Position(file="b.1", pos=4)


def _tx(max_rows: int = 10, max_interval_s: float = 60.0,
        heartbeat_s: float = 60.0) -> tuple[ChangelogTransaction, _Producer]:
    producer = _Producer()
    tx = ChangelogTransaction(producer, PositionStore({}, "offsets"),  # type: ignore[arg-type]
                              "changelog", "schema", "notes", Limits(max_rows, max_interval_s,
                                                            heartbeat_s))
    tx.start_run(START)
    return tx, producer


def test_schema_records_markers_and_rows_then_the_position_last_then_the_commit() -> None:
    tx, producer = _tx()
    assert producer.calls == []  # no transaction and no commit at the start of a run
    tx.schema_record(b'{"db":"d","table":"t"}', b'{"v":1}', 5)
    tx.marker(b'{"op":"DDL"}', range(2), 5)
    send, _ = tx.row_sender()
    send("changelog", b'{"row":1}', b'{"id":1}')
    tx.rows_sent(1, "d.t", "inserts")
    tx.counted("d.t", "ddls")
    moved = Position(file="b.1", pos=90)
    tx.position = moved
    tx.commit()
    assert producer.calls == [
        ("begin",),
        ("send", "schema", b'{"db":"d","table":"t"}', b'{"v":1}', -1),
        ("send", "changelog", None, b'{"op":"DDL"}', 0),
        ("send", "changelog", None, b'{"op":"DDL"}', 1),
        ("send", "changelog", b'{"id":1}', b'{"row":1}', -1),
        # the table's totals, then the position: in the transaction of what they count
        ("send", "offsets", b'{"stats":"d.t"}',
         b'{"inserts":1,"updates":0,"deletes":0,"ddls":1,"snapshot_rows":0}', -1),
        ("send", "offsets", SOURCE_KEY, moved.to_json(), -1),
        ("commit",)]
    assert tx.committed == moved and not tx.is_open
    assert orjson.loads(producer.calls[-2][3])["pos"] == 90


def test_rows_count_row_changes_per_transaction() -> None:
    tx, _ = _tx(max_rows=3)
    tx.row_sender()
    tx.rows_sent(2, "d.t", "updates")
    assert (tx.room, tx.full) == (1, False)
    tx.marker(b"{}", [0], 0)  # markers and schema records are not row changes
    tx.schema_record(b"k", b"v")
    tx.rows_sent(1, "d.t", "deletes")
    assert tx.full
    tx.commit()
    tx.row_sender()  # a new transaction starts empty
    assert (tx.rows, tx.room) == (0, 3)


def test_an_unmoved_position_commits_nothing_unless_forced() -> None:
    tx, producer = _tx()
    tx.commit()
    assert producer.calls == []
    tx.commit(force=True)  # a fenced producer finds out on a forced commit
    assert [c[0] for c in producer.calls] == ["begin", "send", "commit"]


def test_an_open_transaction_commits_once_max_interval_passed() -> None:
    tx, producer = _tx(max_interval_s=0.05)
    tx.row_sender()
    tx.maybe_commit()
    assert ("commit",) not in producer.calls
    time.sleep(0.06)
    tx.maybe_commit()
    assert producer.calls[-1] == ("commit",)


def test_a_run_that_left_a_transaction_open_has_it_aborted_at_the_next_start() -> None:
    # a first start tombstones an earlier pipeline's table records; a request that ends the
    # run before anything commits them leaves them open: the next run writes them again
    tx, producer = _tx()
    tx.schema_record(b'{"db":"d","table":"t"}', None)
    tx.start_run(START)
    assert producer.calls[-1] == ("abort",) and not tx.is_open
    tx.schema_record(b'{"db":"d","table":"t"}', None)
    assert producer.calls[-2:] == [("begin",), ("send", "schema", b'{"db":"d","table":"t"}',
                                                None, -1)]


def test_a_tables_totals_count_only_what_committed_and_go_on_from_the_loaded_ones() -> None:
    tx, producer = _tx()
    tx.stats.totals = {"d.t": {"inserts": 5, "updates": 0, "deletes": 1, "ddls": 0,
                               "snapshot_rows": 100}}
    tx.row_sender()
    tx.rows_sent(3, "d.t", "inserts")
    tx.rows_sent(2, "d.u", "snapshot_rows")
    tx.commit()
    stats = {orjson.loads(c[2])["stats"]: orjson.loads(c[3]) for c in producer.calls
             if c[0] == "send" and c[1] == "offsets" and c[2].startswith(b'{"stats"')}
    assert stats == {"d.t": {"inserts": 8, "updates": 0, "deletes": 1, "ddls": 0,
                             "snapshot_rows": 100},
                     "d.u": {"inserts": 0, "updates": 0, "deletes": 0, "ddls": 0,
                             "snapshot_rows": 2}}
    # a transaction a run left open is aborted: what it counted is not in the totals
    tx.row_sender()
    tx.rows_sent(7, "d.t", "updates")
    tx.start_run(Position(file="b.1", pos=4))
    producer.calls.clear()
    tx.position = Position(file="b.1", pos=200)
    tx.commit()  # the position alone: no stats record, nothing of the aborted one
    assert [c[2] for c in producer.calls if c[0] == "send"] == [SOURCE_KEY]
    assert tx.stats.totals["d.t"]["updates"] == 0
