"""The Kafka side of verify: a sink topic's latest value per key, as compaction would keep it."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import Any

import orjson

from cdc_ingest.formats.event_readback import row_image
from cdc_ingest.kafka import TopicAdmin, read_topic
from cdc_ingest.model.schema_topic import fold
from cdc_ingest.registry.avro_reader import AvroReader, AvroReadError
from cdc_ingest.verify.store import DiskValues, Values
from cdc_ingest.verify.values import dumps, parse

log = logging.getLogger(__name__)


_PLAIN = (int, str, bool, type(None))
# A key already in that form: an object of one member, its name and a string value printable
# ASCII without quote or backslash (orjson writes such text as it is), or an integer of at
# most 18 digits (within 64 bits) in canonical spelling. One member: no name can repeat.
_COMPACT = re.compile(rb'\{"[ !#-\[\]-~]*":(?:0|-?[1-9][0-9]{0,17}|"[ !#-\[\]-~]*")\}')
_compact = _COMPACT.fullmatch


def canonical_key(raw: bytes | None) -> bytes:
    """A message key in the compact form verify builds MySQL keys in (raw bytes if not JSON)."""
    if raw is None:
        return b"null"
    if _compact(raw):
        return raw
    try:  # the common key first: an object of integers (64-bit) and strings, parsed by orjson
        found = orjson.loads(raw)  # (where it and the json module disagree, it refuses)
    except orjson.JSONDecodeError:
        found = None
    if type(found) is dict and all(type(v) in _PLAIN for v in found.values()):
        return dumps(found)
    try:
        return dumps(parse(raw))
    except ValueError:
        return raw


def schema_topic_pins(kafka: dict[str, Any], topic: str) -> dict[tuple[str, str], list[str]]:
    """Each table's ``pinned`` columns in the schema topic (docs/changelog-format.md)."""
    return fold(read_topic(kafka, topic)).pins()


def known_tables(kafka: dict[str, Any], topic: str) -> list[tuple[str, str]]:
    """Every table the schema topic has a record of: each table the pipeline ever wrote,
    dropped and renamed ones included."""
    return sorted(fold(read_topic(kafka, topic)).tables)


def columns_ever(kafka: dict[str, Any], topic: str) -> dict[tuple[str, str], frozenset[str]]:
    """Every column each table's messages were ever written with: the columns of all its
    typed layouts in the schema topic (capture writes a layout before its first row)."""
    found: dict[tuple[str, str], set[str]] = {}
    for layout in fold(read_topic(kafka, topic)).layouts.values():
        found.setdefault((str(layout["db"]), str(layout["table"])), set()).update(
            str(c["name"]) for c in layout["columns"])
    return {table: frozenset(names) for table, names in found.items()}


def _as_is(value: bytes | None) -> bytes | None:
    return value


def latest_values(kafka: dict[str, Any], topic: str, events: bool = False,
                  avro: AvroReader | None = None) -> Values | None:
    """Key -> last value of every committed message from the earliest offset, in a store on
    disk (verify/store.py); a tombstone removes its key. ``events`` (``sink.type: kafka``):
    the value is the row image of the key's last change event (``after``, canal's
    ``data[0]``), and a delete event removes it. ``avro``: keys and values in avro-confluent,
    read back into the JSON form. None when the topic does not exist."""
    if TopicAdmin(kafka).partitions(topic) is None:
        return None
    latest = DiskValues()
    try:
        messages = 0
        for partition, offset, key, value in topic_values(kafka, topic, events, avro):
            messages += 1
            latest.put(key, value)
            latest.ends[partition] = offset + 1
    except BaseException:
        latest.close()
        raise
    log.debug("read %d messages of %s: %d live keys", messages, topic, len(latest))
    return latest


def topic_values(kafka: dict[str, Any], topic: str, events: bool = False,
                 avro: AvroReader | None = None, since: dict[int, int] | None = None
                 ) -> Iterator[tuple[int, int, bytes, bytes | None]]:
    """Every committed message of ``topic`` (``since``: from these offsets on) as
    ``(partition, offset, canonical key, value)``, the value as :func:`latest_values` keeps
    it (None: the key is removed)."""
    value_of = row_image if events else _as_is
    for msg in read_topic(kafka, topic, since=since):
        raw_key, raw_value = msg.key, msg.value
        if avro is not None:
            try:
                raw_key, raw_value = avro.key(raw_key), avro.value(raw_value)
            except AvroReadError as exc:
                raise AvroReadError(f"{topic} partition {msg.partition} offset {msg.offset}: "
                                    f"{exc}") from None
        yield msg.partition, msg.offset, canonical_key(raw_key), value_of(raw_value)
