"""The Kafka side of verify: a sink topic's latest value per key, as compaction would keep it."""

from __future__ import annotations

import logging
from typing import Any

from cdc_ingest.kafka import TopicAdmin, read_topic
from cdc_ingest.sink.event_resets import row_image
from cdc_ingest.verify.values import dumps, parse

log = logging.getLogger(__name__)


def canonical_key(raw: bytes | None) -> bytes:
    """A message key in the compact form verify builds MySQL keys in (raw bytes if not JSON)."""
    if raw is None:
        return b"null"
    try:
        return dumps(parse(raw))
    except ValueError:
        return raw


def latest_events(kafka: dict[str, Any], topic: str) -> dict[bytes, bytes] | None:
    """``sink.type: kafka``: key -> the row image of its last change event (``after``, or
    canal's ``data[0]``); a delete event (or a tombstone) removes its key. None when the
    topic does not exist."""
    if TopicAdmin(kafka).partitions(topic) is None:
        return None
    latest: dict[bytes, bytes] = {}
    messages = 0
    for msg in read_topic(kafka, topic):
        messages += 1
        key = canonical_key(msg.key)
        image = row_image(msg.value)
        if image is None:
            latest.pop(key, None)
        else:
            latest[key] = image
    log.info("read %d change events of %s: %d live keys", messages, topic, len(latest))
    return latest


def latest_values(kafka: dict[str, Any], topic: str) -> dict[bytes, bytes] | None:
    """Key -> last value of every committed message from the earliest offset; a tombstone
    removes its key. None when the topic does not exist."""
    if TopicAdmin(kafka).partitions(topic) is None:
        return None
    latest: dict[bytes, bytes] = {}
    messages = 0
    for msg in read_topic(kafka, topic):
        messages += 1
        key = canonical_key(msg.key)
        if msg.value is None:
            latest.pop(key, None)
        else:
            latest[key] = msg.value
    log.info("read %d messages of %s: %d live keys", messages, topic, len(latest))
    return latest
