"""The transaction reader against a real broker (cdc_ingest/transactions).

This tests the reader, not the sink: the messages and END records of the contract
(docs/output-contract.md, "Transaction metadata") are written here by transactional
confluent-kafka producers, the way the sink writes them: several producers whose Kafka
transactions interleave in one partition, a Kafka transaction aborted after writing a MySQL
transaction's messages (written again, committed, by another one), an aborted END, and
messages of no transaction (snapshot rows). The reader hands out whole transactions in END
order; a commit mid-way, then a restart of the same group, hands out the rest: nothing twice,
nothing lost.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import orjson
from confluent_kafka import Consumer, Producer, TopicPartition

from cdc_ingest.kafka import TopicAdmin, TopicSpec
from cdc_ingest.transactions import Item, Standalone, Transaction, TransactionReader


class Writer:
    """A transactional producer writing sink messages and metadata records."""

    def __init__(self, bootstrap: str, name: str) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": name,
                                  "linger.ms": 0})
        self.producer.init_transactions(30)
        self.producer.begin_transaction()

    def row(self, topic: str, partition: int, tx: str | None, total: int = 1,
            order: int = 1, value: str = "") -> None:
        headers = [("tableName", b"t")]
        if tx is not None:
            headers += [("transaction.id", tx.encode()),
                        ("transaction.total_order", str(total).encode()),
                        ("transaction.data_collection_order", str(order).encode())]
        self.producer.produce(topic, orjson.dumps({"v": value or f"{tx}#{total}"}),
                              orjson.dumps({"id": total}), partition=partition,
                              headers=headers)
        self.producer.flush(30)  # in the log now, in the order written

    def begin_end(self, topic: str, tx: str, counts: dict[str, int], ts_ms: int) -> None:
        key = orjson.dumps({"id": tx})
        self.producer.produce(topic, orjson.dumps({
            "status": "BEGIN", "id": tx, "event_count": None, "data_collections": None,
            "ts_ms": ts_ms}), key, partition=0)
        self.producer.produce(topic, orjson.dumps({
            "status": "END", "id": tx, "event_count": sum(counts.values()),
            "data_collections": [{"data_collection": t, "event_count": n}
                                 for t, n in counts.items()], "ts_ms": ts_ms}), key, partition=0)
        self.producer.flush(30)

    def commit(self) -> None:
        self.producer.commit_transaction(30)
        self.producer.begin_transaction()

    def abort(self) -> None:
        self.producer.abort_transaction(30)
        self.producer.begin_transaction()


def read(reader: TransactionReader, until: Any, timeout_s: float = 30.0) -> list[Item]:
    """Items polled until ``until(items)`` holds."""
    items: list[Item] = []
    deadline = time.monotonic() + timeout_s
    while not until(items):
        assert time.monotonic() < deadline, f"timed out with {describe(items)}"
        items += reader.poll(0.5)
    return items


def transactions(items: list[Item]) -> list[str]:
    return [i.id for i in items if isinstance(i, Transaction)]


def standalone(items: list[Item]) -> list[tuple[str, int, int]]:
    return [(i.topic, i.partition, i.offset) for i in items if isinstance(i, Standalone)]


def describe(items: list[Item]) -> list[str]:
    return [i.id if isinstance(i, Transaction) else f"{i.topic}@{i.offset}" for i in items]


def test_whole_transactions_in_commit_order_resumed_from_a_commit(kafka: Any) -> None:
    run = uuid.uuid4().hex[:8]
    orders, lines, meta = f"o-{run}", f"l-{run}", f"m-{run}"
    config = {"bootstrap.servers": kafka.bootstrap}
    TopicAdmin(config).ensure_all([TopicSpec(orders, 2, 1, {}), TopicSpec(lines, 3, 1, {}),
                                   TopicSpec(meta, 1, 1, {})])
    a, b, m = (Writer(kafka.bootstrap, f"{run}-{n}") for n in ("a", "b", "meta"))
    group = f"tx-reader-{run}"
    try:
        # snapshot rows: no transaction
        a.row(orders, 0, None, value="snap1")
        a.row(orders, 1, None, value="snap2")
        a.row(lines, 2, None, value="snap3")
        a.commit()
        # t1: an order and two lines
        a.row(orders, 0, "t1", 1)
        a.row(lines, 1, "t1", 2)
        a.row(lines, 1, "t1", 3, 2)
        a.commit()
        m.begin_end(meta, "t1", {orders: 1, lines: 2}, 1_795_299_279_000)
        m.commit()
        # t2: written by a Kafka transaction that aborts, then again by another that commits;
        # an END of a transaction that never was, aborted
        a.row(orders, 1, "t2", 1)
        a.row(lines, 0, "t2", 2)
        m.begin_end(meta, "ghost", {orders: 1}, 1)
        a.abort()
        m.abort()
        b.row(lines, 0, "t2", 2)
        b.row(orders, 1, "t2", 1)
        b.commit()
        m.begin_end(meta, "t2", {orders: 1, lines: 1}, 1_795_299_280_000)
        m.commit()
        # t3 and t4 interleaved in orders/0 by two open Kafka transactions; t4's END later
        a.row(orders, 0, "t3", 1)
        b.row(orders, 0, "t4", 1)
        a.row(orders, 0, "t3", 2)
        b.commit()
        a.commit()
        m.begin_end(meta, "t3", {orders: 2}, 1_795_299_281_000)
        m.commit()

        reader = TransactionReader(config, [orders, lines], meta, group)
        first = read(reader, lambda items: "t3" in transactions(items) and len(
            standalone(items)) == 3)
        assert transactions(first) == ["t1", "t2", "t3"]
        t1, t2, t3 = (i for i in first if isinstance(i, Transaction))
        assert t1.data_collections == {orders: 1, lines: 2} and t1.event_count == 3
        assert [(x.topic, x.total_order) for x in t1.messages] == [
            (orders, 1), (lines, 2), (lines, 3)]
        assert t1.ts_ms == 1_795_299_279_000
        assert [(x.topic, x.total_order) for x in t2.messages] == [(orders, 1), (lines, 2)]
        assert [x.offset for x in t3.by_topic()[orders]] == sorted(
            x.offset for x in t3.messages)
        assert reader.buffered == 1  # t4's message, its END not written yet
        reader.commit()
        # what the group holds: t3's END is read again (its second message is above t4's)
        check = Consumer({**config, "group.id": group})
        committed = check.committed([TopicPartition(meta, 0)], timeout=10)[0]
        check.close()
        assert committed.offset == t3.end_offset
        assert committed.metadata == f"cdc-ingest-tx/1 yielded-to={t3.end_offset + 1}"

        # more: t4's END, t5 over both topics, a snapshot row, t6; handed out, not committed
        m.begin_end(meta, "t4", {orders: 1}, 1_795_299_282_000)
        m.commit()
        b.row(lines, 2, "t5", 1)
        b.row(orders, 1, "t5", 3)  # a gap: row 2 was filtered out
        b.row(orders, 1, None, value="snap4")
        b.commit()
        m.begin_end(meta, "t5", {lines: 1, orders: 1}, 1_795_299_283_000)
        m.commit()
        lost = read(reader, lambda items: "t5" in transactions(items))
        assert transactions(lost) == ["t4", "t5"]
        reader.close()

        a.row(orders, 0, "t6", 1)
        a.commit()
        m.begin_end(meta, "t6", {orders: 1}, 1_795_299_284_000)
        m.commit()
        again = TransactionReader(config, [orders, lines], meta, group)
        with again:
            second = read(again, lambda items: "t6" in transactions(items)
                          and len(standalone(items)) == 1)
            second += again.poll(1.0)  # anything more would show up now
            assert again.buffered == 0  # t3's message read again was dropped, not held
        assert transactions(second) == ["t4", "t5", "t6"]
        assert standalone(second) == standalone(lost)
        everything = first + second
        assert sorted(standalone(everything)) == sorted(standalone(first + lost))
        assert len(standalone(everything)) == 4
        t5 = next(i for i in second if isinstance(i, Transaction) and i.id == "t5")
        assert [(x.topic, x.total_order) for x in t5.messages] == [(lines, 1), (orders, 3)]

        # without a group: everything from the beginning, every time
        with TransactionReader(config, [orders, lines], meta) as fresh:
            all_of_it = read(fresh, lambda items: "t6" in transactions(items)
                             and len(standalone(items)) == 4)
        assert transactions(all_of_it) == ["t1", "t2", "t3", "t4", "t5", "t6"]

        # new_only (watch without --from-beginning): t7, begun before the reader starts and
        # ended after, and what comes after the start; nothing older
        b.row(lines, 1, "t7", 1)
        b.commit()
        with TransactionReader(config, [orders, lines], meta, new_only=True) as new:
            assert new.poll(1.0) == []
            a.row(orders, 0, "t7", 2)
            a.row(lines, 0, None, value="snap5")
            a.commit()
            m.begin_end(meta, "t7", {lines: 1, orders: 1}, 1_795_299_285_000)
            m.commit()
            latest = read(new, lambda items: "t7" in transactions(items)
                          and len(standalone(items)) == 1)
        assert transactions(latest) == ["t7"]
        assert [i.value for i in latest if isinstance(i, Standalone)] == [b'{"v":"snap5"}']
    finally:
        for w in (a, b, m):
            w.producer.abort_transaction(10)
