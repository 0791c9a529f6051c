"""What the capture process needs, built once from the pipeline definition.

The only place that maps the definition to capture; every default lives in the config models
(``cdc_ingest.config``), none here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cdc_ingest.config import PipelineDef
from cdc_ingest.model import names
from cdc_ingest.mysql import ConnectionSettings, KeyColumns, connection_settings
from cdc_ingest.routing.selectors import TableSelector


@dataclass(frozen=True)
class StartupSpec:
    """``scan.startup.mode`` and its options: where a first start begins."""

    mode: str
    file: str | None = None
    pos: int | None = None
    gtid_set: str | None = None
    skip_rows: int = 0
    timestamp_ms: int | None = None


@dataclass(frozen=True)
class CaptureOptions:
    pipeline: str
    transactional_id: str
    connection: ConnectionSettings
    server_id: int
    kafka: dict[str, Any] = field(repr=False)
    changelog_topic: str
    offsets_topic: str
    schema_topic: str
    signal_topic: str  # requests to the running capture (capture/signals.py)
    notification_topic: str  # what capture is doing (capture/notifications.py)
    schema_change_behavior: str  # lenient | exception | evolve | ignore
    sink_group: str  # the sink's consumer group: re-keying waits for its offsets
    partitions: int
    replication_factor: int
    captured: Callable[[str, str], bool]
    # [source.tables, source.tables.exclude] as written: recorded with the position
    selection: list[str | None]
    newly_added_tables: bool  # scan.newly-added-table.enabled
    key_columns: KeyColumns
    tinyint1_as_boolean: bool
    startup: StartupSpec
    max_rows: int
    max_interval_s: float
    heartbeat_s: float
    connect_retries: int
    metrics_port: int | None
    snapshot_server_id: int
    chunk_size: int
    fetch_size: int
    snapshot_parallelism: int
    # sink.transaction-metadata.topic is set: rows carry their table order, and each MySQL
    # transaction's end is a TX record in every partition (docs/changelog-format.md)
    transaction_metadata: bool = False
    # the id an earlier release gave capture for this name (``cdc-ingest.Shop.capture``, the
    # topics being ``cdc-ingest.shop.*``): fenced at start, so a capture of that release
    # still running cannot write beside this one (config/definition.py)
    old_transactional_id: str | None = None
    # the pipeline file capture was started from and what it said: ``add-table`` compares
    # the edited file with it (capture/add_table.py)
    config_path: Path | None = None
    definition: PipelineDef | None = field(default=None, repr=False, compare=False)

    def selected(self, selection: list[str | None] | None) -> CaptureOptions:
        """These options capturing ``selection`` (``[tables, tables.exclude]``, as a position
        records it) instead of the file's: capture runs with the committed selection until
        an ``add-table`` signal takes the edited file's in."""
        if selection is None or selection == self.selection:
            return self
        return replace(self, selection=selection, captured=selection_matcher(selection))


def selection_matcher(selection: list[str | None]) -> Callable[[str, str], bool]:
    """Whether ``selection`` (``[tables, tables.exclude]``) captures a table, as
    ``source.tables`` and ``source.tables.exclude`` do."""
    tables = TableSelector.parse(selection[0]) if selection[0] else None
    exclude = (TableSelector.parse(selection[1], "tables.exclude")
               if len(selection) > 1 and selection[1] else None)

    def captured(db: str, table: str) -> bool:
        return tables is not None and tables.matches(db, table) and (
            exclude is None or not exclude.matches(db, table))
    return captured


def startup_spec(defn: PipelineDef) -> StartupSpec:
    s = defn.source
    return StartupSpec(
        mode=str(s.scan_startup_mode.value),
        file=s.scan_startup_specific_offset_file,
        pos=s.scan_startup_specific_offset_pos,
        gtid_set=s.scan_startup_specific_offset_gtid_set,
        skip_rows=s.scan_startup_specific_offset_skip_rows,
        timestamp_ms=s.scan_startup_timestamp_millis,
    )


def capture_options(defn: PipelineDef, config_path: Path | None = None) -> CaptureOptions:
    """Capture's options from ``defn``, read from ``config_path`` (add-table reads it
    again)."""
    s, p = defn.source, defn.pipeline
    return CaptureOptions(
        config_path=config_path,
        definition=defn,
        pipeline=p.name,
        transactional_id=defn.capture_transactional_id,
        old_transactional_id=(None if (old := defn.old_transactional_id_prefix) is None
                              else names.capture_transactional_id(old)),
        connection=connection_settings(s),
        server_id=s.server_id_first,
        kafka=defn.kafka_config(),
        changelog_topic=p.changelog_topic,
        offsets_topic=p.offsets_topic,
        schema_topic=p.schema_topic,
        signal_topic=defn.signal_topic,
        notification_topic=defn.notification_topic,
        # try_evolve is evolve here: a change that cannot be applied stops, never skipped
        schema_change_behavior=("evolve" if p.schema_change_behavior.value == "try_evolve"
                                else str(p.schema_change_behavior.value)),
        sink_group=defn.sink_group_id,
        partitions=p.parallelism,
        replication_factor=defn.sink.topic_replication_factor or -1,  # -1: broker default
        captured=s.captures,
        selection=[str(s.tables), None if s.tables_exclude is None else str(s.tables_exclude)],
        newly_added_tables=s.scan_newly_added_table_enabled,
        key_columns=defn.key_columns_for,
        tinyint1_as_boolean=s.treat_tinyint1_as_boolean_enabled,
        startup=startup_spec(defn),
        max_rows=s.capture_transaction_max_rows,
        max_interval_s=s.capture_transaction_max_interval.total_seconds(),
        heartbeat_s=heartbeat_seconds(s.heartbeat_interval.total_seconds()),
        connect_retries=s.connect_max_retries,
        metrics_port=p.metrics_port + 1 if p.metrics_port else None,
        snapshot_server_id=defn.capture_server_ids[1],  # reader i: this + i
        chunk_size=s.scan_incremental_snapshot_chunk_size,
        fetch_size=s.scan_snapshot_fetch_size,
        snapshot_parallelism=defn.snapshot_readers,
        transaction_metadata=bool(defn.sink.sink_transaction_metadata_topic),
    )


def heartbeat_seconds(configured: float) -> float:
    """``heartbeat.interval`` for capture: 0 disables heartbeats (no commit of the position
    alone; it then moves only with captured changes), as in Flink CDC; else at least 0.1 s."""
    return math.inf if configured == 0 else max(configured, 0.1)
