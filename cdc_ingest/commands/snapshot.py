"""``cdc-ingest snapshot``: ask the pipeline's capture to snapshot tables again.

The request goes to the pipeline's signal topic (capture/signals.py); the running capture
takes it within a few seconds, or the next start does. Each table's keys are tombstoned in
its sink topics, then its rows are written again from a new snapshot, reconciled with the
binlog as any snapshot is.
"""

from __future__ import annotations

from collections.abc import Callable

from cdc_ingest.capture.signals import send_request
from cdc_ingest.config import PipelineDef
from cdc_ingest.errors import ConfigError, ConfigProblem
from cdc_ingest.kafka import TopicAdmin, TopicSpec
from cdc_ingest.mysql import Catalog, connection_settings


def request_snapshot(defn: PipelineDef, names: list[str], echo: Callable[[str], None]) -> str:
    """Check the tables and write the request; returns its id."""
    tables, problems = [], []
    catalog = Catalog(connection_settings(defn.source), retries=0)
    try:
        existing = set(catalog.tables())
    finally:
        catalog.close()
    for name in names:
        db, _, table = name.partition(".")
        if not db or not table:
            problems.append(ConfigProblem(name, "is not a table name", "write it db.table"))
        elif (db, table) not in existing:
            problems.append(ConfigProblem(name, "is not a table in MySQL",
                                          "check the spelling (names are case-sensitive)"))
        elif not defn.source.captures(db, table):
            problems.append(ConfigProblem(name, "is not captured by this pipeline",
                                          "only tables that source.tables selects (and "
                                          "source.tables.exclude does not) can be snapshotted"))
        elif (db, table) not in tables:
            tables.append((db, table))
    if problems:
        raise ConfigError(problems)
    kafka = defn.kafka_config()
    TopicAdmin(kafka).ensure(TopicSpec(defn.signal_topic, 1,
                                       defn.sink.topic_replication_factor or -1,
                                       {"cleanup.policy": "compact"}))
    request_id = send_request(kafka, defn.signal_topic, tables)
    listed = ", ".join(f"{db}.{table}" for db, table in tables)
    echo(f"snapshot of {listed} requested (request {request_id}). The running capture takes "
         "it within a few seconds (if none runs, the next start does): the tables' keys are "
         "tombstoned in their sink topics, then their rows are written again; capture logs "
         "each chunk, and `cdc-ingest verify` compares the topics when it is done.")
    return request_id
