"""A consumer group's committed offsets, read stably (KIP-447) and committed."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from cdc_ingest.kafka.errors import KafkaClientError
from cdc_ingest.kafka.logs import with_logger

T = TypeVar("T")

# The group's coordinator is not there yet: on a new cluster the first request of any group
# creates __consumer_offsets, and until its partitions are loaded the broker answers these
# (librdkafka passes NOT_COORDINATOR from an offset fetch straight up, at once).
_COORDINATOR_PENDING = frozenset({
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
})  # fmt: skip


class OffsetsPending(KafkaClientError):
    """A read of the group's committed offsets timed out: most often a transaction of the
    group is still open, whose offsets the read waits for (read_committed, KIP-447)."""


_PENDING_HINT = (
    ". A read waits for the group's open transactions: one a sink left open when it was "
    "killed holds it until Kafka aborts it (transaction.timeout.ms, 60 s by default); "
    "starting that sink again aborts it at once. Else Kafka did not answer in time")


class GroupOffsets:
    """Reads and commits one group's offsets without joining it (no rebalances)."""

    def __init__(self, config: dict[str, Any], group_id: str, timeout_s: float = 30.0,
                 stable: bool = True):
        self.group_id = group_id
        self._timeout = timeout_s
        self._consumer = Consumer(
            {
                **with_logger(config),
                "group.id": group_id,
                "enable.auto.commit": False,
                # read_committed makes the offset fetch wait for pending transactional
                # commits of this group (require_stable), as KIP-447 needs; ``stable=False``
                # reads what is committed now, without waiting.
                "isolation.level": "read_committed" if stable else "read_uncommitted",
            }
        )

    def _retrying(self, call: Callable[[float], T], what: str, read: bool = False) -> T:
        return retry_coordinator(call, self._timeout, f"{what} of group {self.group_id}",
                                 pending_hint=_PENDING_HINT if read else None)

    def committed(self, topic: str, partitions: list[int]) -> dict[int, int]:
        """Committed offset per partition; partitions without one are left out."""
        wanted = [TopicPartition(topic, p) for p in partitions]
        got = self._retrying(lambda timeout: self._consumer.committed(wanted, timeout=timeout),
                             "read committed offsets", read=True)
        return {tp.partition: tp.offset for tp in got if tp.offset >= 0}

    def partitions(self, topic: str) -> list[int]:
        try:
            meta = self._consumer.list_topics(topic, timeout=self._timeout)
        except KafkaException as exc:
            raise KafkaClientError(f"cannot read the partitions of {topic}: {exc}") from exc
        info = meta.topics.get(topic)
        if info is None or info.error is not None:
            return []
        return sorted(info.partitions)

    def group_metadata(self) -> Any:
        return self._consumer.consumer_group_metadata()

    def commit(self, topic: str, partition: int, offset: int) -> None:
        # committing the same offset again is harmless
        self._retrying(lambda _timeout: self._consumer.commit(
            offsets=[TopicPartition(topic, partition, offset)], asynchronous=False),
            "commit offsets")

    def commit_all(self, topic: str, offsets: dict[int, int]) -> None:
        """Commit an offset of each partition named, in one request."""
        wanted = [TopicPartition(topic, p, offset) for p, offset in sorted(offsets.items())]
        self._retrying(lambda _timeout: self._consumer.commit(offsets=wanted,
                                                              asynchronous=False),
                       "commit offsets")

    def close(self) -> None:
        self._consumer.close()


def offset_list(topic: str, partition: int, offset: int) -> list[Any]:
    """The ``offsets`` argument of ``send_offsets_to_transaction``."""
    return [TopicPartition(topic, partition, offset)]


def retry_coordinator(call: Callable[[float], T], timeout_s: float, what: str,
                      pending_hint: str | None = None) -> T:
    """``call(timeout)``, again while the group's coordinator is not ready, until
    ``timeout_s``; any other failure at once, as :class:`KafkaClientError` ("cannot
    <what>"). ``pending_hint``: a read that timed out raises :class:`OffsetsPending` with it
    (a transaction's pending offsets hold the read)."""
    deadline = time.monotonic() + timeout_s
    pause = 0.05
    while True:
        try:
            return call(max(0.1, deadline - time.monotonic()))
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            code = error.code() if isinstance(error, KafkaError) else None
            if code not in _COORDINATOR_PENDING or time.monotonic() + pause >= deadline:
                message = f"cannot {what}: {exc}"
                if pending_hint is not None and code == KafkaError._TIMED_OUT:
                    raise OffsetsPending(message + pending_hint) from exc
                raise KafkaClientError(message) from exc
        time.sleep(pause)
        pause = min(pause * 2, 1.0)
