"""Following topics as their messages are committed (``watch``): from their beginning, or
from now.

"Now" is the moment :func:`follow_topics` is called, not the first read: it reads each
existing partition's last stable offset (what read_committed can read at that moment; a
transaction still open is after it) before it returns, so a caller that says "following"
after the call misses nothing committed after it, however soon. The group's own start
("latest" when it has joined, seconds later) would miss what a fast sink commits meanwhile.
"""

from __future__ import annotations

from collections.abc import Generator
from functools import partial
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from cdc_ingest.kafka.consumer import Message, message_of, watermarks
from cdc_ingest.kafka.errors import KafkaClientError
from cdc_ingest.kafka.logs import reader_group, with_logger

START_TIMEOUT_S = 30.0  # reading the topics and offsets that "now" is

Starts = dict[tuple[str, int], int]


def follow_topics(config: dict[str, Any], topics: list[str],
                  from_beginning: bool = False) -> Generator[Message, None, None]:
    """Committed messages of ``topics`` as they come, from their beginning or from this call
    on, until the caller stops reading. A topic or partition that appears later is read from
    its beginning: all of it is new."""
    return _follow(config, topics, from_beginning, False)  # type: ignore[return-value]


def follow_or_idle(config: dict[str, Any], topics: list[str]
                   ) -> Generator[Message | None, None, None]:
    """:func:`follow_topics` from now, yielding None each second nothing comes (so that the
    caller can give up)."""
    return _follow(config, topics, False, True)


def _follow(config: dict[str, Any], topics: list[str], from_beginning: bool,
            idle: bool) -> Generator[Message | None, None, None]:
    consumer = Consumer({
        **with_logger(config), "group.id": reader_group(config, "watch", unique=True),
        "enable.auto.commit": False, "isolation.level": "read_committed",
        "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 5000,
        # close() waits up to this (45 s by default) to leave the group: the broker's minimum
        "session.timeout.ms": 6000,
    })
    try:
        # where each partition goes on: its start, then past each message handed out (a
        # rebalance, e.g. when a topic appears, assigns every partition again)
        starts = {} if from_beginning else _stable_ends(consumer, topics)
        consumer.subscribe(topics, on_assign=partial(_start_at, starts))
    except KafkaException as exc:
        consumer.close()
        raise KafkaClientError(f"following {', '.join(topics)} failed: {exc}") from exc
    except BaseException:
        consumer.close()
        raise
    return _messages(consumer, topics, starts, idle)


def _stable_ends(consumer: Any, topics: list[str]) -> Starts:
    """Each existing partition's last stable offset (``watermarks`` of a read_committed
    consumer)."""
    listed = consumer.list_topics(timeout=START_TIMEOUT_S).topics
    ends: Starts = {}
    for topic in topics:
        info = listed.get(topic)
        if info is None or info.error is not None:
            continue  # not there yet: read from its beginning once it appears
        for partition in info.partitions:
            ends[(topic, partition)] = watermarks(
                consumer, TopicPartition(topic, partition), START_TIMEOUT_S)[1]
    return ends


def _start_at(starts: Starts, consumer: Any, partitions: list[TopicPartition]) -> None:
    for tp in partitions:
        tp.offset = starts.get((tp.topic, tp.partition), OFFSET_BEGINNING)
    consumer.assign(partitions)


def _messages(consumer: Any, topics: list[str], starts: Starts,
              idle: bool) -> Generator[Message | None, None, None]:
    try:
        while True:
            msg = consumer.poll(1.0)
            if msg is None:
                if idle:
                    yield None
                continue
            error = msg.error()
            if error is not None:
                if error.code() in (KafkaError._PARTITION_EOF,
                                    KafkaError.UNKNOWN_TOPIC_OR_PART):
                    continue
                raise KafkaClientError(f"following {', '.join(topics)} failed: {error}")
            starts[(msg.topic(), msg.partition())] = msg.offset() + 1
            yield message_of(msg)
    finally:
        consumer.close()
