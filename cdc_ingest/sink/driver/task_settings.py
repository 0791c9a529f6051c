"""The pipeline definition -> what a sink task needs (:class:`~cdc_ingest.sink.settings.
SinkSettings`), on the driver: one typed branch per sink type."""

from __future__ import annotations

from cdc_ingest.config import PipelineDef
from cdc_ingest.config.kafka_sink import KafkaSinkDef
from cdc_ingest.config.sink import UpsertKafkaSinkDef
from cdc_ingest.model.names import tx_parts_topic
from cdc_ingest.registry.avro_subjects import AvroSettings
from cdc_ingest.sink.settings import SinkSettings, UpsertFormat


def sink_settings(defn: PipelineDef) -> SinkSettings:
    sink = defn.sink
    metadata = sink.sink_transaction_metadata_topic
    return SinkSettings(
        kafka=defn.kafka_config(),
        changelog_topic=defn.pipeline.changelog_topic,
        group_id=defn.sink_group_id,
        transactional_id_prefix=defn.transactional_id_prefix,
        guarantee=str(sink.sink_delivery_guarantee.value),
        router=defn.router(),
        format=(sink.event_options() if isinstance(sink, KafkaSinkDef)
                else _upsert(sink, defn)),
        with_headers=sink.sink_add_table_id_to_header_enabled,
        buffer_max_rows=sink.buffer_flush_max_rows,
        buffer_interval_s=sink.buffer_flush_seconds,
        topic_partitions=sink.topic_partitions,
        topic_replication=sink.topic_replication_factor,
        dead_letter_topic=sink.sink_dead_letter_topic,
        transforms=tuple(rule.spec(defn.source.metadata_list) for rule in defn.transforms),
        tx_parts_topic=tx_parts_topic(defn.transactional_id_prefix) if metadata else None,
        schema_topic=defn.pipeline.schema_topic,
    )


def _upsert(sink: UpsertKafkaSinkDef, defn: PipelineDef) -> UpsertFormat:
    key = sink.key_avro_confluent if sink.avro_key else None
    value = sink.value_avro_confluent if sink.avro_value else None
    avro = None
    if key is not None or value is not None:
        avro = AvroSettings(
            kafka=defn.kafka_config(), schema_topic=defn.pipeline.schema_topic,
            key=key.registry_config() if key is not None else None,
            value=value.registry_config() if value is not None else None,
            key_subject=key.subject if key is not None else None,
            value_subject=value.subject if value is not None else None)
    return UpsertFormat(sink.except_key, sink.jackson_keys, avro)
