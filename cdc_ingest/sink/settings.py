"""What a sink task needs, built once on the driver from the pipeline definition
(sink/driver/task_settings.py); picklable. Imports no config model (pydantic): those are the
driver's, and a task never loads them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdc_ingest.formats.event_routing import EventOptions
from cdc_ingest.model.names import sink_transactional_id
from cdc_ingest.registry.avro_subjects import AvroSettings
from cdc_ingest.routing.routes import Router
from cdc_ingest.transform.rules import RuleSpec


@dataclass(frozen=True)
class UpsertFormat:
    """``sink.type: upsert-kafka``: how keys and values are written (picklable)."""

    except_key: bool = False  # value.fields-include: EXCEPT_KEY
    # key.json.encoding: jackson (upsert keys as Flink's json format spells them)
    jackson_keys: bool = False
    # key/value.format: avro-confluent (cdc_ingest.formats.upsert_avro); None: both json
    avro: AvroSettings | None = None


@dataclass(frozen=True)
class SinkSettings:
    """Everything a task needs, built once on the driver; picklable."""

    kafka: dict[str, Any] = field(repr=False)
    changelog_topic: str
    group_id: str
    transactional_id_prefix: str
    guarantee: str
    router: Router
    # upsert-kafka's options, or (sink.type: kafka) Flink CDC's change events'
    # (cdc_ingest.formats.change_events)
    format: UpsertFormat | EventOptions
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
    # waiting for a full-size transaction (sink/task/record_loop.py); None: every one
    # max_tx_rows
    first_tx_rows: int | None = None
    # message.max.bytes of the sink's producers and max.message.bytes of the topics it
    # creates: the changelog topic's (cdc_ingest.kafka.limits)
    max_message_bytes: int = 1 << 20
    dead_letter_topic: str | None = None  # sink.dead-letter.topic (sink/task/produce.py)
    # transform: rules (cdc_ingest.transform.records), applied before either format
    transforms: tuple[RuleSpec, ...] = ()
    # sink.transaction-metadata.topic is set: each sink transaction also writes a part record
    # here (sink/task/metadata_parts.py; None: metadata off)
    tx_parts_topic: str | None = None
    schema_topic: str = ""  # the typed layouts (sink/task/layouts.py)

    def producer_config(self) -> dict[str, Any]:
        return {"message.max.bytes": self.max_message_bytes, **self.kafka}

    def transactional_id(self, partition: int) -> str:
        return sink_transactional_id(self.transactional_id_prefix, partition)


__all__ = ["SinkSettings", "UpsertFormat"]
