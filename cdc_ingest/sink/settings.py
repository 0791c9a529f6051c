"""What a sink task needs, built once on the driver from the pipeline definition; picklable.

Tasks import this module, not the config models (pydantic): those are the driver's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cdc_ingest.kafka import client_config
from cdc_ingest.model.names import sink_transactional_id
from cdc_ingest.routing.routes import Router

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
    # rows per sink transaction: each commit (with its offsets) waits ~10-30 ms for the broker
    max_tx_rows: int = 50_000
    max_tx_seconds: float = 10.0
    # message.max.bytes of the sink's producers and max.message.bytes of the topics it
    # creates: the changelog topic's (cdc_ingest.kafka.limits)
    max_message_bytes: int = 1 << 20
    dead_letter_topic: str | None = None  # sink.dead-letter.topic (cdc_ingest.sink.produce)

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
        except_key=str(sink.value_fields_include.value) == "EXCEPT_KEY",
        with_headers=sink.sink_add_table_id_to_header_enabled,
        buffer_max_rows=sink.sink_buffer_flush_max_rows,
        buffer_interval_s=sink.sink_buffer_flush_interval.total_seconds(),
        topic_partitions=sink.topic_partitions,
        topic_replication=sink.topic_replication_factor,
        dead_letter_topic=sink.sink_dead_letter_topic,
    )


__all__ = ["SinkSettings", "sink_settings"]
