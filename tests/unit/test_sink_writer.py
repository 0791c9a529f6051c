"""The sink writer's per-record path without Kafka: Arrow batches -> columns -> transaction
chunks, and producing through the raw client with the wrapper's semantics on failures."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from unittest.mock import ANY

import orjson
import pyarrow as pa
import pytest
from confluent_kafka import KafkaError, KafkaException, Producer

from cdc_ingest.errors import SinkError
from cdc_ingest.formats.upsert_json import SinkMessage, UpsertOptions
from cdc_ingest.kafka import FencedError, KafkaClientError, PlainProducer, TransactionalProducer
from cdc_ingest.routing.routes import Router, RouteRule
from cdc_ingest.sink.settings import UpsertFormat
from cdc_ingest.sink.task import writer
from cdc_ingest.sink.task.columns import (
    ChangelogBatches,
    ChangelogRow,
    row_columns,
)
from cdc_ingest.sink.task.record_loop import Counters, chunks
from cdc_ingest.sink.task.rekey import Cutover

NO_BROKER = {"bootstrap.servers": "127.0.0.1:9", "log_level": 0}


def _value(n: int, op: str = "+I") -> bytes:
    row = {"id": n, "amount": orjson.Fragment(b"0.50")}
    return orjson.dumps({"v": 1, "op": op, "db": "d", "table": "t", "pk": {"id": n},
                         "before": None, "after": None if op == "-D" else row,
                         "ts_ms": 1000 + n, "pos": f"p#{n}"})


def _batch(partition: int, offsets: list[int]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({
        "partition": pa.array([partition] * len(offsets), pa.int32()),
        "offset": pa.array(offsets, pa.int64()),
        "key": pa.array([orjson.dumps({"id": o}) for o in offsets], pa.binary()),
        "value": pa.array([_value(o) for o in offsets], pa.binary()),
    })  # fmt: skip


def _chunks(settings: writer.SinkSettings, counters: Any, batches: Any, start: int,
            reset: Any = None) -> Any:
    serde = writer.SinkSerde(settings.router.sink_topics,
                             UpsertOptions(False, settings.with_headers))
    return chunks(settings, serde, counters, batches, start, reset or (lambda *a: []))


def _settings(**changes: Any) -> writer.SinkSettings:
    values: dict[str, Any] = {
        "kafka": dict(NO_BROKER), "changelog_topic": "cl", "group_id": "g",
        "transactional_id_prefix": "x", "guarantee": "exactly-once",
        "router": Router([RouteRule.compile("d.t", "sink")]), "format": UpsertFormat(),
        "with_headers": True, "buffer_max_rows": 0, "buffer_interval_s": 0.0,
        "topic_partitions": None, "topic_replication": None, **changes,
    }  # fmt: skip
    return writer.SinkSettings(**values)


def test_arrow_batches_become_columns_and_rows() -> None:
    batches = [_batch(1, [5, 6]), _batch(1, []), _batch(1, [7])]
    columns = list(ChangelogBatches(batches).columns())
    assert [(p, offsets) for p, (offsets, _, _) in columns] == [(1, [5, 6]), (1, [7])]
    assert all(isinstance(k, bytes) and isinstance(v, bytes)
               for _, (_, keys, values) in columns for k, v in zip(keys, values, strict=True))
    rows = list(ChangelogBatches(batches))
    assert rows[0] == ChangelogRow(1, 5, b'{"id":5}', _value(5)) and len(rows) == 3


def test_a_task_with_two_partitions_is_refused() -> None:
    mixed = pa.concat_batches([_batch(0, [1]), _batch(1, [2])])
    with pytest.raises(SinkError, match="partitions"):
        list(ChangelogBatches([mixed]).columns())
    rows = [ChangelogRow(0, 1, b"k", b"v"), ChangelogRow(1, 2, b"k", b"v")]
    with pytest.raises(SinkError, match="partitions"):
        list(row_columns(rows, size=1))
    counters = Counters(partition=0)
    split = iter([(0, ([1], [b"k"], [_value(1)])), (1, ([2], [b"k"], [_value(2)]))])
    with pytest.raises(SinkError, match="partitions"):
        list(_chunks(_settings(), counters, split, 0))


def test_chunks_skip_what_was_committed_and_bound_transactions_in_rows() -> None:
    settings = _settings(max_tx_rows=3)
    counters = Counters(partition=1)
    batches = ChangelogBatches([_batch(1, [10, 11, 12, 13]), _batch(1, [14, 15, 16])]).columns()
    chunks = [(len(messages), last) for messages, last
              in _chunks(settings, counters, batches, start=12)]
    assert chunks == [(3, 14), (2, 16)]
    assert (counters.rows_in, counters.skipped, counters.max_event_ts_ms) == (7, 2, 1016)


def test_the_first_transactions_grow_from_first_tx_rows_to_max_tx_rows() -> None:
    # a start's first batch (sink/driver/query.py): 2, then 2 x FIRST_GROWTH (5), then max_tx_rows
    settings = _settings(max_tx_rows=12, first_tx_rows=2)
    batches = ChangelogBatches([_batch(0, list(range(40)))]).columns()
    sizes = [len(m) for m, _ in _chunks(settings, Counters(partition=0), batches, start=0)]
    assert sizes == [2, 10, 12, 12, 4]
    # buffer-flush.max-rows still bounds each one (its dedup runs per transaction)
    settings = _settings(max_tx_rows=12, first_tx_rows=2, buffer_max_rows=6)
    batches = ChangelogBatches([_batch(0, list(range(20)))]).columns()
    sizes = [len(m) for m, _ in _chunks(settings, Counters(partition=0), batches, start=0)]
    assert sizes == [2, 6, 6, 6]
    # later batches: max_tx_rows from the first transaction on
    batches = ChangelogBatches([_batch(0, list(range(20)))]).columns()
    sizes = [len(m) for m, _ in _chunks(_settings(max_tx_rows=12), Counters(partition=0),
                                        batches, start=0)]
    assert sizes == [12, 8]


def test_a_truncate_is_a_chunk_of_its_own_made_after_the_chunk_before_it_is_done() -> None:
    truncate = orjson.dumps({"v": 1, "op": "DDL", "db": "d", "table": "t", "pk": None,
                             "before": None, "after": None, "ts_ms": 2000, "pos": "bin.1:9",
                             "ddl": "TRUNCATE t", "action": "truncate"})
    alter = truncate.replace(b'"truncate"}', b'"alter"}').replace(b"TRUNCATE", b"ALTER")
    batches = iter([(0, ([1, 2, 3, 4, 5], [b"k1", b"k2", None, b"k4", None],
                         [_value(1), _value(2), truncate, _value(4), alter]))])
    done: list[int] = []  # offsets of the chunks the caller has finished
    resets: list[tuple[str, int, list[int]]] = []

    def reset(ddl: Any, ts: int, offset: int) -> list[Any]:
        resets.append((ddl.ddl, ts, list(done)))
        return [("sink", b"k0", None, None, ts, "d.t")]

    got = []
    for messages, last in _chunks(_settings(), Counters(partition=0), batches, 0,
                                  reset):
        got.append(([m[1:3] for m in messages], last))
        done.append(last)
    assert got == [([(b"k1", ANY), (b"k2", ANY)], 2), ([(b"k0", None)], 3),
                   ([(b"k4", ANY)], 5)]
    # the tombstones were asked for once the records before the statement were committed
    assert resets == [("TRUNCATE t", 2000, [2])]


def test_a_cutover_is_a_chunk_of_its_own_and_the_rows_it_read_are_not_written_again() -> None:
    cut = orjson.dumps({"v": 1, "op": "DDL", "db": "d", "table": "t", "pk": None,
                        "before": None, "after": None, "ts_ms": 2000, "pos": "bin.1:9",
                        "ddl": "re-key d.t", "action": "rekey-cut"})
    batches = iter([(0, ([1, 2, 3, 4], [b"k1", None, b"k3", b"k4"],
                         [_value(1), cut, _value(3), _value(4)])),
                    (0, ([5, 6, 7], [b"k5", b"k6", b"k7"], [_value(5), _value(6), _value(7)]))])
    cutover = Cutover.__new__(Cutover)
    cutover.last = 5  # the rekey-end record: the rows up to it came with the cutover

    def reset(ddl: Any, ts: int, offset: int) -> Any:
        assert (ddl.action, offset) == ("rekey-cut", 2)
        return cutover

    counters = Counters(partition=0)
    got = [(m if isinstance(m, Cutover) else [x[1] for x in m], last)
           for m, last in _chunks(_settings(), counters, batches, 0, reset)]
    assert got == [([b"k1"], 1), (cutover, 2), ([b"k6", b"k7"], 7)]
    assert counters.skipped == 3


def test_a_record_that_cannot_be_read_names_its_offset() -> None:
    counters = Counters(partition=0)
    batches = iter([(0, ([3], [b"k"], [b'{"op":"+I"}']))])
    with pytest.raises(SinkError, match="cl partition 0 offset 3"):
        list(_chunks(_settings(), counters, batches, 0))


def test_an_empty_task_writes_nothing() -> None:
    assert writer.write_partition(_settings(), ChangelogBatches([])).partition == -1
    assert writer.write_partition(_settings(), []).rows_in == 0


# -- producing ---------------------------------------------------------------------------


class _Raw(Producer):  # type: ignore[misc]
    """A client that records what it is given and fails as told."""

    def __init__(self, failures: list[BaseException]) -> None:
        super().__init__(NO_BROKER)
        self.failures = failures
        self.sent: list[tuple[Any, ...]] = []

    def produce(self, topic: str, value: Any = None, key: Any = None, **kwargs: Any) -> None:
        if self.failures:
            raise self.failures.pop(0)
        self.sent.append((topic, key, value, kwargs.get("headers"), kwargs.get("timestamp")))


class _Topics:
    def ensure(self, topic: str) -> None:
        pass


@pytest.fixture
def messages(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[SinkMessage]]:
    monkeypatch.setattr(writer, "_sink_topics", lambda settings: _Topics())
    headers = [("namespace", b"")]
    yield [("a", b"k1", b"v1", headers, 5, "d.t"), ("a", b"k2", None, None, 6, "d.t")]


def _transactional(raw: _Raw) -> TransactionalProducer:
    producer = TransactionalProducer(NO_BROKER, "test.unit")
    producer._producer = raw
    return producer


def test_both_producers_send_through_the_one_kafka_send(messages: list[SinkMessage]) -> None:
    # The plain producer reports failed deliveries through its client's on_delivery setting,
    # so it takes the same send as the transactional one.
    for producer in (_transactional(_Raw([])), PlainProducer(NO_BROKER, idempotent=False)):
        raw = _Raw([])
        producer._producer = raw
        writer._produce(producer.send, _settings(), Counters(), messages)
        assert raw.sent == [("a", b"k1", b"v1", [("namespace", b"")], 5),
                            ("a", b"k2", None, None, 6)]


def test_produce_sends_what_the_wrapper_would(messages: list[SinkMessage]) -> None:
    raw = _Raw([BufferError("queue full")])  # the wrapper waits for room and sends again
    counters = Counters()
    writer._produce(_transactional(raw).send, _settings(), counters, messages)
    assert raw.sent == [("a", b"k1", b"v1", [("namespace", b"")], 5),
                        ("a", b"k2", None, None, 6)]
    assert (counters.rows_out, counters.bytes_out, counters.per_table) == (2, 6, {"d.t": 2})


def test_a_kafka_error_on_produce_is_the_wrappers_error(messages: list[SinkMessage]) -> None:
    fenced = KafkaException(KafkaError(KafkaError._FENCED))
    with pytest.raises(FencedError):
        writer._produce(_transactional(_Raw([fenced, fenced])).send, _settings(), Counters(),
                        messages)
    failed = KafkaException(KafkaError(KafkaError._MSG_TIMED_OUT))
    with pytest.raises(KafkaClientError, match="producing to a"):
        writer._produce(_transactional(_Raw([failed, failed])).send, _settings(), Counters(),
                        messages)


def test_batches_out_of_offset_order_are_refused() -> None:
    batches = iter([(0, ([5, 6], [b"k", b"k"], [_value(5), _value(6)])),
                    (0, ([6], [b"k"], [_value(6)]))])
    with pytest.raises(SinkError, match="offset order"):
        list(_chunks(_settings(), Counters(partition=0), batches, 0))


def test_plain_sink_producers_linger_longer_unless_the_properties_say_otherwise() -> None:
    assert writer._plain_config(_settings())["linger.ms"] == 50
    assert writer._plain_config(_settings(kafka={**NO_BROKER, "linger.ms": 7}))["linger.ms"] == 7

