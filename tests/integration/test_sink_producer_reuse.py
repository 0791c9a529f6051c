"""The sink's transactional producers kept across tasks (writer._transactional), on a real
broker: a Python worker reuses its producer only while it still holds the partition's
transactional id; after another worker registered the id, the old producer is found fenced
before anything is read, a new one registers the id, and every record still reaches the sink
topic exactly once."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any, NamedTuple

from cdc_ingest.config import load_pipeline
from cdc_ingest.kafka import TopicAdmin, TopicSpec, TransactionalProducer, read_topic
from cdc_ingest.kafka.offsets import GroupOffsets
from cdc_ingest.sink import writer
from cdc_ingest.sink.settings import sink_settings
from tests.integration.pipeline_helpers import sink_topic, write_pipeline


class Row(NamedTuple):
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def _changelog(kafka: Any, topic: str, count: int) -> list[Row]:
    TopicAdmin({"bootstrap.servers": kafka.bootstrap}).ensure(TopicSpec(topic, 1))
    producer = TransactionalProducer({"bootstrap.servers": kafka.bootstrap},
                                     f"{topic}-writer")
    producer.init()
    producer.begin()
    for n in range(count):
        pk = {"id": n}
        value = {"v": 1, "op": "+I", "db": "db", "table": "t", "pk": pk, "before": None,
                 "after": {"id": n, "v": f"row {n}"}, "ts_ms": 1_700_000_000_000,
                 "pos": f"bin.000001:{n}"}
        producer.send(topic, json.dumps(value).encode(), json.dumps(pk).encode(), partition=0)
    producer.commit()
    producer.close()
    rows = [Row(m.partition, m.offset, m.key, m.value)
            for m in read_topic({"bootstrap.servers": kafka.bootstrap}, topic)]
    assert len(rows) == count
    return sorted(rows, key=lambda r: r.offset)


def test_a_producer_fenced_by_another_worker_is_replaced_and_nothing_is_doubled(
    mariadb: Any, kafka: Any, tmp_path: Path
) -> None:
    name = f"reuse-{uuid.uuid4().hex[:8]}"
    config = write_pipeline(tmp_path / "p.yaml", mariadb, kafka, name, "db.t",
                            sink={"sink.delivery-guarantee": "exactly-once"},
                            routes=[{"source-table": "db.t", "sink-table": f"{name}-out"}])
    settings = sink_settings(load_pipeline(config))
    rows = _changelog(kafka, settings.changelog_topic, 30)
    tid = settings.transactional_id(0)
    writer.close_clients()
    try:
        # worker A writes the first task and keeps its producer
        writer.write_partition(settings, rows[:10])
        worker_a = writer._transactions[tid]
        # the next task runs in worker B, whose new producer registers the id: A's is fenced
        writer._transactions.clear()
        writer.write_partition(settings, rows[10:20])
        worker_b = writer._transactions[tid]
        assert worker_b is not worker_a
        # back in worker A with its old producer: a task that also repeats 15..19 (a retry)
        writer._transactions[tid] = worker_a
        counters = writer.write_partition(settings, rows[15:30])
        replaced = writer._transactions[tid]
        assert replaced is not worker_a and replaced is not worker_b
        assert counters["skipped"] == 5 and counters["rows_out"] == 10
        # a producer that still holds the id is reused, and what is committed is skipped
        counters = writer.write_partition(settings, rows[25:30])
        assert writer._transactions[tid] is replaced
        assert counters["skipped"] == 5 and counters["rows_out"] == 0
    finally:
        writer.close_clients()

    out = sink_topic(kafka, f"{name}-out")
    assert [json.loads(m.key)["id"] for m in out] == list(range(30))
    assert [json.loads(m.value)["v"] for m in out] == [f"row {n}" for n in range(30)]
    group = GroupOffsets({"bootstrap.servers": kafka.bootstrap}, settings.group_id)
    try:
        assert group.committed(settings.changelog_topic, [0]) == {0: rows[-1].offset + 1}
    finally:
        group.close()
