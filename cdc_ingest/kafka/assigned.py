"""A read_committed consumer of partitions chosen by the caller (assigned, never subscribed:
no rebalances), whose group's offsets it reads and commits with their metadata strings.

It knows nothing of what it reads: cdc_ingest/transactions/reader.py builds on it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from cdc_ingest.kafka.consumer import Message, message_of, watermarks
from cdc_ingest.kafka.errors import KafkaClientError
from cdc_ingest.kafka.logs import reader_group, with_logger
from cdc_ingest.kafka.offsets import retry_coordinator

T = TypeVar("T")
TP = tuple[str, int]

_IGNORED = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION})


class AssignedConsumer:
    """``group_id`` None: a private group, nothing read from or committed to it."""

    def __init__(self, config: dict[str, Any], group_id: str | None,
                 timeout_s: float = 30.0) -> None:
        self.group_id = group_id
        self._config = config
        self._timeout = timeout_s
        self._ends: Consumer | None = None
        self._consumer = Consumer({
            **with_logger(config),
            "group.id": group_id or reader_group(config, "tx-reader"),
            "enable.auto.commit": False, "enable.auto.offset.store": False,
            "isolation.level": "read_committed", "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
        })

    def partitions(self, topic: str) -> list[int] | None:
        """The topic's partitions; None while it does not exist."""
        try:
            meta = self._consumer.list_topics(topic, timeout=self._timeout)
        except KafkaException as exc:
            raise KafkaClientError(f"cannot read the partitions of {topic}: {exc}") from exc
        info = meta.topics.get(topic)
        if info is None or info.error is not None or not info.partitions:
            return None
        return sorted(info.partitions)

    def committed(self, parts: list[TP]) -> dict[TP, tuple[int, str]]:
        """The group's committed (offset, metadata) per partition; those without are left out."""
        if self.group_id is None or not parts:
            return {}
        wanted = [TopicPartition(t, p) for t, p in parts]
        got = self._retrying(lambda timeout: self._consumer.committed(wanted, timeout=timeout),
                             "read the committed offsets")
        return {(tp.topic, tp.partition): (tp.offset, tp.metadata or "")
                for tp in got if tp.offset >= 0}

    def ends(self, parts: list[TP], stable: bool) -> dict[TP, int]:
        """Each partition's end: ``stable``, the last stable offset (what read_committed can
        read now); else the high watermark (every record written so far, open transactions
        included, is below it)."""
        if not stable and self._ends is None:
            self._ends = Consumer({**with_logger(self._config),
                                   "group.id": reader_group(self._config, "reader"),
                                   "isolation.level": "read_uncommitted"})
        consumer = self._consumer if stable else self._ends
        try:
            return {(t, p): watermarks(consumer, TopicPartition(t, p), self._timeout)[1]
                    for t, p in parts}
        except KafkaException as exc:
            raise KafkaClientError(f"cannot read the end offsets of {parts}: {exc}") from exc

    def assign(self, starts: dict[TP, int | None]) -> None:
        """Add partitions, each read from its offset (None: the beginning)."""
        self._consumer.incremental_assign([
            TopicPartition(t, p, OFFSET_BEGINNING if offset is None else offset)
            for (t, p), offset in starts.items()])

    def pause(self, parts: list[TP]) -> None:
        self._consumer.pause([TopicPartition(t, p) for t, p in parts])

    def resume(self, parts: list[TP]) -> None:
        self._consumer.resume([TopicPartition(t, p) for t, p in parts])

    def poll(self, timeout_s: float, limit: int = 1000) -> tuple[list[Message], set[TP]]:
        """Messages read (in each partition's order) and the partitions found at their end."""
        try:
            # the first as soon as it comes, then what is there already (consume alone waits
            # for ``limit`` messages or the whole timeout)
            first = self._consumer.poll(timeout_s)
            raw = [] if first is None else [first, *self._consumer.consume(limit - 1, 0)]
        except KafkaException as exc:
            raise KafkaClientError(f"reading failed: {exc}") from exc
        out: list[Message] = []
        at_end: set[TP] = set()
        for msg in raw:
            error = msg.error()
            if error is None:
                out.append(message_of(msg))
            elif error.code() == KafkaError._PARTITION_EOF:
                at_end.add((str(msg.topic()), msg.partition() or 0))
            elif error.code() not in _IGNORED:
                raise KafkaClientError(f"reading {msg.topic()} failed: {error}")
        return out, at_end

    def positions(self, parts: list[TP]) -> dict[TP, int]:
        """The next offset the consumer reads in each partition (past commit markers), where
        known."""
        got = self._consumer.position([TopicPartition(t, p) for t, p in parts])
        return {(tp.topic, tp.partition): tp.offset for tp in got if tp.offset >= 0}

    def commit(self, offsets: dict[TP, tuple[int, str]]) -> None:
        """Commit (offset, metadata) per partition, synchronously, in one request."""
        if self.group_id is None:
            raise KafkaClientError("no group id: this reader commits nothing")
        tps = [TopicPartition(t, p, offset, metadata=meta)
               for (t, p), (offset, meta) in offsets.items()]
        self._retrying(lambda _timeout: self._consumer.commit(offsets=tps, asynchronous=False),
                       "commit offsets")

    def close(self) -> None:
        self._consumer.close()
        if self._ends is not None:
            self._ends.close()

    def _retrying(self, call: Callable[[float], T], what: str) -> T:
        return retry_coordinator(call, self._timeout, f"{what} of group {self.group_id}")
