"""Pipeline definition -> what the capture process needs (the only place mapping the two)."""

from __future__ import annotations

from cdc_ingest.capture.binlog import ConnectionSettings
from cdc_ingest.capture.runner import CaptureOptions
from cdc_ingest.capture.startup import StartupSpec
from cdc_ingest.config import PipelineDef
from cdc_ingest.kafka import client_config


def connection_settings(defn: PipelineDef) -> ConnectionSettings:
    s = defn.source
    return ConnectionSettings(
        host=s.hostname,
        port=s.port,
        user=s.username,
        password=s.password.get_secret_value(),
        connect_timeout=s.connect_timeout.total_seconds(),
    )


def startup_spec(defn: PipelineDef) -> StartupSpec:
    s = defn.source
    mode = str(s.scan_startup_mode.value)
    return StartupSpec(
        mode=mode,
        file=s.scan_startup_specific_offset_file,
        pos=s.scan_startup_specific_offset_pos,
        gtid_set=s.scan_startup_specific_offset_gtid_set,
        skip_rows=s.scan_startup_specific_offset_skip_rows,
        timestamp_ms=s.scan_startup_timestamp_millis,
    )


def kafka_config(defn: PipelineDef) -> dict[str, object]:
    return client_config(defn.sink.properties)


def capture_options(defn: PipelineDef) -> CaptureOptions:
    s, p = defn.source, defn.pipeline
    return CaptureOptions(
        pipeline=p.name,
        connection=connection_settings(defn),
        server_id=s.server_id_first,
        kafka=kafka_config(defn),
        changelog_topic=p.changelog_topic,
        offsets_topic=p.offsets_topic,
        partitions=p.parallelism,
        captured=s.captures,
        startup=startup_spec(defn),
        key_columns=s.key_columns_for,
        max_rows=s.capture_transaction_max_rows,
        max_interval_s=s.capture_transaction_max_interval.total_seconds(),
        heartbeat_s=max(s.heartbeat_interval.total_seconds(), 0.1),
        connect_retries=s.connect_max_retries,
        replication_factor=defn.sink.topic_replication_factor or -1,  # -1: broker default
        tinyint1_as_boolean=s.treat_tinyint1_as_boolean_enabled,
        transactional_id_prefix=defn.transactional_id_prefix,
        metrics_port=p.metrics_port + 1 if p.metrics_port else None,
        snapshot_server_id=(s.server_id_last if s.server_id_last > s.server_id_first
                            else s.server_id_first + 1),
        chunk_size=s.scan_incremental_snapshot_chunk_size,
        fetch_size=s.scan_snapshot_fetch_size,
        snapshot_parallelism=s.scan_incremental_snapshot_parallelism or p.parallelism,
    )
