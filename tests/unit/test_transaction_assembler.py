"""The transaction reader's pure logic (cdc_ingest/transactions/assemble.py, resume.py):
whole transactions in END order, never a part of one, and commits that resume exactly.

The simulations at the end read random interleavings of a workload that follows the contract
(docs/output-contract.md, "Transaction metadata"), take a random part of what is ready, commit,
"crash" (what was taken after the commit is lost) and start again from the commit, several
times: every transaction is handed out exactly once, in commit order, whole.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import orjson
import pytest

from cdc_ingest.commands.watch import block
from cdc_ingest.kafka.consumer import Message
from cdc_ingest.transactions import Standalone, Transaction, TransactionContractError
from cdc_ingest.transactions.assemble import Assembler
from cdc_ingest.transactions.resume import (
    MetadataStart,
    PartitionStart,
    metadata_metadata,
    metadata_start,
    parse,
    partition_start,
    sink_metadata,
)

META = "tx.meta"


def msg(topic: str, partition: int, offset: int, tx: str | None = None, total: int = 1,
        order: int = 1, value: bytes | None = b"{}") -> Message:
    headers: tuple[tuple[str, bytes], ...] = ()
    if tx is not None:
        headers = (("transaction.id", tx.encode()), ("transaction.total_order", str(total).encode()),
                   ("transaction.data_collection_order", str(order).encode()))
    return Message(topic, partition, offset, f"k{offset}".encode(), value, headers, 0)


def end(offset: int, tx: str, counts: dict[str, int], ts: int = 1000) -> Message:
    value = {"status": "END", "id": tx, "event_count": sum(counts.values()),
             "data_collections": [{"data_collection": t, "event_count": n}
                                  for t, n in counts.items()], "ts_ms": ts}
    return Message(META, 0, offset, orjson.dumps({"id": tx}), orjson.dumps(value), (), 0)


def begin(offset: int, tx: str) -> Message:
    value = {"status": "BEGIN", "id": tx, "event_count": None, "data_collections": None,
             "ts_ms": 1}
    return Message(META, 0, offset, orjson.dumps({"id": tx}), orjson.dumps(value), (), 0)


def assembler(*tps: tuple[str, int], meta: MetadataStart | None = None) -> Assembler:
    a = Assembler(meta)
    for topic, p in tps or (("a", 0), ("b", 0)):
        a.add_partition(topic, p, PartitionStart())
    return a


def take_all(a: Assembler) -> list[Transaction | Standalone]:
    out = []
    while (item := a.take()) is not None:
        out.append(item)
    return out


# -- whole transactions ------------------------------------------------------------------


def test_a_key_change_comes_out_tombstone_first_whatever_partition_is_read_first() -> None:
    a = assembler(("a", 0), ("a", 1))
    a.on_message(msg("a", 1, 0, "g:1", total=1, value=b'{"id":2}'))  # the new key
    a.on_message(msg("a", 0, 0, "g:1", total=1, value=None))         # the old key's tombstone
    a.on_metadata(end(0, "g:1", {"a": 2}))
    [tx] = take_all(a)
    assert isinstance(tx, Transaction)
    assert [(m.partition, m.value) for m in tx.messages] == [(0, None), (1, b'{"id":2}')]


def test_a_transaction_is_handed_out_once_its_end_and_all_its_messages_are_read() -> None:
    a = assembler()
    a.on_message(msg("a", 0, 0, "g:1", total=1))
    assert a.on_metadata(begin(0, "g:1")) is None
    a.on_metadata(end(1, "g:1", {"a": 1, "b": 2}, ts=1234))
    a.on_message(msg("b", 0, 0, "g:1", total=2, order=1))
    assert a.take() is None and a.buffered == 2
    a.on_message(msg("b", 0, 1, "g:1", total=3, order=2))
    tx = a.take()
    assert isinstance(tx, Transaction)
    assert (tx.id, tx.ts_ms, tx.event_count, tx.end_offset) == ("g:1", 1234, 3, 1)
    assert tx.data_collections == {"a": 1, "b": 2}
    assert [(m.topic, m.offset, m.total_order) for m in tx.messages] == [
        ("a", 0, 1), ("b", 0, 2), ("b", 1, 3)]
    assert {t: [m.offset for m in ms] for t, ms in tx.by_topic().items()} == {
        "a": [0], "b": [0, 1]}
    assert a.take() is None and a.buffered == 0


def test_messages_are_in_total_order_then_read_order_within_a_partition() -> None:
    # read in another order than the transaction's; a key-changing UPDATE (total 2) is two
    # messages with one number, kept in the order read; a filtered row leaves a gap (4)
    a = assembler(("a", 0), ("a", 1), ("b", 0))
    a.on_message(msg("b", 0, 0, "t", total=5))
    a.on_message(msg("a", 1, 0, "t", total=2, value=None))
    a.on_message(msg("a", 1, 1, "t", total=2))
    a.on_message(msg("a", 0, 0, "t", total=3))
    a.on_message(msg("a", 0, 1, "t", total=1))
    a.on_metadata(end(0, "t", {"a": 4, "b": 1}))
    tx = a.take()
    assert isinstance(tx, Transaction)
    assert [(m.partition, m.offset, m.total_order) for m in tx.messages] == [
        (0, 1, 1), (1, 0, 2), (1, 1, 2), (0, 0, 3), (0, 0, 5)]
    assert tx.messages[1].value is None


def test_a_whole_transaction_waits_for_an_earlier_one_then_all_go_at_once() -> None:
    a = assembler()
    a.on_metadata(end(0, "t1", {"a": 2}))
    for i, tx in enumerate(["t2", "t3", "t4"], start=1):
        a.on_message(msg("b", 0, i, tx))
        a.on_metadata(end(i, tx, {"b": 1}))
    a.on_message(msg("a", 0, 0, "t1"))
    assert a.take() is None and a.head() is not None
    head_end, read = a.head()  # type: ignore[misc]
    assert (head_end.id, read) == ("t1", {"a": 1})
    a.on_message(msg("a", 0, 1, "t1", total=2))
    assert [i.id for i in take_all(a) if isinstance(i, Transaction)] == ["t1", "t2", "t3", "t4"]
    assert a.head() is None


def test_messages_read_before_and_after_the_end_both_count() -> None:
    a = assembler()
    a.on_message(msg("a", 0, 0, "x"))
    a.on_metadata(end(0, "x", {"a": 3}))
    a.on_message(msg("a", 0, 1, "x", total=2))
    assert a.take() is None
    a.on_message(msg("a", 0, 2, "x", total=3))
    assert [len(t.messages) for t in take_all(a) if isinstance(t, Transaction)] == [3]


def test_standalone_messages_are_handed_out_when_read() -> None:
    a = assembler()
    a.on_message(msg("a", 0, 0, "t"))
    a.on_message(msg("a", 0, 1))  # a snapshot row: no transaction.id
    a.on_message(msg("b", 0, 0, value=None))  # a DDL's tombstone
    items = take_all(a)
    assert [(type(i).__name__, i.topic, i.offset) for i in items] == [
        ("Standalone", "a", 1), ("Standalone", "b", 0)]
    a.on_metadata(end(0, "t", {"a": 1}))
    assert [type(i).__name__ for i in take_all(a)] == ["Transaction"]


def test_a_transaction_with_no_messages_is_whole_at_its_end() -> None:
    a = assembler()
    a.on_metadata(end(0, "empty", {}))
    assert [i.id for i in take_all(a) if isinstance(i, Transaction)] == ["empty"]


def test_begin_records_and_tombstones_in_the_metadata_topic_are_ignored() -> None:
    a = assembler()
    a.on_metadata(begin(0, "t"))
    a.on_metadata(Message(META, 0, 1, b"k", None, (), 0))
    a.on_metadata(Message(META, 0, 2, b"k", b'{"status":"OTHER"}', (), 0))
    assert take_all(a) == [] and a.head() is None


@pytest.mark.parametrize("case", ["more", "second end"])
def test_more_messages_than_the_end_counts_or_a_second_end_is_an_error(case: str) -> None:
    a = assembler()
    a.on_message(msg("a", 0, 0, "t"))
    if case == "more":  # (after the END, the count reached hands the transaction out first)
        a.on_message(msg("a", 0, 1, "t", total=2))
    a.on_metadata(begin(0, "t"))
    with pytest.raises(TransactionContractError, match="transaction t"):
        a.on_metadata(end(1, "t", {"a": 1}))
        if case == "second end":
            a.on_metadata(end(2, "t", {"a": 1}))


def test_a_message_in_a_topic_the_end_does_not_name_is_an_error() -> None:
    a = assembler()
    a.on_metadata(end(0, "u", {"b": 1}))
    with pytest.raises(TransactionContractError, match=r"1 messages read in a, its END counts 0"):
        a.on_message(msg("a", 0, 0, "u"))


def test_a_message_after_its_transaction_was_handed_out_is_dropped_with_a_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    a = assembler()
    a.on_message(msg("a", 0, 0, "t"))
    a.on_metadata(end(0, "t", {"a": 1}))
    assert len(take_all(a)) == 1
    a.on_message(msg("a", 0, 1, "t", total=2))
    assert take_all(a) == [] and a.buffered == 0
    assert "handed out whole already" in caplog.text


@pytest.mark.parametrize(("headers", "problem"), [
    ((("transaction.id", b"t"),), "transaction.total_order is missing"),
    ((("transaction.id", b"t"), ("transaction.total_order", b"x"),
      ("transaction.data_collection_order", b"1")), "transaction.total_order is b'x'"),
])
def test_a_malformed_header_is_an_error(headers: tuple[tuple[str, bytes], ...],
                                        problem: str) -> None:
    with pytest.raises(TransactionContractError, match=problem):
        assembler().on_message(Message("a", 0, 7, b"k", b"v", headers, 0))


@pytest.mark.parametrize("value", [b"not json", b'{"status":"END","id":"t"}',
                                   b'{"status":"END","id":"t","event_count":1,'
                                   b'"data_collections":[{"event_count":1}]}'])
def test_a_malformed_end_is_an_error(value: bytes) -> None:
    with pytest.raises(TransactionContractError, match=f"{META} partition 0 offset 3"):
        assembler().on_metadata(Message(META, 0, 3, b"k", value, (), 0))


def test_a_warning_when_more_than_100000_messages_are_held(
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cdc_ingest.transactions.assemble.BUFFER_WARNING", 10)
    a = assembler()
    for i in range(12):
        a.on_message(msg("a", 0, i, "big", total=i + 1))
    assert caplog.text.count("12 messages are buffered") == 0
    assert caplog.text.count("messages are buffered") == 1
    assert "11 messages are buffered" in caplog.text


# -- commits and resuming ----------------------------------------------------------------


def test_the_commit_metadata_strings_round_trip_and_others_are_not_read() -> None:
    assert parse(sink_metadata(12), "standalone-from") == 12
    assert parse(metadata_metadata(7), "yielded-to") == 7
    assert parse(metadata_metadata(7), "standalone-from") is None
    assert parse("", "yielded-to") is None and parse("some app 3", "yielded-to") is None
    assert partition_start("a 0", None, 9) == PartitionStart(0, 0, 9)
    assert partition_start("a 0", None, 9, new_only=True, now=8) == PartitionStart(0, 8, 9)
    assert partition_start("a 0", (5, sink_metadata(6)), 9) == PartitionStart(5, 6, 9)
    assert metadata_start("m", None) == MetadataStart(0, None)
    assert metadata_start("m", None, new_only=True, now=4) == MetadataStart(0, 4)
    assert metadata_start("m", (3, metadata_metadata(5))) == MetadataStart(3, 5)


def test_an_offset_another_consumer_committed_counts_as_handled(
        caplog: pytest.LogCaptureFixture) -> None:
    assert partition_start("a 0", (5, ""), 9) == PartitionStart(5, 5, 9)
    assert metadata_start("m", (3, "")) == MetadataStart(3, 3)
    assert caplog.text.count("carries no cdc-ingest-tx/1 metadata") == 2


def test_a_commit_before_anything_is_read_keeps_the_start() -> None:
    a = Assembler(MetadataStart(3, 4))
    a.add_partition("a", 0, PartitionStart(5, 7))
    a.add_partition("b", 1, PartitionStart())
    plan = a.commit_plan()
    assert plan.sink == {("a", 0): (5, 7), ("b", 1): (0, 0)}
    assert plan.metadata == (3, 4)
    fresh = assembler()
    assert fresh.commit_plan().metadata == (0, 0)


def test_a_commit_holds_what_is_read_but_not_handed_out() -> None:
    a = assembler()
    a.on_message(msg("a", 0, 0, "t1"))
    a.on_message(msg("a", 0, 1, "t2"))
    a.on_metadata(end(0, "t1", {"a": 1}))
    a.on_message(msg("b", 0, 0))  # standalone, ready after t1
    plan = a.commit_plan()  # nothing taken yet
    assert plan.sink == {("a", 0): (0, 2), ("b", 0): (0, 0)}
    assert plan.metadata == (0, 0)
    t1 = a.take()
    assert isinstance(t1, Transaction) and t1.id == "t1"
    plan = a.commit_plan()
    assert plan.sink == {("a", 0): (1, 2), ("b", 0): (0, 0)}
    assert plan.metadata == (1, 1)
    assert isinstance(a.take(), Standalone)
    assert a.commit_plan().sink[("b", 0)] == (1, 1)


def test_a_transaction_handed_out_with_a_message_above_a_held_one_is_read_again() -> None:
    # a0: t1 | t2 | t1 ; t1 is whole and handed out, t2 is not: S = 1 holds t2's message, and
    # t1's message at 2 is read again after a restart, so t1's END must be read again too
    a = assembler()
    a.on_metadata(begin(0, "t1"))
    a.on_message(msg("a", 0, 0, "t1"))
    a.on_message(msg("a", 0, 1, "t2"))
    a.on_message(msg("a", 0, 2, "t1", total=2))
    a.on_metadata(end(1, "t1", {"a": 2}))
    a.on_metadata(begin(2, "t2"))
    a.on_metadata(end(3, "t2", {"a": 1, "b": 1}))
    assert [i.id for i in take_all(a) if isinstance(i, Transaction)] == ["t1"]
    plan = a.commit_plan()
    assert plan.sink[("a", 0)] == (1, 3)
    assert plan.metadata == (1, 2)  # M' = t1's END, M = after it

    again = Assembler(metadata_start(META, (1, metadata_metadata(2))))
    for topic in ("a", "b"):
        s, n = plan.sink[(topic, 0)]
        again.add_partition(topic, 0, partition_start(topic, (s, sink_metadata(n)), 3))
    again.on_message(msg("a", 0, 1, "t2"))
    again.on_message(msg("a", 0, 2, "t1", total=2))  # before t1's END is read: held
    assert again.buffered == 2
    again.on_metadata(end(1, "t1", {"a": 2}))  # below M: dropped
    assert again.buffered == 1 and again.take() is None
    again.on_metadata(end(3, "t2", {"a": 1, "b": 1}))
    again.on_message(msg("b", 0, 0, "t2"))
    assert [i.id for i in take_all(again) if isinstance(i, Transaction)] == ["t2"]


def test_a_standalone_message_handed_out_is_not_handed_out_again() -> None:
    a = assembler()
    a.on_message(msg("a", 0, 0, "t"))
    a.on_message(msg("a", 0, 1))
    assert [(i.topic, i.offset) for i in take_all(a)] == [("a", 0 + 1)]
    s, n = a.commit_plan().sink[("a", 0)]
    assert (s, n) == (0, 2)
    again = Assembler()
    again.add_partition("a", 0, partition_start("a", (s, sink_metadata(n)), 2))
    again.on_message(msg("a", 0, 0, "t"))
    again.on_message(msg("a", 0, 1))
    assert take_all(again) == []


def test_the_consumer_position_past_commit_markers_moves_the_commit() -> None:
    a = assembler()
    a.on_message(msg("a", 0, 0))
    a.on_metadata(end(0, "t", {}))
    take_all(a)
    a.advance("a", 0, 2)  # the commit marker at 1
    a.advance("a", 0, 1)  # never back
    a.advance_metadata(2)
    assert a.commit_plan().sink[("a", 0)] == (2, 2)
    assert a.commit_plan().metadata == (1, 1)


def test_an_earlier_runs_transactions_are_forgotten_once_past_the_ends_at_start() -> None:
    a = Assembler(MetadataStart(0, 2))
    a.add_partition("a", 0, PartitionStart(0, 0, end=2))
    assert a.replaying
    a.on_metadata(end(0, "old1", {"a": 1}))
    a.on_metadata(end(1, "old2", {"a": 1}))
    assert not a.replaying
    a.on_message(msg("a", 0, 0, "old1"))
    assert a.commit_plan().metadata == (0, 2)  # old2's message may still come
    a.on_message(msg("a", 0, 1, "old2"))
    assert take_all(a) == [] and a.buffered == 0
    assert a.commit_plan().metadata == (2, 2)


# -- simulations: random reads, commits and crashes ---------------------------------------

TOPICS = {"a": 2, "b": 1, "c": 3}


@dataclass
class Workload:
    writes: list[Message] = field(default_factory=list)  # in the order written
    order: list[str] = field(default_factory=list)  # transaction ids, END order
    messages: dict[str, list[tuple[str, int, int]]] = field(default_factory=dict)
    standalone: list[tuple[str, int, int]] = field(default_factory=list)


def workload(rng: random.Random, transactions: int) -> Workload:
    """Messages of up to 3 transactions at once, written interleaved in random partitions,
    standalone ones among them; each END after its messages and the earlier ENDs."""
    w = Workload()
    offsets: dict[tuple[str, int], int] = {}
    meta = 0

    def write(topic: str, p: int, tx: str | None, total: int) -> None:
        offset = offsets.get((topic, p), 0)
        offsets[(topic, p)] = offset + 1
        w.writes.append(msg(topic, p, offset, tx, total))
        if tx is None:
            w.standalone.append((topic, p, offset))
        else:
            w.messages[tx].append((topic, p, offset))

    todo: dict[str, list[tuple[str, int, int]]] = {}
    ids = [f"g:{i}" for i in range(transactions)]
    for tx in ids:
        w.messages[tx] = []
        rows = [(t, rng.randrange(n)) for t, n in rng.choices(list(TOPICS.items()),
                                                             k=rng.randint(1, 6))]
        todo[tx] = [(t, p, total) for total, (t, p) in enumerate(rows, start=1)]
    started = 0
    while w.order != ids:
        while started < len(ids) and (len([t for t in ids[:started] if todo[t]]) < 3):
            started += 1
        live = [t for t in ids[:started] if todo[t]]
        if live and rng.random() < 0.85:
            tx = rng.choice(live)
            topic, p, total = todo[tx].pop(0)
            write(topic, p, tx, total)
        elif rng.random() < 0.5:
            write(rng.choice(list(TOPICS)), 0, None, 0)
        done = len(w.order)
        if done < started and not todo[ids[done]]:
            tx = ids[done]
            counts: dict[str, int] = {}
            for topic, _, _ in w.messages[tx]:
                counts[topic] = counts.get(topic, 0) + 1
            w.writes.append(begin(meta, tx))
            w.writes.append(end(meta + 1, tx, counts))
            meta += 2
            w.order.append(tx)
    return w


def run_once(w: Workload, visible: int, committed: dict[tuple[str, int], tuple[int, str]],
             rng: random.Random, crash: bool) -> tuple[list[Transaction | Standalone], int]:
    """One reader run from ``committed``; returns what it handed out before its last commit
    (everything, without a crash) and how much of the workload was written by then."""
    parts = {(m.topic, m.partition): [] for m in w.writes}  # type: dict[tuple[str, int], list[Message]]
    for m in w.writes:
        parts[(m.topic, m.partition)].append(m)

    def length(tp: tuple[str, int], upto: int) -> int:
        return sum(1 for m in w.writes[:upto] if (m.topic, m.partition) == tp)

    a = Assembler(metadata_start(META, committed.get((META, 0))))
    position = {}
    for tp in parts:
        if tp[0] != META:
            start = partition_start(str(tp), committed.get(tp), length(tp, visible))
            a.add_partition(tp[0], tp[1], start)
            position[tp] = start.offset
    position[(META, 0)] = a.metadata_start.offset
    handed: list[Transaction | Standalone] = []
    lost: list[Transaction | Standalone] = []
    steps = rng.randint(5, 400) if crash else 10**9
    while steps > 0:
        steps -= 1
        if visible < len(w.writes) and rng.random() < 0.3:
            visible += 1
        readable = [tp for tp, pos in position.items() if pos < length(tp, visible)]
        if not readable:
            if visible == len(w.writes):
                break
            continue
        tp = rng.choice(readable)
        m = parts[tp][position[tp]]
        position[tp] += 1
        if tp == (META, 0):
            a.on_metadata(m)
        else:
            a.on_message(m)
        if rng.random() < 0.3:
            for _ in range(rng.randint(1, 3)):
                item = a.take()
                if item is not None:
                    lost.append(item)
        if crash and rng.random() < 0.1:
            handed += lost
            lost = []
            plan = a.commit_plan()
            committed.clear()
            committed.update({tp: (s, sink_metadata(n)) for tp, (s, n) in plan.sink.items()})
            committed[(META, 0)] = (plan.metadata[0], metadata_metadata(plan.metadata[1]))
    if not crash:
        handed += lost + take_all(a)
        assert a.buffered == 0 and a.head() is None
    return handed, visible


def check(w: Workload, handed: list[Transaction | Standalone]) -> None:
    txs = [i for i in handed if isinstance(i, Transaction)]
    assert [t.id for t in txs] == w.order
    for t in txs:
        assert sorted((m.topic, m.partition, m.offset) for m in t.messages) == sorted(
            w.messages[t.id])
        assert [m.total_order for m in t.messages] == sorted(m.total_order for m in t.messages)
    alone = [(i.topic, i.partition, i.offset) for i in handed if isinstance(i, Standalone)]
    assert sorted(alone) == sorted(w.standalone)


@pytest.mark.parametrize("seed", range(40))
def test_random_reads_with_commits_and_crashes_hand_out_each_transaction_once(
        seed: int) -> None:
    rng = random.Random(seed)
    w = workload(rng, rng.randint(5, 40))
    committed: dict[tuple[str, int], tuple[int, str]] = {}
    handed: list[Transaction | Standalone] = []
    visible = rng.randint(0, len(w.writes))
    for _ in range(rng.randint(1, 6)):
        got, visible = run_once(w, visible, committed, rng, crash=True)
        handed += got
    got, _ = run_once(w, visible, committed, rng, crash=False)
    check(w, handed + got)


@pytest.mark.parametrize("seed", range(10))
def test_without_crashes_everything_is_handed_out_in_end_order(seed: int) -> None:
    rng = random.Random(1000 + seed)
    w = workload(rng, 30)
    got, _ = run_once(w, 0, {}, rng, crash=False)
    check(w, got)


def test_new_only_hands_out_what_ends_after_the_start() -> None:
    rng = random.Random(7)
    w = workload(rng, 20)
    cut = len(w.writes) // 2
    old_meta = sum(1 for m in w.writes[:cut] if m.topic == META)
    a = Assembler(metadata_start(META, None, new_only=True, now=old_meta))
    parts = sorted({(m.topic, m.partition) for m in w.writes if m.topic != META})
    for tp in parts:
        now = sum(1 for m in w.writes[:cut] if (m.topic, m.partition) == tp)
        a.add_partition(tp[0], tp[1], partition_start(str(tp), None, now, True, now))
    for m in w.writes:  # the metadata topic first, as the reader pauses the others
        if m.topic == META:
            a.on_metadata(m)
    for m in w.writes:
        if m.topic != META:
            a.on_message(m)
    new = [i for i in take_all(a)]
    ends = [m for m in w.writes if m.topic == META and b'"END"' in (m.value or b"")]
    assert [i.id for i in new if isinstance(i, Transaction)] == [
        orjson.loads(m.value or b"")["id"] for m in ends if m.offset >= old_meta]
    assert sorted((i.topic, i.partition, i.offset) for i in new if isinstance(i, Standalone)) \
        == sorted((m.topic, m.partition, m.offset) for m in w.writes[cut:]
                  if m.topic != META and not m.headers)
    assert a.buffered == 0


def test_watch_shows_a_transaction_as_a_header_line_and_its_messages() -> None:
    a = assembler(("shop.orders", 0), ("shop.lines", 1))
    a.on_message(msg("shop.lines", 1, 4, "0-1-20", total=2))
    a.on_message(msg("shop.orders", 0, 9, "0-1-20", total=1))
    a.on_message(msg("shop.lines", 1, 5, "0-1-20", total=3, value=None))
    a.on_metadata(end(0, "0-1-20", {"shop.orders": 1, "shop.lines": 2}, ts=1795299279000))
    tx = a.take()
    assert tx is not None
    assert block(tx).splitlines() == [
        "transaction 0-1-20 (3 messages: shop.orders 1, shop.lines 2) committed "
        "2026-11-21T22:14:39.000+00:00",
        '  shop.orders p0@9 key=k9 value={} headers={\'transaction.id\': \'0-1-20\', '
        "'transaction.total_order': '1', 'transaction.data_collection_order': '1'}",
        '  shop.lines p1@4 key=k4 value={} headers={\'transaction.id\': \'0-1-20\', '
        "'transaction.total_order': '2', 'transaction.data_collection_order': '1'}",
        "  shop.lines p1@5 key=k5 value=null (tombstone: a delete) headers={'transaction.id': "
        "'0-1-20', 'transaction.total_order': '3', 'transaction.data_collection_order': '1'}",
    ]
    a.on_message(msg("shop.orders", 0, 10))
    alone = a.take()
    assert alone is not None and block(alone) == "shop.orders p0@10 key=k10 value={}"
