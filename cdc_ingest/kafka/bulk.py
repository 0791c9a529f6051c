"""A whole topic read as columns, in batches: :func:`read_topic` without a Message object
kept per record, for a reader that only needs the records' keys and values (verify's fast
path)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, TopicPartition

from cdc_ingest.kafka.consumer import _consumer, partition_ends
from cdc_ingest.kafka.errors import KafkaClientError

# a batch's keys, values, and per partition the offset of its last record in the batch
Columns = tuple[list[bytes | None], list[bytes | None], dict[int, int]]


def read_columns(config: dict[str, Any], topic: str, timeout_s: float = 30.0,
                 batch: int = 5000) -> Iterator[Columns]:
    """Every committed record of ``topic`` from the beginning to each partition's last stable
    offset when reading starts (as :func:`~cdc_ingest.kafka.consumer.read_topic`), up to
    ``batch`` at a time, in the order consumed."""
    # librdkafka stops fetching for fetch.queue.backoff.ms (1 s by default) whenever its
    # queue is full, which a reader taking thousands of messages a call keeps hitting: 1M
    # messages read in 5.2 s with it, 0.9 s without (the queue's size bounds memory still)
    consumer = _consumer({**config, "fetch.queue.backoff.ms": 0}, "read_committed")
    try:
        pending = partition_ends(consumer, consumer, topic, {}, timeout_s)
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in pending])
        partitions = len(pending)
        idle = 0.0
        while pending:
            messages = consumer.consume(batch, 0.5)
            if not messages:
                idle += 0.5
                if idle > timeout_s:
                    raise KafkaClientError(f"timed out reading {sorted(pending)} partitions")
                continue
            idle = 0.0
            records = [m for m in messages if m.error() is None]
            if len(records) != len(messages):
                for msg in messages:
                    error = msg.error()
                    if error is None:
                        continue
                    if error.code() != KafkaError._PARTITION_EOF:
                        raise KafkaClientError(f"reading failed: {error}")
                    pending.pop(msg.partition() or 0, None)
            last: dict[int, int] = {}
            for msg in reversed(records):  # offsets only grow within a partition
                part = msg.partition() or 0
                if part not in last:
                    last[part] = msg.offset() or 0
                    if len(last) == partitions:
                        break
            for part, offset in last.items():
                if part in pending and offset >= pending[part] - 1:
                    pending.pop(part, None)
            yield [m.key() for m in records], [m.value() for m in records], last
    except KafkaException as exc:
        raise KafkaClientError(f"cannot read topic {topic}: {exc}") from exc
    finally:
        consumer.close()
