"""Reading whole topics back (positions, tests, verify), read_committed."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    TopicPartition,
)

from cdc_ingest.kafka.errors import KafkaClientError
from cdc_ingest.kafka.logs import reader_group, with_logger


@dataclass(frozen=True, slots=True)
class Message:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    timestamp_ms: int


def read_topic(
    config: dict[str, Any], topic: str, timeout_s: float = 30.0, settled: bool = False,
    since: dict[int, int] | None = None,
) -> Iterator[Message]:
    """Every committed message of ``topic`` from the beginning (``since``: from these offsets
    of the partitions it names) to its current end.

    The end is each partition's last stable offset when reading starts (what a
    read_committed consumer is told as its high watermark), so the read terminates even
    while producers keep writing. ``settled``: the end is each partition's true high
    watermark instead, and the read waits until every transaction below it is decided,
    so it sees all that was committed before it began, including a transaction whose commit
    returned a moment ago (the broker writes commit markers after the commit returns).
    """
    consumer = _consumer(config, "read_committed")
    # A read_committed consumer's high watermark is the last stable offset; settling needs
    # the true end, which only a read_uncommitted one is told.
    ends_of = _consumer(config, "read_uncommitted") if settled else consumer
    try:
        start = since or {}
        ends = partition_ends(consumer, ends_of, topic, start, timeout_s)
        if not ends:
            return
        consumer.assign([TopicPartition(topic, p, start.get(p, OFFSET_BEGINNING))
                         for p in ends])
        yield from _drain(consumer, topic, ends, timeout_s, settled)
    except KafkaException as exc:
        raise KafkaClientError(f"cannot read topic {topic}: {exc}") from exc
    finally:
        consumer.close()
        if ends_of is not consumer:
            ends_of.close()


def partition_ends(consumer: Any, ends_of: Any, topic: str, start: dict[int, int],
                   timeout_s: float) -> dict[int, int]:
    """The end (``ends_of``'s high watermark) of each partition of ``topic`` that holds
    records at or past ``start`` (its offset, else the beginning); {} without the topic."""
    info = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
    if info is None or info.error is not None:
        return {}
    ends: dict[int, int] = {}
    for p in info.partitions:
        low, high = watermarks(ends_of, TopicPartition(topic, p), timeout_s)
        if high > max(low, start.get(p, 0)):
            ends[p] = high
    return ends


def stable_ends(config: dict[str, Any], topic: str, timeout_s: float = 30.0
                ) -> dict[int, int]:
    """Each partition's last stable offset: every transaction below it is decided."""
    consumer = _consumer(config, "read_committed")
    try:
        meta = consumer.list_topics(topic, timeout=timeout_s)
        info = meta.topics.get(topic)
        if info is None or info.error is not None:
            return {}
        return {p: watermarks(consumer, TopicPartition(topic, p), timeout_s)[1]
                for p in info.partitions}
    except KafkaException as exc:
        raise KafkaClientError(f"reading the ends of {topic} failed: {exc}") from exc
    finally:
        consumer.close()


def end_offsets(config: dict[str, Any], topic: str, partitions: list[int],
                timeout_s: float = 30.0) -> dict[int, int]:
    """Each partition's true end (its high watermark, open transactions included): every
    record written so far is below it."""
    consumer = _consumer(config, "read_uncommitted")
    try:
        return {p: watermarks(consumer, TopicPartition(topic, p), timeout_s)[1]
                for p in partitions}
    except KafkaException as exc:
        raise KafkaClientError(f"cannot read the end offsets of {topic}: {exc}") from exc
    finally:
        consumer.close()


def follow_partition(config: dict[str, Any], topic: str, partition: int,
                     start: int) -> Iterator[Message | None]:
    """The committed messages of one partition from ``start`` on, as they come; None while
    none comes for a second (the caller decides how long to wait, and stops reading)."""
    consumer = _consumer(config, "read_committed")
    try:
        consumer.assign([TopicPartition(topic, partition, start)])
        while True:
            msg = consumer.poll(1.0)
            if msg is None:
                yield None
                continue
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaClientError(f"reading {topic} partition {partition} failed: {error}")
            yield message_of(msg)
    finally:
        consumer.close()


def _consumer(config: dict[str, Any], isolation: str, reset: str = "earliest",
              fetch_wait_ms: int = 10) -> Consumer:
    return Consumer(
        {
            **with_logger(config),
            "group.id": reader_group(config, "reader"),
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "auto.offset.reset": reset,
            "enable.partition.eof": True,
            # A read ends at a partition's end, which it learns from a fetch that finds
            # nothing more; the broker holds such a fetch this long (librdkafka's default
            # 500 ms: half a second per read of a topic that ends in a commit marker).
            "fetch.wait.max.ms": fetch_wait_ms,
        }
    )


# A partition whose leader is moving or not yet elected (a topic created a moment ago, a
# broker restarting) answers these for a while; asking again is the fix.
_TRANSIENT = frozenset({
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    # the client's metadata does not have a topic created a moment ago yet (capture's first
    # start: "Failed to get watermark offsets: Local: Unknown partition", exit 5)
    KafkaError._UNKNOWN_PARTITION,
    KafkaError._UNKNOWN_TOPIC,
    KafkaError._TIMED_OUT,
    KafkaError._TRANSPORT,
})


def watermarks(consumer: Any, partition: TopicPartition, timeout_s: float) -> tuple[int, int]:
    """The partition's (low, high) offsets, asked again while the broker answers with a
    transient error, until ``timeout_s`` has passed (then the last error is raised)."""
    deadline = time.monotonic() + timeout_s
    delay = 0.1
    while True:
        try:
            return consumer.get_watermark_offsets(
                partition, timeout=max(0.5, deadline - time.monotonic())
            )
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            code = error.code() if isinstance(error, KafkaError) else None
            if code not in _TRANSIENT or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 1.0)


def _drain(consumer: Consumer, topic: str, ends: dict[int, int], timeout_s: float,
           settled: bool) -> Iterator[Message]:
    pending = dict(ends)
    idle = 0.0
    while pending:
        msg = consumer.poll(0.5)
        if msg is None:
            if settled:  # moving past commit markers alone may bring no new EOF event
                for part in [p for p in pending if _position(consumer, topic, p) >= pending[p]]:
                    pending.pop(part)
            idle += 0.5
            if idle > timeout_s:
                raise KafkaClientError(f"timed out reading {sorted(pending)} partitions")
            continue
        idle = 0.0
        error = msg.error()
        part = msg.partition() or 0
        if error is not None:
            if error.code() == KafkaError._PARTITION_EOF:
                if not settled or _position(consumer, topic, part) >= pending.get(part, 0):
                    pending.pop(part, None)
                continue
            raise KafkaClientError(f"reading failed: {error}")
        offset = msg.offset() or 0
        if part in pending and offset >= pending[part] - 1:
            pending.pop(part, None)
        yield message_of(msg)


def message_of(msg: Any) -> Message:
    return Message(
        topic=str(msg.topic()),
        partition=msg.partition() or 0,
        offset=msg.offset() or 0,
        key=msg.key(),
        value=msg.value(),
        headers=_headers(msg.headers()),
        timestamp_ms=msg.timestamp()[1],
    )


def _position(consumer: Consumer, topic: str, partition: int) -> int:
    """The next offset the consumer reads: past every decided record, at most the LSO."""
    return int(consumer.position([TopicPartition(topic, partition)])[0].offset)


def _headers(raw: Any) -> tuple[tuple[str, bytes], ...]:
    if not raw:
        return ()
    pairs = raw.items() if isinstance(raw, dict) else raw
    return tuple((str(k), v) for k, v in pairs if isinstance(v, bytes))


def first_offset(config: dict[str, Any], topic: str, partition: int,
                 timeout_s: float = 30.0) -> int:
    """The partition's low watermark: the oldest offset retention has kept."""
    consumer = _consumer(config, "read_committed")
    try:
        return watermarks(consumer, TopicPartition(topic, partition), timeout_s)[0]
    except KafkaException as exc:
        raise KafkaClientError(f"cannot read the first offset of {topic}: {exc}") from exc
    finally:
        consumer.close()


class OffsetGone(KafkaClientError):
    """The offset to read from is no longer in the partition (deleted by retention)."""


class PartitionReader:
    """One partition read read_committed from a given offset, in steps: each
    :meth:`available` returns what is committed and not yet returned (stopping at the last
    stable offset, never waiting for an open transaction). A start offset retention has
    deleted raises :class:`OffsetGone`, never a silent jump."""

    def __init__(self, config: dict[str, Any], topic: str, partition: int, start: int) -> None:
        # long-lived: an empty fetch waits 100 ms, not 10 (an idle broker's CPU: decision 0014)
        self._consumer = _consumer(config, "read_committed", reset="error", fetch_wait_ms=100)
        self._consumer.assign([TopicPartition(topic, partition, start)])
        self._topic, self._partition = topic, partition
        self._next = start  # past every message returned
        low = first_offset(config, topic, partition)
        if low > start:
            raise OffsetGone(f"{topic} partition {partition} starts at offset {low}, after "
                             f"{start}, the next one to read")

    def available(self, timeout_s: float = 30.0) -> list[Message]:
        out: list[Message] = []
        part = TopicPartition(self._topic, self._partition)
        end = watermarks(self._consumer, part, timeout_s)[1]  # read_committed: the LSO
        deadline = time.monotonic() + timeout_s
        while max(self._next, _position(self._consumer, self._topic, self._partition)) < end:
            if time.monotonic() > deadline:
                raise KafkaClientError(f"timed out reading {self._topic} partition "
                                       f"{self._partition} up to offset {end}")
            msg = self._consumer.poll(0.1)
            if msg is None:
                continue
            error = msg.error()
            if error is None:
                out.append(message_of(msg))
                self._next = out[-1].offset + 1
            elif error.code() == KafkaError._PARTITION_EOF:
                break
            elif error.code() == KafkaError.OFFSET_OUT_OF_RANGE:
                raise OffsetGone(f"reading {self._topic} partition {self._partition}: {error}")
            else:
                raise KafkaClientError(f"reading {self._topic} failed: {error}")
        return out

    def close(self) -> None:
        self._consumer.close()
