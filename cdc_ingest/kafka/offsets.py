"""A consumer group's committed offsets, read stably (KIP-447) and committed."""

from __future__ import annotations

from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from cdc_ingest.kafka.errors import KafkaClientError
from cdc_ingest.kafka.logs import with_logger

NO_OFFSET = -1001


class GroupOffsets:
    """Reads and commits one group's offsets without joining it (no rebalances)."""

    def __init__(self, config: dict[str, Any], group_id: str, timeout_s: float = 30.0):
        self.group_id = group_id
        self._timeout = timeout_s
        self._consumer = Consumer(
            {
                **with_logger(config),
                "group.id": group_id,
                "enable.auto.commit": False,
                # read_committed makes the offset fetch wait for pending transactional
                # commits of this group (require_stable), as KIP-447 needs.
                "isolation.level": "read_committed",
            }
        )

    def committed(self, topic: str, partitions: list[int]) -> dict[int, int]:
        """Committed offset per partition; partitions without one are left out."""
        try:
            got = self._consumer.committed(
                [TopicPartition(topic, p) for p in partitions], timeout=self._timeout
            )
        except KafkaException as exc:
            raise KafkaClientError(
                f"cannot read committed offsets of group {self.group_id}: {exc}"
            ) from exc
        return {tp.partition: tp.offset for tp in got if tp.offset >= 0}

    def partitions(self, topic: str) -> list[int]:
        meta = self._consumer.list_topics(topic, timeout=self._timeout)
        info = meta.topics.get(topic)
        if info is None or info.error is not None:
            return []
        return sorted(info.partitions)

    def group_metadata(self) -> Any:
        return self._consumer.consumer_group_metadata()

    def commit(self, topic: str, partition: int, offset: int) -> None:
        try:
            self._consumer.commit(
                offsets=[TopicPartition(topic, partition, offset)], asynchronous=False
            )
        except KafkaException as exc:
            raise KafkaClientError(
                f"cannot commit offsets of group {self.group_id}: {exc}") from exc

    def close(self) -> None:
        self._consumer.close()


def offset_list(topic: str, partition: int, offset: int) -> list[Any]:
    """The ``offsets`` argument of ``send_offsets_to_transaction``."""
    return [TopicPartition(topic, partition, offset)]
