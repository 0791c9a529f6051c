"""Checks every sink type makes of its options (config/sink.py, config/kafka_sink.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdc_ingest.config.problems import PASS_THROUGH_PREFIX, Found

if TYPE_CHECKING:
    from cdc_ingest.config.sink import KafkaSinkBase

# Settings cdc-ingest owns: a user value would silently break keys, values or fencing.
_MANAGED_PROPERTIES = {
    "key.serializer": "set key.format instead",
    "value.serializer": "set value.format instead",
    "key.deserializer": "set key.format instead",
    "value.deserializer": "set value.format instead",
    "transactional.id": "set sink.transactional-id-prefix instead",
}


def property_problems(sink: KafkaSinkBase) -> Found:
    found: Found = []
    props = sink.properties
    if not props.get("bootstrap.servers", "").strip():
        found.append(((PASS_THROUGH_PREFIX + "bootstrap.servers",), "required option is missing",
                      "add 'properties.bootstrap.servers: host1:9092,host2:9092'"))
    for key, why in _MANAGED_PROPERTIES.items():
        if key in props:
            found.append(((PASS_THROUGH_PREFIX + key,), "is managed by cdc-ingest",
                          f"remove it: {why}"))
    exactly_once = sink.sink_delivery_guarantee.value == "exactly-once"
    if exactly_once and props.get("enable.idempotence", "").lower() == "false":
        found.append(((PASS_THROUGH_PREFIX + "enable.idempotence",),
                      "must not be false with sink.delivery-guarantee: exactly-once",
                      "remove properties.enable.idempotence"))
    if sink.sink_transaction_metadata_topic and not exactly_once:
        found.append((("sink.transaction-metadata.topic",),
                      "needs sink.delivery-guarantee: exactly-once (the END record's counts "
                      "are exact only when every message is written once)",
                      "set sink.delivery-guarantee: exactly-once, or remove "
                      "sink.transaction-metadata.topic"))
    if sink.sink_transaction_metadata_topic and sink.buffer_flush_enabled:
        found.append((("sink.transaction-metadata.topic",),
                      "cannot be used with sink.buffer-flush.*: buffering drops a message a "
                      "later one of the same key overwrites, so a transaction's messages "
                      "would be missing rows that it changed",
                      "remove sink.buffer-flush.max-rows and sink.buffer-flush.interval, or "
                      "sink.transaction-metadata.topic"))
    return found
