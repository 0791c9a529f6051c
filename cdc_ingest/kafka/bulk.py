"""A whole topic read as plain tuples, in batches: :func:`read_topic` without a Message object
per record, for a reader that only needs each record's key and value (verify's store)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, TopicPartition

from cdc_ingest.kafka.consumer import _consumer, partition_ends
from cdc_ingest.kafka.errors import KafkaClientError

Record = tuple[int, int, bytes | None, bytes | None]  # partition, offset, key, value


def read_records(config: dict[str, Any], topic: str, timeout_s: float = 30.0,
                 batch: int = 5000) -> Iterator[list[Record]]:
    """Every committed record of ``topic`` from the beginning to each partition's last stable
    offset when reading starts (as :func:`~cdc_ingest.kafka.consumer.read_topic`), up to
    ``batch`` at a time."""
    # librdkafka stops fetching for fetch.queue.backoff.ms (1 s by default) whenever its
    # queue is full, which a reader taking thousands of messages a call keeps hitting: 1M
    # messages read in 5.2 s with it, 0.9 s without (the queue's size bounds memory still)
    consumer = _consumer({**config, "fetch.queue.backoff.ms": 0}, "read_committed")
    try:
        pending = partition_ends(consumer, consumer, topic, {}, timeout_s)
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in pending])
        idle = 0.0
        while pending:
            messages = consumer.consume(batch, 0.5)
            if not messages:
                idle += 0.5
                if idle > timeout_s:
                    raise KafkaClientError(f"timed out reading {sorted(pending)} partitions")
                continue
            idle = 0.0
            out: list[Record] = []
            for msg in messages:
                error = msg.error()
                part = msg.partition() or 0
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        pending.pop(part, None)
                        continue
                    raise KafkaClientError(f"reading failed: {error}")
                offset = msg.offset() or 0
                if part in pending and offset >= pending[part] - 1:
                    pending.pop(part, None)
                out.append((part, offset, msg.key(), msg.value()))
            yield out
    except KafkaException as exc:
        raise KafkaClientError(f"cannot read topic {topic}: {exc}") from exc
    finally:
        consumer.close()
