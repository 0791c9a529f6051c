"""A sink task's read of its changelog range with librdkafka (decision 0016), against a real
broker: exactly the committed records of ``[start, end)``, whatever the range holds or how it
ends; records deleted by retention are an error naming what was lost; a broker restarted in
the middle of a range loses and repeats nothing.

The ranges are read through :class:`cdc_ingest.sink.task.range_read.RangeRecords`, what the sink's
tasks hand to the writer. The sink itself on this path, killed mid-batch, is
test_sink_exactly_once.py and test_sink_first_batch.py.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from cdc_ingest.kafka import TopicAdmin, TopicSpec, ranges
from cdc_ingest.kafka.ranges import read_live
from cdc_ingest.services import KafkaBroker
from cdc_ingest.sink.driver.failures import query_failed
from cdc_ingest.sink.task import range_read
from cdc_ingest.sink.task.range_read import ChangelogGoneError, ChangelogRange, RangeRecords
from tests.integration.pipeline_helpers import wait_for


def _topic(config: dict[str, Any], prefix: str) -> str:
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    TopicAdmin(config).ensure(TopicSpec(topic, 1, 1, {}))
    return topic


def _transaction(producer: Producer, topic: str, values: list[bytes], commit: bool) -> None:
    producer.begin_transaction()
    for value in values:
        producer.produce(topic, value, value, partition=0)
    producer.flush(30)  # in the log before the decision, aborted ones too
    if commit:
        producer.commit_transaction(30)
    else:
        producer.abort_transaction(30)


def _producer(config: dict[str, Any], topic: str) -> Producer:
    producer = Producer({**config, "transactional.id": f"tx-{topic}"})
    producer.init_transactions(30)
    return producer


def _log(config: dict[str, Any], topic: str) -> list[tuple[int, bytes]]:
    """What the partition holds, aborted records included (read_uncommitted)."""
    consumer = Consumer({**config, "group.id": "range-test", "enable.partition.eof": True,
                         "isolation.level": "read_uncommitted"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    out: list[tuple[int, bytes]] = []
    try:
        while True:
            msg = consumer.poll(30)
            assert msg is not None, "no end of the partition within 30 s"
            if msg.error():
                return out
            out.append((msg.offset(), msg.value()))
    finally:
        consumer.close()


def _read(config: dict[str, Any], topic: str, start: int, end: int) -> list[tuple[int, bytes]]:
    out: list[tuple[int, bytes]] = []
    for partition, (offsets, keys, values) in RangeRecords(
            config, topic, ChangelogRange(0, start, end)).columns():
        assert partition == 0
        assert keys == values  # each record's key is its value
        out += zip(offsets, values, strict=True)
    return out


@pytest.fixture
def quick_stall(monkeypatch: pytest.MonkeyPatch) -> None:
    # a read that missed its end fails in seconds instead of hanging the run
    monkeypatch.setattr(range_read, "STALL_S", 15.0)


def test_ranges_with_aborted_transactions_and_markers_give_exactly_their_committed_records(
    kafka: Any, quick_stall: None
) -> None:
    config = {"bootstrap.servers": kafka.bootstrap}
    topic = _topic(config, "range")
    producer = _producer(config, topic)
    _transaction(producer, topic, [b"a0", b"a1", b"a2"], commit=True)  # 0-2, marker 3
    _transaction(producer, topic, [b"b0", b"b1"], commit=False)  # 4-5, abort marker 6
    _transaction(producer, topic, [b"c0", b"c1", b"c2"], commit=True)  # 7-9, marker 10
    committed = [(0, b"a0"), (1, b"a1"), (2, b"a2"), (7, b"c0"), (8, b"c1"), (9, b"c2")]
    assert _log(config, topic) == [*committed[:3], (4, b"b0"), (5, b"b1"), *committed[3:]]
    assert _read(config, topic, 0, 11) == committed  # the whole log, ending on a marker
    assert _read(config, topic, 0, 4) == committed[:3]  # ends on the first commit marker
    assert _read(config, topic, 3, 7) == []  # a marker, aborted records, an abort marker
    assert _read(config, topic, 4, 9) == committed[3:5]  # ends inside a transaction
    assert _read(config, topic, 8, 9) == [(8, b"c1")]  # nothing past the end
    assert _read(config, topic, 5, 5) == []


def test_a_live_read_gives_committed_records_as_they_come_and_says_when_it_caught_up(
    kafka: Any,
) -> None:
    # what the sink's head start reads (sink/driver/head_start.py, decision 0017): no end, an empty
    # batch whenever a read brought nothing (the writer commits what it holds then), and a
    # transaction still open holds back everything after it (read_committed)
    config = {"bootstrap.servers": kafka.bootstrap}
    topic = _topic(config, "live")
    producer = _producer(config, topic)
    _transaction(producer, topic, [b"a0", b"a1"], commit=True)  # 0-1, marker 2
    _transaction(producer, topic, [b"b0"], commit=False)  # 3, abort marker 4
    stopped = [False]
    reader = read_live(config, topic, 0, -2, lambda: stopped[0])  # -2: from the beginning
    got: list[tuple[int, bytes]] = []

    def until_caught_up() -> None:
        for offsets, keys, values in reader:
            assert keys == values
            if not offsets:
                return
            got.extend(zip(offsets, values, strict=True))

    wait_for(lambda: (until_caught_up(), len(got) >= 2)[1], timeout=30, what="a0 and a1")
    assert got == [(0, b"a0"), (1, b"a1")]
    producer.begin_transaction()  # open: c0 (offset 5) is not readable yet
    producer.produce(topic, b"c0", b"c0", partition=0)
    producer.flush(30)
    other = Producer(config)  # d0 (offset 6) is written, but after the open transaction
    other.produce(topic, b"d0", b"d0", partition=0)
    other.flush(30)
    for _ in range(20):  # a second of reads: nothing past the open transaction
        until_caught_up()
    assert got == [(0, b"a0"), (1, b"a1")]
    producer.commit_transaction(30)  # marker 7
    wait_for(lambda: (until_caught_up(), len(got) == 4)[1], timeout=30, what="c0 and d0")
    assert got == [(0, b"a0"), (1, b"a1"), (5, b"c0"), (6, b"d0")]
    stopped[0] = True
    assert list(reader) in ([], [([], [], [])])  # it ends once stopped, at most one more poll


def test_a_range_whose_records_retention_deleted_stops_with_what_was_lost_and_the_fix(
    kafka: Any, quick_stall: None
) -> None:
    config = {"bootstrap.servers": kafka.bootstrap}
    topic = _topic(config, "range-gone")
    _transaction(_producer(config, topic), topic, [b"v0", b"v1", b"v2", b"v3", b"v4"],
                 commit=True)
    admin = AdminClient(config)
    for future in admin.delete_records([TopicPartition(topic, 0, 3)]).values():
        future.result(30)  # what retention does: offsets 0-2 are gone
    assert _read(config, topic, 3, 6) == [(3, b"v3"), (4, b"v4")]
    with pytest.raises(ChangelogGoneError) as raised:
        _read(config, topic, 1, 6)
    text = str(raised.value)
    assert f"changelog {topic} partition 0: offsets from 1 (this batch reads 1..5)" in text
    assert "retention deleted changelog records before the sink wrote them" in text
    assert "Nothing was skipped" in text
    assert "Fix: raise the changelog topic's retention.ms" in text
    # what the sink exits with when a task raised it inside Spark
    failure = query_failed(RuntimeError(
        "org.apache.spark.SparkException: Job aborted due to stage failure\n"
        "Traceback (most recent call last):\n"
        f"cdc_ingest.sink.task.range_read.ChangelogGoneError: {text}\n"
        "\tat org.apache.spark.api.python.BasePythonRunner"))
    assert str(failure) == f"the sink query failed: {text}"
    assert failure.exit_code == 5


def test_a_broker_restarted_in_the_middle_of_a_range_loses_and_repeats_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # at most 1,000 records per read: on a fast machine one read took the first 10,000 in
    # (its whole wait), so the stop came after the range was a third read, not in its middle
    monkeypatch.setattr(ranges, "READ_BATCH", 1_000)
    broker = KafkaBroker(tmp_path / "kafka")
    try:
        broker.start()
        config = {"bootstrap.servers": broker.bootstrap}
        topic = _topic(config, "range-restart")
        producer = _producer(config, topic)
        for n in range(6):
            _transaction(producer, topic, [b"%06d" % (n * 5000 + i) for i in range(5000)],
                         commit=True)
        end = 6 * 5001  # 30,000 records and 6 commit markers
        # small fetches, so most of the range is still in the broker when it stops
        slow = {**config, "fetch.message.max.bytes": 4096, "queued.max.messages.kbytes": 16}
        read = RangeRecords(slow, topic, ChangelogRange(0, 0, end)).columns()
        got: list[bytes] = []
        got += next(read)[1][2]
        # one read's 1,000 and a 16 KB queue (~2,000 records) are in: the rest waits in the broker
        broker.stop()
        broker.start()
        for _, (_, _, values) in read:
            got += values
        assert got == [b"%06d" % i for i in range(30_000)]
    finally:
        broker.stop()
