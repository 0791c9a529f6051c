"""Issue 35's "must show": a consumer that applies whole MySQL transactions
(``cdc_ingest.transactions.TransactionReader`` over the sink topics and the transaction
metadata topic) never sees a state MySQL never had, while capture and the sink are SIGKILLed
under writes; the same consumer restarted from its group's commit goes on without a repeat or
a gap; the metadata topic has one BEGIN and one END per transaction in commit order, whose
counts are the messages a consumer finds; and a consumer reading the same topics message by
message without the metadata does see broken states (so this test can fail).

The invariant, over ``orders(id, total, v)`` and ``lines(id, order_id, amount, v)``: every
order's total is the sum of its lines' amounts, and every line's order exists. One writer
keeps it in every transaction it commits (explicit ``START TRANSACTION ... COMMIT``) and logs,
in commit order, each transaction's id (its GTID) and the primary keys it wrote per table.

The pipeline runs as ``cdc-ingest capture`` and ``cdc-ingest sink``, the two processes
``start`` supervises, each SIGKILLed three times and started again by the test, as
test_sink_exactly_once.py does (``start`` treats a child killed by a signal as a failure and
stops, so killing its children would test ``start``'s stop, not the kill).

Reproduce a run with ``CDC_INGEST_TEST_SEED=<seed>`` (printed, and in every failure)."""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pymysql
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from cdc_ingest.transactions import Standalone, Transaction, TransactionReader
from tests.integration.flavors import Source
from tests.integration.pipeline_helpers import (
    cli,
    sink_topic,
    start_command,
    stop,
    wait_for,
    wait_quietly,
    write_pipeline,
    written_batches,
)

TABLES = (
    "CREATE TABLE orders (id INT PRIMARY KEY, total DECIMAL(12,2), v INT)",
    "CREATE TABLE `lines` (id INT PRIMARY KEY, order_id INT, amount DECIMAL(12,2), v INT)",
)
LARGE_LINES = 1000
Keys = dict[str, Counter[int]]  # table -> multiset of the primary keys written


@dataclass(frozen=True)
class Logged:
    """One committed transaction of the writer: its id as ``transaction.id`` spells it."""

    id: str
    kind: str
    keys: Keys


# -- the writer --------------------------------------------------------------------------


class OrdersWriter:
    """One connection, one transaction at a time, each keeping the invariant; ``log``: the
    committed transactions in commit order."""

    def __init__(self, source: Source, db: str, seed: int, pause_s: float) -> None:
        self.conn_kwargs = {**source.admin, "database": db, "autocommit": False}
        self.mariadb = source.name.startswith("mariadb")
        self.rng = random.Random(seed)
        self.pause_s = pause_s
        self.orders: dict[int, Decimal] = {}
        self.lines: dict[int, tuple[int, Decimal]] = {}
        self.lines_of: dict[int, set[int]] = {}
        self.next_order = 1
        self.next_line = 1
        self.large_due: list[tuple[int, int]] = []  # (transaction number, order) to delete
        self.log: list[Logged] = []
        self.error: BaseException | None = None
        self.stop = threading.Event()

    def create_tables(self) -> None:
        with pymysql.connect(**self.conn_kwargs) as conn, conn.cursor() as cur:
            for ddl in TABLES:
                cur.execute(ddl)

    def run(self, min_s: float, max_s: float) -> None:
        """Write until ``stop`` is set (but at least ``min_s``), at most ``max_s`` seconds."""
        began = time.monotonic()
        try:
            with pymysql.connect(**self.conn_kwargs) as conn, conn.cursor() as cur:
                server_uuid = None
                if not self.mariadb:
                    cur.execute("SELECT @@server_uuid")
                    server_uuid = str(cur.fetchone()[0])
                while True:
                    took = time.monotonic() - began
                    if took >= max_s or (took >= min_s and self.stop.is_set()):
                        break
                    cur.execute("START TRANSACTION")
                    kind, keys = self._one(cur)
                    cur.execute("COMMIT")
                    self.log.append(Logged(self._last_id(cur, server_uuid), kind,
                                           {t: c for t, c in keys.items() if c}))
                    time.sleep(self.pause_s)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc

    def _last_id(self, cur: Any, server_uuid: str | None) -> str:
        """The GTID of the transaction this connection just committed (the only writer)."""
        if server_uuid is None:
            cur.execute("SELECT @@last_gtid")
            return str(cur.fetchone()[0])
        cur.execute("SELECT @@global.gtid_executed")
        for part in str(cur.fetchone()[0]).replace("\n", "").split(","):
            uuid, _, intervals = part.strip().partition(":")
            if uuid == server_uuid:
                # untagged intervals come first; MySQL 8.4+ adds `:tag:1-5` groups after
                # them (other tests here write tagged GTIDs), which are not ours
                untagged = itertools.takewhile(lambda i: i[:1].isdigit(), intervals.split(":"))
                last = max(int(i.split("-")[-1]) for i in untagged)
                return f"{server_uuid}:{last}"
        raise AssertionError(f"no GTID of {server_uuid} in gtid_executed")

    def _one(self, cur: Any) -> tuple[str, Keys]:
        n = len(self.log)
        keys: Keys = {"orders": Counter(), "lines": Counter()}
        self.large_due = [(due, o) for due, o in self.large_due if o in self.orders]
        if due := [o for at, o in self.large_due if at <= n]:
            self.large_due = [(at, o) for at, o in self.large_due if o != due[0]]
            self._delete_order(cur, due[0], keys)
            return "delete a large order", keys
        if n == 40 or (n > 40 and self.rng.random() < 1 / 400):
            order = self._new_order(cur, LARGE_LINES, keys)
            self.large_due.append((n + self.rng.randint(100, 600), order))
            return f"new order with {LARGE_LINES} lines", keys
        roll = self.rng.random()
        if len(self.orders) < 20 or roll < 0.30:
            lines = self.rng.randint(1, 5)
            self._new_order(cur, lines, keys)
            return "new order with 1-5 lines", keys
        if roll < 0.60 and self.lines:
            self._move_line(cur, keys)
            return "move a line", keys
        order = self.rng.choice(list(self.orders))
        if roll < 0.75:
            self._delete_order(cur, order, keys)
            return "delete an order and its lines", keys
        cur.execute("UPDATE orders SET v = v + 1 WHERE id = %s", (order,))
        keys["orders"][order] += 1
        return "touch an order", keys

    def _new_order(self, cur: Any, count: int, keys: Keys) -> int:
        order = self.next_order
        self.next_order += 1
        rows = []
        for _ in range(count):
            amount = Decimal(self.rng.randint(1, 99_999)) / 100
            rows.append((self.next_line, order, amount))
            self.next_line += 1
        total = sum((a for _, _, a in rows), Decimal(0))
        statements = [
            lambda: cur.execute("INSERT INTO orders VALUES (%s, %s, 0)", (order, total)),
            lambda: cur.executemany("INSERT INTO `lines` VALUES (%s, %s, %s, 0)", rows),
        ]
        self.rng.shuffle(statements)
        for statement in statements:
            statement()
        self.orders[order] = total
        self.lines_of[order] = set()
        for line, _, amount in rows:
            self.lines[line] = (order, amount)
            self.lines_of[order].add(line)
            keys["lines"][line] += 1
        keys["orders"][order] += 1
        return order

    def _move_line(self, cur: Any, keys: Keys) -> None:
        line = self.rng.choice(list(self.lines))
        source, amount = self.lines[line]
        target = self.rng.choice([o for o in self.orders if o != source])
        statements = [
            ("UPDATE `lines` SET order_id = %s, v = v + 1 WHERE id = %s", (target, line)),
            ("UPDATE orders SET total = total - %s, v = v + 1 WHERE id = %s", (amount, source)),
            ("UPDATE orders SET total = total + %s, v = v + 1 WHERE id = %s", (amount, target)),
        ]
        self.rng.shuffle(statements)
        for sql, args in statements:
            cur.execute(sql, args)
        self.lines[line] = (target, amount)
        self.lines_of[source].remove(line)
        self.lines_of[target].add(line)
        self.orders[source] -= amount
        self.orders[target] += amount
        keys["lines"][line] += 1
        keys["orders"][source] += 1
        keys["orders"][target] += 1

    def _delete_order(self, cur: Any, order: int, keys: Keys) -> None:
        lines = self.lines_of.pop(order)
        deleted = cur.execute("DELETE FROM `lines` WHERE order_id = %s", (order,))
        assert deleted == len(lines), (order, deleted, len(lines))
        cur.execute("DELETE FROM orders WHERE id = %s", (order,))
        del self.orders[order]
        for line in lines:
            del self.lines[line]
            keys["lines"][line] += 1
        keys["orders"][order] += 1


# -- what a consumer builds from the sink topics -------------------------------------------


class Model:
    """Orders and lines by key, as the sink messages applied so far make them."""

    def __init__(self, tables: dict[str, str]) -> None:
        self.tables = tables  # sink topic -> table
        self.orders: dict[int, Decimal] = {}
        self.lines: dict[int, tuple[int, Decimal]] = {}
        self.sums: dict[int, Decimal] = {}  # order id -> sum of the amounts of its lines
        self.counts: Counter[int] = Counter()  # order id -> its lines

    def apply(self, topic: str, key: bytes | None, value: bytes | None) -> tuple[str, int,
                                                                               set[int]]:
        """Apply one message: (table, primary key, the order ids whose invariant it touched)."""
        table = self.tables[topic]
        pk = int(json.loads(key or b"null")["id"])
        row = None if value is None else json.loads(value, parse_float=Decimal)
        if table == "orders":
            if row is None:
                self.orders.pop(pk, None)
            else:
                self.orders[pk] = Decimal(str(row["total"]))
            return table, pk, {pk}
        touched = set()
        old = self.lines.pop(pk, None)
        if old is not None:
            self.sums[old[0]] -= old[1]
            self.counts[old[0]] -= 1
            touched.add(old[0])
        if row is not None:
            order, amount = int(row["order_id"]), Decimal(str(row["amount"]))
            self.lines[pk] = (order, amount)
            self.sums[order] = self.sums.get(order, Decimal(0)) + amount
            self.counts[order] += 1
            touched.add(order)
        return table, pk, touched

    def broken(self, orders: set[int] | None = None) -> list[str]:
        """Where the invariant does not hold, among ``orders`` (None: everywhere)."""
        if orders is None:
            orders = set(self.orders) | {o for o, n in self.counts.items() if n}
        out = []
        for order in sorted(orders):
            lines, amounts = self.counts[order], self.sums.get(order, Decimal(0))
            if order in self.orders and self.orders[order] != amounts:
                out.append(f"order {order}: total {self.orders[order]}, its {lines} lines "
                           f"sum to {amounts}")
            elif order not in self.orders and lines:
                out.append(f"{lines} lines of order {order}, which does not exist")
        return out


class InvariantReader:
    """A thread applying what ``TransactionReader`` yields, one transaction at a time, and
    checking the invariant after each; once it has yielded ``restart_after`` transactions it
    commits, closes the reader and opens it again with the same group."""

    def __init__(self, kafka: Any, tables: dict[str, str], metadata_topic: str,
                 group: str, restart_after: int) -> None:
        self.args = ({"bootstrap.servers": kafka.bootstrap}, list(tables), metadata_topic)
        self.group = group
        self.model = Model(tables)
        self.yielded: list[tuple[str, Keys]] = []
        self.opened_at: list[int] = []  # len(yielded) at each open
        self.breaks: list[str] = []
        self.odd: list[str] = []  # anything but a whole transaction of the two tables
        self.error: BaseException | None = None
        self.restart_after: int | None = restart_after
        self.stop = threading.Event()

    def run(self) -> None:
        reader = None
        try:
            reader = self._open()
            while not self.stop.is_set():
                if self.restart_after is not None and len(self.yielded) >= self.restart_after:
                    self.restart_after = None
                    reader.commit()
                    reader.close()
                    reader = None
                    reader = self._open()
                items = reader.poll(1.0)
                for item in items:
                    self._take(item)
                if items:
                    reader.commit()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc
        finally:
            if reader is not None:
                reader.close()

    def _open(self) -> TransactionReader:
        self.opened_at.append(len(self.yielded))
        return TransactionReader(*self.args, group_id=self.group)

    def _take(self, item: Transaction | Standalone) -> None:
        if isinstance(item, Standalone):
            self.odd.append(f"a message without transaction.id: {item}")
            return
        keys: Keys = {}
        touched: set[int] = set()
        for m in item.messages:
            table, pk, orders = self.model.apply(m.topic, m.key, m.value)
            keys.setdefault(table, Counter())[pk] += 1
            touched |= orders
        if len(item.messages) != item.event_count:
            self.odd.append(f"{item.id}: {len(item.messages)} messages, END counts "
                            f"{item.event_count}")
        number = len(self.yielded)
        self.yielded.append((item.id, keys))
        if broken := self.model.broken(touched if number % 100 else None):
            self.breaks.append(f"after transaction #{number} ({item.id}, {len(item.messages)} "
                               f"messages): {broken[:3]}")


# -- the test ------------------------------------------------------------------------------


def _running(procs: dict[str, Any], logs: dict[str, Path]) -> bool:
    """True, or fail at once with its log when a process exited without the test's kill."""
    for name, proc in procs.items():
        if proc.poll() is not None:
            raise AssertionError(f"{name} exited by itself with code {proc.returncode}; its "
                                 f"log ends:\n{logs[name].read_text()[-3000:]}")
    return True


def _first_difference(seed: int, log: list[Logged], yielded: list[tuple[str, Keys]]) -> str:
    for i, (want, got) in enumerate(zip(log, yielded, strict=False)):
        if (want.id, want.keys) != got:
            return (f"seed {seed}: transaction #{i} ({want.kind}): the writer committed "
                    f"{want.id} {dict(want.keys)}, the reader yielded {got[0]} {dict(got[1])}")
    return (f"seed {seed}: the writer committed {len(log)} transactions, the reader yielded "
            f"{len(yielded)}")


def _raw_in_read_order(kafka: Any, topics: list[str], total: int) -> list[Any]:
    """Every committed message of ``topics`` in the order one read_committed consumer of all
    their partitions receives them."""
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": "raw-reader",
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "enable.partition.eof": True})
    try:
        parts = [TopicPartition(t, p, OFFSET_BEGINNING) for t in topics
                 for p in consumer.list_topics(t, timeout=30).topics[t].partitions]
        consumer.assign(parts)
        out: list[Any] = []
        at_end: set[tuple[str, int]] = set()
        deadline = time.monotonic() + 120
        while len(at_end) < len(parts) or len(out) < total:
            assert time.monotonic() < deadline, f"read {len(out)} of {total} messages"
            for m in consumer.consume(1000, 1.0):
                if m.error() is None:
                    out.append(m)
                    at_end.discard((m.topic(), m.partition()))
                elif m.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add((m.topic(), m.partition()))
                else:
                    raise AssertionError(m.error())
        return out
    finally:
        consumer.close()


@pytest.mark.parametrize("source", ["mariadb", "mysql"], indirect=True)
def test_whole_transactions_keep_the_invariant_across_kills(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    seed = int(os.environ.get("CDC_INGEST_TEST_SEED", random.randrange(1 << 30)))
    print(f"workload seed {seed} on {source.name} (CDC_INGEST_TEST_SEED={seed} repeats it)")
    rng = random.Random(seed)
    began = time.monotonic()
    db = fresh_source_db
    writer = OrdersWriter(source, db, seed, pause_s=0.005)
    writer.create_tables()
    tables = {f"{db}.orders": "orders", f"{db}.lines": "lines"}  # sink topic -> table
    metadata_topic = f"{db}-transactions"
    config = write_pipeline(
        tmp_path / "p.yaml", source, kafka, f"inv-{db}", rf"{db}.\.*",
        source={"scan.startup.mode": "initial",  # the tables are empty: nothing to snapshot
                "capture.transaction.max-rows": 300,  # a 1,000-line order spans several
                "capture.transaction.max-interval": "300ms"},
        sink={"sink.delivery-guarantee": "exactly-once", "topic.partitions": 3,
              "sink.transaction-metadata.topic": metadata_topic},
    )
    logs = {n: tmp_path / f"{n}.log" for n in ("capture", "sink")}
    procs = {n: start_command(n, config, logs[n]) for n in logs}
    reader = InvariantReader(kafka, tables, metadata_topic, group=f"invariant-{db}",
                             restart_after=rng.randint(300, 1200))
    reader_thread = threading.Thread(target=reader.run, daemon=True)
    writer_thread = threading.Thread(target=writer.run, args=(60, 120), daemon=True)
    try:
        wait_for(lambda: _running(procs, logs) and "starts at" in logs["capture"].read_text()
                 and "batch" in logs["sink"].read_text(), timeout=180,
                 what="capture streaming and the sink running")
        reader_thread.start()
        writer_thread.start()
        writing = time.monotonic()
        victims = ["capture", "sink"] * 3
        rng.shuffle(victims)
        for victim in victims:
            if victim == "sink":
                # kill the sink only once it has written since its (re)start: each kill
                # interrupts real work and the restart resumes from its committed offsets
                seen = written_batches(logs["sink"])
                wait_quietly(lambda n=seen: _running(procs, logs)
                              and written_batches(logs["sink"]) > n, 90)
            time.sleep(rng.uniform(0.5, 6.0))
            _running(procs, logs)
            procs[victim].send_signal(signal.SIGKILL)
            procs[victim].wait(30)
            print(f"{time.monotonic() - writing:5.1f} s: killed {victim} "
                  f"({len(writer.log)} transactions committed)")
            procs[victim] = start_command(victim, config, logs[victim])
        writer.stop.set()
        writer_thread.join(180)
        assert not writer_thread.is_alive() and writer.error is None, (seed, writer.error)
        wrote = time.monotonic() - writing
        log = writer.log
        kinds = Counter(e.kind for e in log)
        print(f"{len(log)} transactions in {wrote:.0f} s, "
              f"{sum(sum(c.values()) for e in log for c in e.keys.values())} row changes: "
              f"{dict(kinds)}")
        assert kinds[f"new order with {LARGE_LINES} lines"] >= 1, seed
        wait_for(lambda: _running(procs, logs) and reader.error is None
                 and len(reader.yielded) >= len(log), timeout=240,
                 what=f"the reader to yield {len(log)} transactions (seed {seed}; it has "
                      f"{len(reader.yielded)}, error {reader.error})")
        time.sleep(3)  # anything more (a repeat) would show now
        reader.stop.set()
        reader_thread.join(60)
        assert reader.error is None, f"seed {seed}: the reader failed: {reader.error!r}"

        # what the sink topics and the metadata topic hold, read raw
        metadata = sink_topic(kafka, metadata_topic)
        raw = {t: sink_topic(kafka, t) for t in tables}
        in_read_order = _raw_in_read_order(kafka, list(tables),
                                           sum(len(v) for v in raw.values()))
        verify = cli("verify", "--config", str(config), "--wait", "60")
    finally:
        writer.stop.set()
        reader.stop.set()
        codes = {n: stop(p, timeout=60) for n, p in procs.items()}
    assert codes == {"capture": 0, "sink": 0}, {n: logs[n].read_text()[-2000:] for n in logs}
    print(f"{time.monotonic() - began:.0f} s in all")

    # the reader: never a broken state; every transaction once, in commit order, whole
    assert not reader.breaks, f"seed {seed}: the invariant broke: {reader.breaks[:5]}"
    assert not reader.odd, f"seed {seed}: {reader.odd[:5]}"
    ids = [i for i, _ in reader.yielded]
    repeated = [i for i, n in Counter(ids).items() if n > 1]
    assert not repeated, f"seed {seed}: yielded twice: {repeated[:5]}"
    assert reader.yielded == [(e.id, e.keys) for e in log], _first_difference(
        seed, log, reader.yielded)
    print(f"the reader yielded {reader.opened_at[-1]} transactions, was closed and opened "
          f"again, and yielded {len(log) - reader.opened_at[-1]} more")
    assert len(reader.opened_at) == 2 and 0 < reader.opened_at[1] < len(log), (
        f"seed {seed}: the reader was opened after {reader.opened_at} transactions")
    assert not reader.model.broken(), seed

    # the metadata topic: BEGIN, END per transaction, in commit order, partition 0
    assert {r.partition for r in metadata} == {0}, seed
    values = [json.loads(r.value) for r in metadata]
    assert [(v["status"], v["id"]) for v in values] == [
        (s, e.id) for e in log for s in ("BEGIN", "END")], (
        f"seed {seed}: the metadata topic's records are not a BEGIN and an END per "
        f"transaction in commit order: {len(values)} records for {len(log)} transactions")
    assert [json.loads(r.key) for r in metadata] == [{"id": v["id"]} for v in values], seed
    # its END counts are the messages with that transaction.id in each sink topic
    counted: dict[str, Counter[str]] = {}
    raw_keys: dict[str, Keys] = {}
    for topic, messages in raw.items():
        for m in messages:
            headers = dict(m.headers)
            assert "transaction.id" in headers, f"seed {seed}: no transaction.id: {m}"
            tx = headers["transaction.id"].decode()
            counted.setdefault(tx, Counter())[topic] += 1
            raw_keys.setdefault(tx, {}).setdefault(tables[topic], Counter())[
                int(json.loads(m.key)["id"])] += 1
    ends = {v["id"]: v for v in values if v["status"] == "END"}
    assert set(counted) <= set(ends), f"seed {seed}: no END for {set(counted) - set(ends)}"
    for e in log:
        end = ends[e.id]
        collections = {c["data_collection"]: c["event_count"] for c in end["data_collections"]}
        assert collections == dict(counted.get(e.id, {})), (
            f"seed {seed}: END of {e.id} ({e.kind}) counts {collections}, the sink topics "
            f"hold {dict(counted.get(e.id, {}))}")
        assert end["event_count"] == sum(collections.values()), (seed, end)
        assert raw_keys.get(e.id) == e.keys, (seed, e.id, e.kind)

    # the same check on the messages one by one, in the order read, without the metadata:
    # it must break (else the reader's clean record above would prove nothing)
    naive = Model(tables)
    broke = []
    for m in in_read_order:
        _, _, touched = naive.apply(m.topic(), m.key(), m.value())
        if naive.broken(touched):
            broke.append(m)
    print(f"read message by message, the invariant broke after {len(broke)} of "
          f"{len(in_read_order)} messages")
    assert broke, f"seed {seed}: read message by message the invariant never broke"
    assert (naive.orders, naive.lines) == (reader.model.orders, reader.model.lines), seed
    assert not naive.broken(), seed

    assert verify.returncode == 0, f"seed {seed}: " + verify.stdout + verify.stderr
