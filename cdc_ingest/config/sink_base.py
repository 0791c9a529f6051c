"""What both sink types share (``type: upsert-kafka``, config/sink.py, and ``type: kafka``,
config/kafka_sink.py): the Kafka cluster's ``properties.*``, the delivery guarantee, the topics
cdc-ingest creates, transactional ids and transaction metadata; and the checks of them both
types make."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, ClassVar

from pydantic import Field, PlainSerializer, PlainValidator, model_validator

from cdc_ingest.config.problems import PASS_THROUGH_PREFIX, Found, problem
from cdc_ingest.config.types import (
    ConfigModel,
    KafkaTopic,
    MaskedDict,
    SafeId,
    choice,
    is_secret_property,
)
from cdc_ingest.kafka.config import java_client_config
from cdc_ingest.kafka.java_settings import librdkafka_settings


class DeliveryGuarantee(StrEnum):
    NONE = "none"
    AT_LEAST_ONCE = "at-least-once"
    EXACTLY_ONCE = "exactly-once"


def _property_value(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"  # librdkafka wants lower case, YAML gives True
    if isinstance(value, str | int | float):
        return str(value)
    raise problem(f"'{PASS_THROUGH_PREFIX}{key}' must be a single value",
                  "write it on one line; lists are comma-separated text in Kafka settings")


def _properties(value: Any) -> MaskedDict:
    if not isinstance(value, dict):
        raise problem("must be a mapping of Kafka settings", "write properties.<setting>: value")
    return MaskedDict({str(k): _property_value(str(k), v) for k, v in value.items()})


Delivery = Annotated[DeliveryGuarantee, choice(DeliveryGuarantee)]


def _masked(props: MaskedDict) -> dict[str, str]:
    # A JSON dump is for people (status, debugging): secrets masked, like SecretStr's.
    return {k: "**********" if is_secret_property(k) else v for k, v in props.items()}


Properties = Annotated[
    MaskedDict, PlainValidator(_properties), PlainSerializer(_masked, when_used="json")
]


def _sink_type(value: Any) -> str:
    text = str(value).strip().lower()
    if text in SINK_TYPES:
        return text
    raise problem("is not a supported sink type",
                  "use 'upsert-kafka' (key = primary key, value = the row, tombstone on "
                  "delete) or 'kafka' (Flink CDC's sink: Debezium or Canal JSON change events)")


SINK_TYPES = ("upsert-kafka", "kafka")
SinkType = Annotated[str, PlainValidator(_sink_type)]


class KafkaSinkBase(ConfigModel):
    """What both sink types share. Every ``properties.<setting>`` is handed to the Kafka
    client unchanged."""

    accepts_properties: ClassVar[bool] = True  # for the "supported options" list in error messages
    # upsert topics (compacted; verify reads the latest value per key) or change events
    upsert: ClassVar[bool] = True

    name: str | None = Field(None, description="a display name for logs")
    properties: Properties = Field(
        MaskedDict(), description="passed to the Kafka clients with the prefix removed; "
        "`properties.bootstrap.servers` is required; TLS/SASL settings go here; secret values "
        "are masked in repr. Two clients read them: librdkafka (capture, the sink's tasks, "
        "which read and write the records) and the Java client in Spark's Kafka source "
        "(which plans each batch's offsets). Write them as for the Java client (Flink): "
        "`sasl.jaas.config` (PLAIN, SCRAM, OAUTHBEARER client credentials) and "
        "`ssl.truststore.*` / `ssl.keystore.*` (JKS, PKCS12 or PEM) are carried over to "
        "librdkafka, in memory; a librdkafka spelling given too wins for librdkafka, and "
        "`validate` refuses what cannot be carried over")
    sink_delivery_guarantee: Delivery = Field(
        DeliveryGuarantee.AT_LEAST_ONCE, alias="sink.delivery-guarantee",
        description="`none` (acks=1, errors logged), `at-least-once` (idempotent producer, "
        "flush, then commit offsets), `exactly-once` (per-partition transactions carrying the "
        "consumed offsets); capture is always transactional")
    sink_add_table_id_to_header_enabled: bool = Field(
        False, alias="sink.add-tableId-to-header-enabled",
        description="add `namespace`/`schemaName`/`tableName` headers to each record")
    sink_dead_letter_topic: str | None = Field(
        None, alias="sink.dead-letter.topic",
        description="opt-in: a row whose message is larger than its sink topic's "
        "max.message.bytes goes here whole (headers dead-letter.topic, .table, .reason) and "
        "its key is tombstoned in the sink topic; unset, the sink stops at such a row, "
        "naming it")
    # Our own options: used when cdc-ingest creates a missing sink topic; unset means the
    # broker's defaults (num.partitions, default.replication.factor).
    topic_partitions: int | None = Field(
        None, alias="topic.partitions", ge=1,
        description="partitions of the sink topics cdc-ingest creates")
    topic_replication_factor: int | None = Field(
        None, alias="topic.replication-factor", ge=1,
        description="replication factor of the topics cdc-ingest creates")
    sink_transactional_id_prefix: SafeId | None = Field(
        None, alias="sink.transactional-id-prefix",
        description="prefix of every Kafka transactional id, group and state topic of the "
        "pipeline: transactional ids `<prefix>.capture`, `<prefix>.sink.<partition>`, "
        "`<prefix>.tx-metadata`, `<prefix>.capture.validate` (validate's probe); groups "
        "`<prefix>.sink` (what the sink wrote), `<prefix>.tools.*` (readers), "
        "`<prefix>.spark*` (Spark's Kafka source); topics `<prefix>.signals`, "
        "`<prefix>.verify`, `<prefix>.tx-parts`, `<prefix>.tx-state` (`cdc-ingest acls` "
        "prints the ACLs for all of them)")
    sink_transaction_metadata_topic: KafkaTopic | None = Field(
        None, alias="sink.transaction-metadata.topic",
        description="opt-in: a BEGIN and an END record per MySQL transaction, as Debezium "
        "writes them, go to this topic, and every message of a transaction gets "
        "`transaction.id`, `.total_order` and `.data_collection_order` headers "
        "(docs/output-contract.md, \"Transaction metadata\"); needs "
        "sink.delivery-guarantee: exactly-once")

    @model_validator(mode="before")
    @classmethod
    def _gather_properties(cls, data: Any) -> Any:
        """Fold the flat ``properties.*`` keys of the YAML into one mapping."""
        if not isinstance(data, dict):
            return data
        given = data.get("properties", {})
        if not isinstance(given, dict):
            return data  # validation reports that it is not a mapping
        prefix = len(PASS_THROUGH_PREFIX)
        flat = {str(k)[prefix:]: v for k, v in data.items() if str(k).startswith("properties.")}
        rest = {k: v for k, v in data.items() if not str(k).startswith("properties.")}
        return {**rest, "properties": {**given, **flat}}

    @property
    def except_key(self) -> bool:
        """``value.fields-include: EXCEPT_KEY`` (upsert-kafka only)."""
        return False

    @property
    def buffer_flush_enabled(self) -> bool:
        return False

    @property
    def buffer_flush_max_rows(self) -> int:
        return 0

    @property
    def buffer_flush_seconds(self) -> float:
        return 0.0

    @property
    def typed(self) -> bool:
        """Whether the messages need each row's column types (the sink type says)."""
        return False


# Settings cdc-ingest owns: a user value would silently break keys, values or fencing.
_MANAGED_PROPERTIES = {
    "key.serializer": "set key.format instead",
    "value.serializer": "set value.format instead",
    "key.deserializer": "set key.format instead",
    "value.deserializer": "set value.format instead",
    "transactional.id": "set sink.transactional-id-prefix instead",
}


def property_problems(sink: KafkaSinkBase) -> Found:
    """The problems of the options both sink types share; each type's validator adds its own
    to them."""
    found: Found = []
    props = sink.properties
    if not props.get("bootstrap.servers", "").strip():
        found.append(((PASS_THROUGH_PREFIX + "bootstrap.servers",), "required option is missing",
                      "add 'properties.bootstrap.servers: host1:9092,host2:9092'"))
    for key, why in _MANAGED_PROPERTIES.items():
        if key in props:
            found.append(((PASS_THROUGH_PREFIX + key,), "is managed by cdc-ingest",
                          f"remove it: {why}"))
    _, untranslated = librdkafka_settings(props)
    _, for_java = java_client_config(props)
    for item in untranslated + for_java:
        found.append(((PASS_THROUGH_PREFIX + item.name,), item.what, item.fix))
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
