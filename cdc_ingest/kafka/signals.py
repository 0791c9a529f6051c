"""The Kafka side of a pipeline's signal topic (capture/signals.py): one request written
durably, and a cheap look at where the topic ends."""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaException, Producer, TopicPartition

from cdc_ingest.kafka.consumer import _consumer, watermarks
from cdc_ingest.kafka.errors import KafkaClientError
from cdc_ingest.kafka.logs import with_logger


def send_one(config: dict[str, Any], topic: str, key: bytes, value: bytes,
             timeout_s: float = 30.0) -> int:
    """Write one record (idempotent, acks=all) and wait for it; returns its offset."""
    result: dict[str, Any] = {}

    def delivered(err: Any, msg: Any) -> None:
        result["error"], result["offset"] = err, (msg.offset() if err is None else None)

    producer = Producer({**with_logger(config), "enable.idempotence": True, "acks": "all"})
    try:
        producer.produce(topic, value, key, on_delivery=delivered)
        producer.flush(timeout_s)
    except KafkaException as exc:
        raise KafkaClientError(f"cannot write to {topic}: {exc}") from exc
    if "error" not in result:
        raise KafkaClientError(f"writing to {topic} got no answer within {timeout_s:.0f} s")
    if result["error"] is not None:
        raise KafkaClientError(f"cannot write to {topic}: {result['error']}")
    return int(result["offset"])


class TopicEnd:
    """The end offset of partition 0 of a topic, asked on one long-lived consumer."""

    def __init__(self, config: dict[str, Any], topic: str) -> None:
        self._consumer = _consumer(config, "read_committed")
        self._partition = TopicPartition(topic, 0)

    def end(self, timeout_s: float = 10.0) -> int:
        try:
            return watermarks(self._consumer, self._partition, timeout_s)[1]
        except KafkaException as exc:
            raise KafkaClientError(f"cannot read the end of {self._partition.topic}: "
                                   f"{exc}") from exc

    def close(self) -> None:
        self._consumer.close()
