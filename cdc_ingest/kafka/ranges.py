"""One partition's offsets ``[start, end)``, read read_committed to exactly that end.

What a sink task reads (sink/task/range_read.py, decision 0016): ``end`` was at most the partition's
last stable offset when the range was planned, so every record below it is decided; aborted
records and transaction markers are never returned, and nothing at or past ``end`` is. Records
come in batches of plain lists (offsets, keys, values), no object kept per record.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from cdc_ingest.kafka.errors import KafkaClientError
from cdc_ingest.kafka.logs import reader_group, with_logger

READ_BATCH = 10_000  # records per consume() call at most
# consume() waits for READ_BATCH records or this long: short, so the last call of a range
# does not wait for records past its end
POLL_S = 0.05
FETCH_WAIT_MAX_MS = 50  # see reader_config

# offsets (ascending), keys (None for a record without one), values
Batch = tuple[list[int], list[bytes | None], list[bytes]]


class OffsetsGone(KafkaClientError):
    """The range starts below the partition's log start: its first records were deleted
    (retention). ``next_offset``: the first offset not read."""

    def __init__(self, message: str, next_offset: int) -> None:
        super().__init__(message)
        self.next_offset = next_offset


class RangeStalled(KafkaClientError):
    """No record and no end of the range came for the stall time (Kafka unreachable, no
    leader); passes by itself. ``next_offset``: the first offset not read."""

    def __init__(self, message: str, next_offset: int) -> None:
        super().__init__(message)
        self.next_offset = next_offset


def reader_config(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` (client settings) as an assigned reader's: never subscribed, never
    committing, read_committed; an offset below the log start is an error, never a jump."""
    return {
        # a range read_committed often ends at a transaction marker, which no fetch returns:
        # librdkafka's default 500 ms wait for more data was a wait in most batches
        # (decision 0003); the properties' fetch.wait.max.ms wins
        "fetch.wait.max.ms": FETCH_WAIT_MAX_MS,
        **with_logger(config),
        "group.id": reader_group(config, "reader"),  # never joined: assign() only
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        "isolation.level": "read_committed",
        "auto.offset.reset": "error",
    }


def read_range(config: dict[str, Any], topic: str, partition: int, start: int, end: int,
               stall_s: float) -> Iterator[Batch]:  # fmt: skip
    """The committed records of ``topic[partition]`` in ``[start, end)``, in offset order.

    Raises :class:`OffsetsGone` when they begin below the log start, :class:`RangeStalled`
    when nothing came for ``stall_s`` seconds, :class:`KafkaClientError` for other failures.
    """
    if end <= start:
        return
    consumer = Consumer(reader_config(config))
    try:
        consumer.assign([TopicPartition(topic, partition, start)])
        yield from _read(consumer, topic, partition, start, end, stall_s)
    finally:
        consumer.close()


def _read(consumer: Any, topic: str, partition: int, start: int, end: int,
          stall_s: float) -> Iterator[Batch]:  # fmt: skip
    next_offset = start
    deadline = time.monotonic() + stall_s
    while True:
        offsets: list[int] = []
        keys: list[bytes | None] = []
        values: list[bytes] = []
        done = False
        for msg in consumer.consume(READ_BATCH, timeout=POLL_S):
            if (err := msg.error()) is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    # at the last stable offset, which is at or past the range's end once
                    # the broker has caught up with what was planned
                    done = msg.offset() >= end
                    if done:
                        break
                    continue
                _raise(err, topic, partition, next_offset)
                continue  # retriable: librdkafka goes on trying, bounded by the deadline
            offset = msg.offset()
            if offset >= end:
                done = True
                break
            offsets.append(offset)
            keys.append(msg.key())
            values.append(msg.value())
            next_offset = offset + 1
            if next_offset == end:
                done = True
                break
        if offsets:
            deadline = time.monotonic() + stall_s
            yield offsets, keys, values
        if done:
            return
        if time.monotonic() > deadline:
            raise RangeStalled(f"{topic}[{partition}]: nothing of offsets {next_offset}.."
                               f"{end - 1} arrived for {stall_s:.0f} s", next_offset)


def read_live(config: dict[str, Any], topic: str, partition: int, start: int,
              stopped: Callable[[], bool]) -> Iterator[Batch]:  # fmt: skip
    """The committed records of ``topic[partition]`` from ``start`` on (``start`` may be
    ``OFFSET_BEGINNING``, -2) as they come, in offset order, until ``stopped()``; after a read
    that brought less than :data:`READ_BATCH` (caught up with the last stable offset, for
    now), an empty batch, so the caller can commit what it holds. Any prefix of what it
    yields is committed data, so it may stop anywhere. Raises as :func:`read_range` does,
    but never stalls: an idle partition is no failure here."""
    consumer: Any = Consumer(reader_config(config))
    try:
        consumer.assign([TopicPartition(topic, partition, start)])
        next_offset = start
        while not stopped():
            offsets: list[int] = []
            keys: list[bytes | None] = []
            values: list[bytes] = []
            for msg in consumer.consume(READ_BATCH, timeout=POLL_S):
                if (err := msg.error()) is not None:
                    if err.code() != KafkaError._PARTITION_EOF:
                        _raise(err, topic, partition, next_offset)
                    continue
                offsets.append(msg.offset())
                keys.append(msg.key())
                values.append(msg.value())
            if offsets:
                next_offset = offsets[-1] + 1
                yield offsets, keys, values
            if len(offsets) < READ_BATCH:  # caught up, for now
                yield [], [], []
    finally:
        consumer.close()


def _raise(err: Any, topic: str, partition: int, next_offset: int) -> None:
    if err.code() == KafkaError._AUTO_OFFSET_RESET:
        raise OffsetsGone(f"{topic}[{partition}]: offset {next_offset} is no longer in Kafka "
                          f"({err.str()})", next_offset)
    if not err.retriable():
        raise KafkaClientError(f"reading {topic}[{partition}] from offset {next_offset} "
                               f"failed: {err.str()}")


def offset_for_time(config: dict[str, Any], topic: str, partition: int, ts_ms: int,
                    default: int, timeout_s: float = 30.0) -> int:
    """The first offset of ``topic[partition]`` whose timestamp is ``ts_ms`` or later;
    ``default`` when none is."""
    consumer = Consumer(reader_config(config))
    try:
        found = consumer.offsets_for_times([TopicPartition(topic, partition, ts_ms)],
                                           timeout=timeout_s)
    except KafkaException as exc:
        raise KafkaClientError(f"finding offset by time in {topic}[{partition}]: {exc}") from exc
    finally:
        consumer.close()
    offset = found[0].offset if found else -1
    return offset if offset >= 0 else default
