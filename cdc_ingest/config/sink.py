"""``sink:`` - the Kafka cluster and how rows are written: ``type: upsert-kafka`` (VVR's
upsert-kafka: key = primary key, value = the row, tombstone on delete) or ``type: kafka``
(Flink CDC's Kafka pipeline sink: one Debezium or Canal JSON change event per row change,
config/kafka_sink.py). What both share: config/sink_base.py."""

from __future__ import annotations

from datetime import timedelta
from enum import StrEnum
from typing import Annotated, Any

from pydantic import Field, PlainValidator, model_validator

from cdc_ingest.config import avro_confluent
from cdc_ingest.config.avro_confluent import AvroConfluentOptions
from cdc_ingest.config.durations import Duration
from cdc_ingest.config.problems import Found, problem, raise_problems
from cdc_ingest.config.sink_base import KafkaSinkBase, SinkType, property_problems
from cdc_ingest.config.types import choice

# Formats the upsert-kafka references name; we write json and avro-confluent
# (docs/output-contract.md).
_OTHER_FORMATS = frozenset(
    {"csv", "avro", "debezium-json", "canal-json", "maxwell-json", "raw",
     "protobuf", "debezium-avro-confluent", "ogg-json"}
)
_ZERO = timedelta(0)


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


KafkaFormat = Annotated[str, PlainValidator(_format)]
FieldsInclude = Annotated[ValueFieldsInclude, choice(ValueFieldsInclude)]
KeyEncoding = Annotated[KeyJsonEncoding, choice(KeyJsonEncoding)]


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
