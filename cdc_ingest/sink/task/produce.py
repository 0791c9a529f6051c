"""Sending one batch of sink messages, and the dead-letter topic for those that cannot fit.

Kafka refuses a message larger than its topic's ``max.message.bytes``, and one refused message
fails its whole transaction: the sink stops there and names the row
(:class:`cdc_ingest.kafka.limits.MessageTooLarge`). With ``sink.dead-letter.topic`` set, a
message larger than its topic's limit (before compression) is sent whole to the dead-letter
topic instead, with headers naming where it was going and why, and its key gets a tombstone
in the sink topic so no older value of that row stays there; both in the batch's transaction.
``verify`` then reports the row as missing, and the dead-letter topic has it.
"""

from __future__ import annotations

import logging

from cdc_ingest.formats.event_routing import Headers
from cdc_ingest.formats.upsert_json import SinkMessage
from cdc_ingest.kafka.limits import MessageTooLarge
from cdc_ingest.sink.task.topics import SinkTopics
from cdc_ingest.sink.transaction import Send

log = logging.getLogger(__name__)

# A record batch's own bytes around one message (header 61, record framing, margin).
OVERHEAD = 512


def produce(send: Send, topics: SinkTopics, dead_letter: str | None,
            messages: list[SinkMessage], per_table: dict[str, int], partition: int = -1) -> int:
    """Send ``messages`` (their topics exist) to ``partition`` (-1: by key); returns their
    bytes, counts them per table."""
    for topic in dict.fromkeys(msg[0] for msg in messages):
        topics.ensure(topic)
    size = 0
    for topic, key, value, headers, ts, table in messages:
        length = len(key) + (len(value) if value else 0)
        size += length
        per_table[table] = per_table.get(table, 0) + 1
        if dead_letter is not None and value is not None:
            limit = topics.limit(topic)
            length += sum(len(n) + len(v or b"") for n, v in headers or ())
            if length + OVERHEAD > limit:
                topics.ensure_dead_letter(dead_letter)
                _divert(send, dead_letter, topic, key, value, headers, ts, table, limit)
                continue
        send(topic, value, key, ts, headers, partition)
    return size


def _divert(send: Send, dead_letter: str, topic: str, key: bytes, value: bytes,
            headers: Headers | None, ts: int, table: str, limit: int) -> None:
    reason = (f"{len(key) + len(value)} bytes, above the max.message.bytes of {topic} "
              f"({limit})")
    send(dead_letter, value, key, ts, [
        *(headers or ()), ("dead-letter.topic", topic.encode()),
        ("dead-letter.table", table.encode()), ("dead-letter.reason", reason.encode())], -1)
    send(topic, None, key, ts, headers, -1)  # no older value of the row stays live
    log.error("a row of %s (key %s) went to dead-letter topic %s instead of %s: %s; its key "
              "is tombstoned there. Fix: raise the topic's max.message.bytes, then re-send "
              "the row (update it in MySQL)", table, key[:200].decode(errors="replace"),
              dead_letter, topic, reason)


def raise_named(error: BaseException, messages: list[SinkMessage]) -> None:
    """Raise ``error`` again naming its table, when it is a refused message that could not
    (no headers): the batch's message with its topic and key says which table it is."""
    if isinstance(error, MessageTooLarge) and error.table is None:
        for topic, key, _value, _headers, _ts, table in messages:
            if topic == error.topic and key == error.key:
                raise MessageTooLarge(topic, key, error.value, error.reason,
                                      table=table) from error
