"""``sink:`` - the Kafka cluster and how rows are written: ``type: upsert-kafka`` (VVR's
upsert-kafka: key = primary key, value = the row, tombstone on delete) or ``type: kafka``
(Flink CDC's Kafka pipeline sink: one Debezium or Canal JSON change event per row change,
config/kafka_sink.py)."""

from __future__ import annotations

from datetime import timedelta
from enum import StrEnum
from typing import Annotated, Any, ClassVar

from pydantic import Field, PlainSerializer, PlainValidator, model_validator

from cdc_ingest.config import avro_confluent
from cdc_ingest.config.avro_confluent import AvroConfluentOptions
from cdc_ingest.config.durations import Duration
from cdc_ingest.config.problems import PASS_THROUGH_PREFIX, Found, problem, raise_problems
from cdc_ingest.config.sink_problems import property_problems
from cdc_ingest.config.types import (
    ConfigModel,
    KafkaTopic,
    MaskedDict,
    SafeId,
    choice,
    is_secret_property,
)

# Formats the upsert-kafka references name; we write json and avro-confluent
# (docs/output-contract.md).
_OTHER_FORMATS = frozenset(
    {"csv", "avro", "debezium-json", "canal-json", "maxwell-json", "raw",
     "protobuf", "debezium-avro-confluent", "ogg-json"}
)
_ZERO = timedelta(0)


class DeliveryGuarantee(StrEnum):
    NONE = "none"
    AT_LEAST_ONCE = "at-least-once"
    EXACTLY_ONCE = "exactly-once"


class KeyJsonEncoding(StrEnum):
    UTF8 = "utf-8"
    JACKSON = "jackson"


class ValueFieldsInclude(StrEnum):
    ALL = "ALL"
    EXCEPT_KEY = "EXCEPT_KEY"


UPSERT_FORMATS = ("json", "avro-confluent")


def _format(value: Any) -> str:
    text = str(value).strip().lower()
    if text in UPSERT_FORMATS:
        return text
    fix = "upsert-kafka writes json or avro-confluent: set one of them or remove the option"
    if text in ("debezium-json", "canal-json"):
        raise problem("is a change-event format, not an upsert one",
                      "use sink.type: kafka (Flink CDC's sink) for debezium-json or canal-json")
    if text in _OTHER_FORMATS:
        raise problem("names a format cdc-ingest does not write", fix)
    raise problem("is not a known format", fix)


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


KafkaFormat = Annotated[str, PlainValidator(_format)]
Delivery = Annotated[DeliveryGuarantee, choice(DeliveryGuarantee)]
FieldsInclude = Annotated[ValueFieldsInclude, choice(ValueFieldsInclude)]
KeyEncoding = Annotated[KeyJsonEncoding, choice(KeyJsonEncoding)]


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
        "(which plans each batch's offsets). Where their names differ, give both "
        "(`ssl.ca.location` and `ssl.truststore.location`, `sasl.username`/`sasl.password` and "
        "`sasl.jaas.config`); each client skips the other's")
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
        description="prefix of every Kafka transactional id (capture: `<prefix>.capture`, "
        "sink: `<prefix>.sink.<partition>`)")
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


class UpsertKafkaSinkDef(KafkaSinkBase):
    """Upsert topics: key = primary key, value = the row, tombstone on delete."""

    type: SinkType = Field(description="`upsert-kafka` (this block) or `kafka` (Flink CDC's "
                           "change-event sink, next block)", examples=["upsert-kafka"])
    sink_buffer_flush_max_rows: int = Field(
        0, alias="sink.buffer-flush.max-rows", ge=0,
        description="with sink.buffer-flush.interval: keep only the last record per key "
        "within a flush of up to this many rows; 0 disables (both or neither)")
    sink_buffer_flush_interval: Duration = Field(
        timedelta(0), alias="sink.buffer-flush.interval",
        description="with sink.buffer-flush.max-rows: flush the buffer at least this often; "
        "0 disables (both or neither)")
    value_fields_include: FieldsInclude = Field(
        ValueFieldsInclude.ALL, alias="value.fields-include",
        description="`ALL` (the value holds every column) or `EXCEPT_KEY` (the key columns "
        "only in the key)")
    key_format: KafkaFormat = Field("json", alias="key.format",
                                    description="format of the record keys: `json` or "
                                    "`avro-confluent` (with key.avro-confluent.url)")
    key_json_encoding: KeyEncoding = Field(
        KeyJsonEncoding.UTF8, alias="key.json.encoding",
        description="`utf-8`: keys as capture writes them; `jackson`: byte for byte as "
        "Flink's json format writes them (characters beyond the BMP as `\\uD83D\\uDD11`, "
        "control characters as `\\u001F`), for a topic a Flink job also writes; changing it "
        "on a running pipeline changes such keys (output-contract.md, \"Keys\")")
    value_format: KafkaFormat = Field("json", alias="value.format",
                                      description="format of the record values: `json` or "
                                      "`avro-confluent` (with value.avro-confluent.url)")
    key_avro_confluent: AvroConfluentOptions | None = Field(
        None, alias="key.avro-confluent",
        description="the key's Schema Registry options, written `key.avro-confluent.<option>` "
        "(`avro-confluent.<option>` sets key and value): url, subject, basic-auth.*, "
        "bearer-auth.*, ssl.*, properties.*")
    value_avro_confluent: AvroConfluentOptions | None = Field(
        None, alias="value.avro-confluent",
        description="the value's, written `value.avro-confluent.<option>`")

    @model_validator(mode="before")
    @classmethod
    def _gather_avro_confluent(cls, data: Any) -> Any:
        return avro_confluent.gather(data) if isinstance(data, dict) else data

    @property
    def except_key(self) -> bool:
        return self.value_fields_include is ValueFieldsInclude.EXCEPT_KEY

    @property
    def jackson_keys(self) -> bool:
        return self.key_json_encoding is KeyJsonEncoding.JACKSON

    @property
    def buffer_flush_enabled(self) -> bool:
        return self.sink_buffer_flush_max_rows > 0 and self.sink_buffer_flush_interval > _ZERO

    @property
    def buffer_flush_max_rows(self) -> int:
        return self.sink_buffer_flush_max_rows

    @property
    def buffer_flush_seconds(self) -> float:
        return self.sink_buffer_flush_interval.total_seconds()

    @model_validator(mode="after")
    def _consistent(self) -> UpsertKafkaSinkDef:
        raise_problems("sink", property_problems(self) + _buffer_problems(self)
                       + avro_confluent.problems("key", self.key_format,
                                                 self.key_avro_confluent)
                       + avro_confluent.problems("value", self.value_format,
                                                 self.value_avro_confluent)
                       + avro_confluent.jackson_problems(self.avro_key, self.jackson_keys))
        return self

    @property
    def typed(self) -> bool:  # messages need each row's column types (Avro schemas)
        return self.avro_key or self.avro_value

    @property
    def avro_key(self) -> bool:
        return self.key_format == avro_confluent.FORMAT

    @property
    def avro_value(self) -> bool:
        return self.value_format == avro_confluent.FORMAT


def _buffer_problems(sink: UpsertKafkaSinkDef) -> Found:
    # Flink's rule: buffering needs both limits, and one alone is a mistake worth naming.
    if (sink.sink_buffer_flush_max_rows > 0) == (sink.sink_buffer_flush_interval > _ZERO):
        return []
    return [(("sink.buffer-flush.max-rows",),
             "and sink.buffer-flush.interval must both be above zero to buffer",
             "set both above zero to enable buffering, or both to 0")]
