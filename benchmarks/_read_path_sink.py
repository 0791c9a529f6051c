"""Prototype for read_path.py (issue 36, decision 0010's next step): ``cdc-ingest sink`` whose
tasks read their changelog offset ranges with librdkafka instead of Spark's Kafka source.

Run as ``python benchmarks/_read_path_sink.py sink --config F``. The query, its checkpoint, the
offset ranges (Spark's Kafka source still plans every batch and writes them to its offset log)
and the writer (:func:`~cdc_ingest.sink.writer.write_partition`, with its per-partition
transactional ids and committed offsets) are the product's; only the way the records reach the
writer differs. ``foreachBatch`` ignores the batch's DataFrame (so the JVM never reads a
record) and runs one task per changelog partition that reads ``[start, end)`` of the offset log
read_committed with a confluent-kafka consumer.

A benchmark prototype, not a product path: it reads a local checkpoint only, and the fault
cases decision 0010 lists (a broker restart mid-range, records gone by retention) are not
handled.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial
from typing import Any

from cdc_ingest import cli
from cdc_ingest.sink import job
from cdc_ingest.sink.arrow_batches import ChangelogBatches, Columns
from cdc_ingest.sink.writer import write_partition

READ_BATCH = 10_000  # records per consume() call
RANGE_TIMEOUT_S = 120.0  # a range not read to its end by then is an error


def _offsets_json(path: str, topic: str) -> dict[int, int]:
    """The Kafka source's offsets for ``topic`` in one offset-log (or initial-offsets) file:
    its last JSON line holding the topic."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = [line.strip() for line in f if line.strip().startswith("{")]
    for line in reversed(lines):
        value = json.loads(line)
        if topic in value:
            return {int(p): int(o) for p, o in value[topic].items()}
    raise RuntimeError(f"{path}: no offsets of {topic}")


def offset_ranges(checkpoint: str, batch_id: int, topic: str) -> list[tuple[int, int, int]]:
    """(partition, start, end) of one micro-batch, from the checkpoint's offset log."""
    end = _offsets_json(os.path.join(checkpoint, "offsets", str(batch_id)), topic)
    previous = os.path.join(checkpoint, "offsets", str(batch_id - 1))
    start = (_offsets_json(previous, topic) if batch_id > 0 and os.path.exists(previous)
             else _offsets_json(os.path.join(checkpoint, "sources", "0", "0"), topic))
    return [(p, start.get(p, 0), e) for p, e in sorted(end.items())]


class RangeBatches(ChangelogBatches):
    """``[start, end)`` of one changelog partition, read read_committed with librdkafka, as
    the writer's columns."""

    def __init__(self, conf: dict[str, Any], topic: str, part: int, start: int,
                 end: int) -> None:  # fmt: skip
        super().__init__(iter(()))
        self.conf, self.topic, self.part, self.start, self.end = conf, topic, part, start, end

    def columns(self) -> Iterator[tuple[int, Columns]]:
        from confluent_kafka import Consumer, KafkaError, TopicPartition  # noqa: PLC0415

        if self.end <= self.start:
            return
        consumer = Consumer(self.conf)
        try:
            consumer.assign([TopicPartition(self.topic, self.part, self.start)])
            deadline = time.monotonic() + RANGE_TIMEOUT_S
            done = False
            while not done:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{self.topic}[{self.part}] {self.start}-{self.end}: "
                                       "not read to its end")
                offsets: list[int] = []
                keys: list[bytes | None] = []
                values: list[bytes] = []
                # consume() waits for READ_BATCH records or the timeout: a short timeout,
                # so the last call of a range does not wait for records past its end
                for msg in consumer.consume(READ_BATCH, timeout=0.05):
                    err = msg.error()
                    if err is not None:
                        # the end of what read_committed may read: the range's last offsets
                        # were transaction markers (or aborted records)
                        if err.code() == KafkaError._PARTITION_EOF and msg.offset() >= self.end:
                            done = True
                            break
                        if err.code() == KafkaError._PARTITION_EOF:
                            continue
                        raise RuntimeError(f"{self.topic}[{self.part}]: {err}")
                    offset = msg.offset()
                    if offset >= self.end:
                        done = True
                        break
                    offsets.append(offset)
                    keys.append(msg.key())
                    values.append(msg.value())
                    if offset == self.end - 1:
                        done = True
                        break
                if offsets:
                    yield self.part, (offsets, keys, values)
        finally:
            consumer.close()


def read_task(write: Callable[..., dict[str, Any]], settings: Any, conf: dict[str, Any],
              topic: str, ranges: Iterator[tuple[int, int, int]]) -> Iterator[str]:
    for part, start, end in ranges:
        yield json.dumps(write(settings, RangeBatches(conf, topic, part, start, end)))


def librdkafka_writer(spark: Any, defn: Any, settings: Any,
                      on_batch: Any) -> Callable[[Any, int], None]:
    """job._batch_writer's twin: the same first small transactions and summary line."""
    first = [replace(settings, first_tx_rows=job.FIRST_TX_ROWS)]
    topic = defn.pipeline.changelog_topic
    conf = {"bootstrap.servers": defn.sink.properties["bootstrap.servers"],
            "group.id": f"read-path-prototype-{defn.pipeline.id}",
            "enable.auto.commit": False, "enable.partition.eof": True,
            "isolation.level": "read_committed", "fetch.wait.max.ms": job.FETCH_MAX_WAIT_MS}

    def write_batch(df: Any, batch_id: int) -> None:
        del df  # never read: the JVM reads no record
        began = time.monotonic()
        now = first.pop() if first else settings
        ranges = offset_ranges(defn.pipeline.checkpoint_dir, batch_id, topic)
        task = partial(read_task, write_partition, now, conf, topic)
        results = [json.loads(r) for r in spark.sparkContext.parallelize(
            ranges, len(ranges)).mapPartitions(task).collect()]
        job.log.info("%s", job._summary(batch_id, results, time.monotonic() - began))
        if on_batch is not None:
            on_batch(batch_id, results)

    return write_batch


def main() -> None:
    product_start = job._start_query

    def start_query(spark: Any, defn: Any, settings: Any, found: Any, on_batch: Any) -> Any:
        job._batch_writer = lambda s, cb: librdkafka_writer(spark, defn, s, cb)  # type: ignore[assignment]
        return product_start(spark, defn, settings, found, on_batch)

    job._start_query = start_query  # type: ignore[assignment]
    cli.main(sys.argv[1:])


if __name__ == "__main__":
    main()
