"""``sink: type: kafka`` - Flink CDC's Kafka pipeline sink: one change event per row change.

The options and their defaults are Flink CDC's (``KafkaDataSinkOptions``); what the records
look like is in docs/output-contract.md ("type: kafka") and cdc_ingest/formats/change_events.py.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import Field, PlainValidator, model_validator

from cdc_ingest.config.problems import problem, raise_problems
from cdc_ingest.config.sink_base import KafkaSinkBase, SinkType, property_problems
from cdc_ingest.config.types import FrozenDict, choice
from cdc_ingest.errors import ConfigError
from cdc_ingest.formats.event_routing import EventOptions
from cdc_ingest.routing.selectors import table_id_selector


class ValueFormat(StrEnum):
    DEBEZIUM_JSON = "debezium-json"
    CANAL_JSON = "canal-json"


class KeyFormat(StrEnum):
    JSON = "json"
    CSV = "csv"


class PartitionStrategy(StrEnum):
    ALL_TO_ZERO = "all-to-zero"
    HASH_BY_KEY = "hash-by-key"


def _pairs(value: Any, entry_sep: str, pair_sep: str, example: str) -> FrozenDict[str, str]:
    """``a:b;c:d`` (or ``a:b,c:d``) as a mapping; a YAML mapping is taken as it is."""
    if isinstance(value, dict):
        return FrozenDict({str(k).strip(): str(v).strip() for k, v in value.items()})
    if not isinstance(value, str):
        raise problem("must be text", f"write it as {example}")
    found: dict[str, str] = {}
    for entry in value.split(entry_sep):
        if not entry.strip():
            continue
        name, sep, target = entry.partition(pair_sep)
        if not sep or not name.strip() or not target.strip():
            raise problem(f"has an entry '{entry.strip()}' that is not name{pair_sep}value",
                          f"write it as {example}")
        found[name.strip()] = target.strip()
    return FrozenDict(found)


def _topic_mapping(value: Any) -> FrozenDict[str, str]:
    mapping = _pairs(value, ";", ":", "'db.table1:topic1;db.table2:topic2'")
    for selector in mapping:
        try:
            table_id_selector(selector)
        except ConfigError as exc:
            raise problem(exc.problems[0].message, exc.problems[0].fix) from None
    return mapping


def _headers(value: Any) -> FrozenDict[str, str]:
    # Flink CDC's code splits pairs on ';', its docs on ',': both are taken
    separator = ";" if isinstance(value, str) and ";" in value else ","
    return _pairs(value, separator, ":", "'key1:value1;key2:value2'")


def _timestamp_standard(value: Any) -> str:
    text = str(value).strip().upper()
    if text not in ("SQL", "ISO-8601"):
        raise problem(f"'{value}' is not a timestamp standard",
                      "use 'SQL' (2024-01-31 12:34:56.123) or 'ISO-8601' "
                      "(2024-01-31T12:34:56.123)")
    return text


def _no_dead_letter(value: Any) -> None:
    raise problem("is for upsert-kafka only",
                  "remove it: a change event cannot be replaced by a tombstone, so the sink "
                  "stops at a row too large for its topic, naming it")


NoDeadLetter = Annotated[str | None, PlainValidator(_no_dead_letter)]
TimestampStandard = Annotated[str, PlainValidator(_timestamp_standard)]


def _timestamps(fmt: str) -> Any:
    what = "the json key's" if fmt == "json" else "the value's"
    return Field("SQL", alias=f"{fmt}.timestamp-format.standard",
                 description=f"{what} TIMESTAMP and TIMESTAMP_LTZ columns (DATETIME, "
                 "TIMESTAMP): `SQL` (`2024-01-31 12:34:56.123`, `...123Z`) or `ISO-8601` "
                 "(`2024-01-31T12:34:56.123`, `...123Z`)")


def _nulls(fmt: str) -> Any:
    what = ("the json key's null columns are left out" if fmt == "json" else
            "every null field of the value is left out, at any depth (`before`/`after`/`old` "
            "of none, null columns)")
    return Field(False, alias=f"{fmt}.encode.ignore-null-fields",
                 description=f"`true`: {what}, as Flink's json formats do")


TopicMapping = Annotated[FrozenDict[str, str], PlainValidator(_topic_mapping)]
CustomHeaders = Annotated[FrozenDict[str, str], PlainValidator(_headers)]


class KafkaSinkDef(KafkaSinkBase):
    """Change events (Flink CDC's ``type: kafka``): each row change is one message, an
    insert, an update (before and after) or a delete."""

    upsert = False

    type: SinkType = Field(description="`kafka`", examples=["kafka"])
    value_format: Annotated[ValueFormat, choice(ValueFormat)] = Field(
        ValueFormat.DEBEZIUM_JSON, alias="value.format",
        description="`debezium-json` (`before`, `after`, `op`, `source`) or `canal-json` "
        "(`data`, `old`, `type`, `database`, `table`, `pkNames`, ...)")
    key_format: Annotated[KeyFormat, choice(KeyFormat)] = Field(
        KeyFormat.JSON, alias="key.format",
        description="the message key, the table id then the primary key: `json` "
        "(`{\"TableId\":\"shop.orders\",\"id\":1}`) or `csv` (`shop.orders,1`)")
    topic: str | None = Field(
        None, description="one topic for every table; unset: the table's route, else "
        "`<db>.<table>`")
    partition_strategy: Annotated[PartitionStrategy, choice(PartitionStrategy)] = Field(
        PartitionStrategy.ALL_TO_ZERO, alias="partition.strategy",
        description="`all-to-zero` (every message to partition 0) or `hash-by-key` "
        "(partition by the message key, as Kafka's Java producer picks)")
    sink_table_id_to_topic_mapping: TopicMapping = Field(
        FrozenDict(), alias="sink.tableId-to-topic.mapping",
        description="`<selector>:<topic>;...` (`app_db.orders:orders;app_db.\\.*:rest`): "
        "the first rule whose selector matches a table id (case-insensitive) names its topic; "
        "`topic` wins over it")
    sink_custom_header: CustomHeaders = Field(
        FrozenDict(), alias="sink.custom-header",
        description="`key1:value1;key2:value2` (or with `,` between pairs): headers added to "
        "every message, after the table id headers")
    debezium_json_include_schema_enabled: bool = Field(
        False, alias="debezium-json.include-schema.enabled",
        description="`true`: each debezium-json event is `{\"schema\":...,\"payload\":...}`, "
        "with the Kafka Connect schema of the table's columns as Flink CDC writes it (also "
        "spelled `sink.debezium-json.include-schema.enabled`)")
    # Flink's json format options that change what is written: only the values that match
    # what cdc-ingest writes (the rest of them are listed in config/ignored.py)
    json_timestamp_format_standard: TimestampStandard = _timestamps("json")
    debezium_json_timestamp_format_standard: TimestampStandard = _timestamps("debezium-json")
    canal_json_timestamp_format_standard: TimestampStandard = _timestamps("canal-json")
    json_encode_ignore_null_fields: bool = _nulls("json")
    debezium_json_encode_ignore_null_fields: bool = _nulls("debezium-json")
    canal_json_encode_ignore_null_fields: bool = _nulls("canal-json")

    @model_validator(mode="before")
    @classmethod
    def _old_name(cls, data: Any) -> Any:
        """``sink.debezium-json.include-schema.enabled``, the option's name in some Flink
        CDC 3.4 builds and in older docs."""
        old = "sink.debezium-json.include-schema.enabled"
        if isinstance(data, dict) and old in data:
            data = {("debezium-json.include-schema.enabled" if k == old else k): v
                    for k, v in data.items()}
        return data

    sink_dead_letter_topic: NoDeadLetter = Field(
        None, alias="sink.dead-letter.topic", description="upsert-kafka only")

    @property
    def iso_values(self) -> bool:
        """Whether the value's timestamps are written in ISO-8601."""
        standard = (self.canal_json_timestamp_format_standard
                    if self.value_format is ValueFormat.CANAL_JSON
                    else self.debezium_json_timestamp_format_standard)
        return standard == "ISO-8601"

    @property
    def iso_keys(self) -> bool:
        return self.key_format is KeyFormat.JSON and self.json_timestamp_format_standard == \
            "ISO-8601"

    @property
    def typed(self) -> bool:
        """Whether the events need each row's column types."""
        return self.debezium_json_include_schema_enabled or self.iso_values or self.iso_keys

    def event_options(self) -> EventOptions:
        """What the change events' format needs of this block (picklable)."""
        canal = self.value_format is ValueFormat.CANAL_JSON
        return EventOptions(
            value_format=str(self.value_format.value), key_format=str(self.key_format.value),
            topic=self.topic or None, mapping=tuple(self.sink_table_id_to_topic_mapping.items()),
            all_to_zero=str(self.partition_strategy.value) == "all-to-zero",
            custom_headers=tuple(self.sink_custom_header.items()),
            value_ignore_nulls=(self.canal_json_encode_ignore_null_fields if canal
                                else self.debezium_json_encode_ignore_null_fields),
            key_ignore_nulls=self.json_encode_ignore_null_fields,
            include_schema=self.debezium_json_include_schema_enabled,
            iso_values=self.iso_values, iso_keys=self.iso_keys)

    @model_validator(mode="after")
    def _consistent(self) -> KafkaSinkDef:
        found = property_problems(self)
        if self.value_format is ValueFormat.CANAL_JSON:
            for option, value in (("debezium-json.include-schema.enabled",
                                   self.debezium_json_include_schema_enabled),
                                  ("debezium-json.timestamp-format.standard",
                                   self.debezium_json_timestamp_format_standard != "SQL")):
                if value:
                    found.append(((option,), "applies to value.format debezium-json only",
                                  "remove it, or set value.format: debezium-json"))
        elif self.canal_json_timestamp_format_standard != "SQL":
            found.append((("canal-json.timestamp-format.standard",),
                          "applies to value.format canal-json only",
                          "remove it, or set value.format: canal-json"))
        raise_problems("sink", found)
        return self

