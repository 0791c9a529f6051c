"""What a sink task needs, built once on the driver from the pipeline definition; picklable.

Tasks import this module, not the config models (pydantic): those are the driver's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cdc_ingest.change_events.address import EventOptions, event_options
from cdc_ingest.kafka import client_config
from cdc_ingest.model.names import sink_transactional_id, tx_parts_topic
from cdc_ingest.routing.routes import Router
from cdc_ingest.sink.avro_registry import AvroSettings
from cdc_ingest.transform.rules import RuleSpec

if TYPE_CHECKING:
    from cdc_ingest.config import PipelineDef


@dataclass(frozen=True)
class SinkSettings:
    """Everything a task needs, built once on the driver; picklable."""

    kafka: dict[str, Any] = field(repr=False)
    changelog_topic: str
    group_id: str
    transactional_id_prefix: str
    guarantee: str
    router: Router
    except_key: bool
    with_headers: bool
    buffer_max_rows: int
    buffer_interval_s: float
    topic_partitions: int | None
    topic_replication: int | None
    # rows per sink transaction: each commit (with its offsets) waits for the broker
    # (measured: docs/decisions/0003), so fewer, larger transactions cost less
    max_tx_rows: int = 50_000
    max_tx_seconds: float = 10.0
    # rows of a task's first transaction in the sink's first batch, each next one FIRST_GROWTH
    # times larger up to max_tx_rows: with a backlog, the first changes are visible without
    # waiting for a full-size transaction (sink/chunks.py); None: every one max_tx_rows
    first_tx_rows: int | None = None
    # message.max.bytes of the sink's producers and max.message.bytes of the topics it
    # creates: the changelog topic's (cdc_ingest.kafka.limits)
    max_message_bytes: int = 1 << 20
    dead_letter_topic: str | None = None  # sink.dead-letter.topic (cdc_ingest.sink.produce)
    # sink.type: kafka (Flink CDC's change events, cdc_ingest.sink.events); None: upsert-kafka
    events: EventOptions | None = None
    # transform: rules (cdc_ingest.transform.records), applied before either serde
    transforms: tuple[RuleSpec, ...] = ()
    # key.json.encoding: jackson (upsert keys as Flink's json format spells them)
    jackson_keys: bool = False
    # key/value.format: avro-confluent (cdc_ingest.sink.avro_serde); None: both json
    avro: AvroSettings | None = None
    # sink.transaction-metadata.topic is set: each sink transaction also writes a part record
    # here (sink/tx_parts.py; None: metadata off)
    tx_parts_topic: str | None = None

    def producer_config(self) -> dict[str, Any]:
        return {"message.max.bytes": self.max_message_bytes, **self.kafka}

    def transactional_id(self, partition: int) -> str:
        return sink_transactional_id(self.transactional_id_prefix, partition)


def sink_settings(defn: PipelineDef) -> SinkSettings:
    sink = defn.sink
    return SinkSettings(
        kafka=client_config(sink.properties),
        changelog_topic=defn.pipeline.changelog_topic,
        group_id=defn.sink_group_id,
        transactional_id_prefix=defn.transactional_id_prefix,
        guarantee=str(sink.sink_delivery_guarantee.value),
        router=defn.router(),
        except_key=sink.except_key,
        with_headers=sink.sink_add_table_id_to_header_enabled,
        buffer_max_rows=sink.buffer_flush_max_rows,
        buffer_interval_s=sink.buffer_flush_seconds,
        topic_partitions=sink.topic_partitions,
        topic_replication=sink.topic_replication_factor,
        dead_letter_topic=sink.sink_dead_letter_topic,
        events=event_options(defn),
        transforms=tuple(rule.spec(defn.source.metadata_list) for rule in defn.transforms),
        jackson_keys=getattr(sink, "jackson_keys", False),
        avro=_avro(defn),
        tx_parts_topic=(tx_parts_topic(defn.transactional_id_prefix)
                        if getattr(sink, "sink_transaction_metadata_topic", None) else None),
    )


def _avro(defn: PipelineDef) -> AvroSettings | None:
    sink = defn.sink
    key = getattr(sink, "key_avro_confluent", None) if getattr(sink, "avro_key", False) \
        else None
    value = getattr(sink, "value_avro_confluent", None) \
        if getattr(sink, "avro_value", False) else None
    if key is None and value is None:
        return None
    return AvroSettings(
        kafka=client_config(sink.properties), schema_topic=defn.pipeline.schema_topic,
        key=key.registry_config() if key is not None else None,
        value=value.registry_config() if value is not None else None,
        key_subject=key.subject if key is not None else None,
        value_subject=value.subject if value is not None else None)


__all__ = ["SinkSettings", "sink_settings"]
