"""Prometheus metrics (names from the Flink connector metrics where they fit).

Only the process that calls :func:`serve` exposes them: the sink on ``pipeline.metrics.port``,
capture on ``pipeline.metrics.port + 1``.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable
from typing import Protocol

from prometheus_client import Counter, Gauge, Histogram, start_http_server

log = logging.getLogger(__name__)

NUM_RECORDS_IN = Counter("numRecordsIn", "changelog records read", ["stage"])
NUM_RECORDS_OUT = Counter("numRecordsOut", "records written", ["stage"])
NUM_BYTES_OUT = Counter("numBytesOut", "key + value bytes written", ["stage"])
TABLE_RECORDS_OUT = Counter("numRecordsOutPerTable", "records written per source table",
                            ["stage", "table"])
FETCH_LAG = Gauge("currentFetchEventTimeLag",
                  "ms between now and the binlog time of the last event fetched")
EMIT_LAG = Gauge("currentEmitEventTimeLag",
                 "ms between now and the binlog time of the last record emitted", ["stage"])
# 1 while capture holds a working connection to the database (set once it connected, 0 from
# a lost binlog connection until the next event arrives): the Docker health check reads it
SOURCE_CONNECTED = Gauge("sourceConnected", "1 while capture is connected to the database")
SNAPSHOT_ROWS = Counter("numSnapshotRecords", "snapshot rows written", ["table"])
# capture's committed counts per source table (cdc_ingest/model/table_stats.py): changes
# since this process started, and the totals since the pipeline's first start
TABLE_CHANGES = Counter("numChangesPerTable", "row changes, DDLs and snapshot rows capture "
                        "committed since it started, per table", ["table", "kind"])
TABLE_TOTALS = Gauge("numChangesPerTableTotal", "row changes, DDLs and snapshot rows capture "
                     "committed since the pipeline's first start, per table", ["table", "kind"])
COMMIT_TIME = Histogram("transactionCommitTime", "seconds per Kafka transaction commit",
                        ["stage"], buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5))


def table_totals(totals: dict[str, dict[str, int]]) -> None:
    """The totals per table and kind (inserts, updates, deletes, ddls, snapshot_rows)."""
    for table, counts in totals.items():
        for kind, value in counts.items():
            TABLE_TOTALS.labels(table, kind).set(value)


def table_changes(done: dict[str, dict[str, int]], totals: dict[str, dict[str, int]]) -> None:
    """A commit's counts per table (``done``) and the totals after it."""
    for table, counts in done.items():
        for kind, value in counts.items():
            if value:
                TABLE_CHANGES.labels(table, kind).inc(value)
                TABLE_TOTALS.labels(table, kind).set(totals[table][kind])


def serve(port: int | None) -> None:
    """Expose /metrics on ``port`` (loopback unless CDC_INGEST_METRICS_ADDR says otherwise)."""
    if port:
        addr = os.environ.get("CDC_INGEST_METRICS_ADDR", "127.0.0.1")
        try:
            start_http_server(port, addr=addr)
        except OSError as exc:  # metrics are never worth stopping the pipeline for
            log.warning("metrics not served: %s:%d: %s (another pipeline on this host?). Fix: "
                        "set pipeline.metrics.port to a free port (capture takes the next "
                        "one too), or 0 to serve no metrics", addr, port, exc.strerror or exc)
            return
        log.info("metrics on http://%s:%d/metrics", addr, port)


class SinkWrites(Protocol):
    """A sink writer's counters (cdc_ingest.sink.task.record_loop.Counters)."""

    rows_in: int
    rows_out: int
    bytes_out: int
    per_table: dict[str, int]
    commit_ms: float
    max_event_ts_ms: int


def record_sink_writes(results: Iterable[SinkWrites]) -> None:
    """Fold the sink writers' counters (one per changelog partition, a Spark batch's or the
    head start's) into the metrics."""
    newest = 0
    for r in results:
        NUM_RECORDS_IN.labels("sink").inc(r.rows_in)
        NUM_RECORDS_OUT.labels("sink").inc(r.rows_out)
        NUM_BYTES_OUT.labels("sink").inc(r.bytes_out)
        for table, count in r.per_table.items():
            TABLE_RECORDS_OUT.labels("sink", table).inc(count)
        if r.commit_ms:
            COMMIT_TIME.labels("sink").observe(r.commit_ms / 1000)
        newest = max(newest, r.max_event_ts_ms)
    if newest:
        EMIT_LAG.labels("sink").set(max(0.0, time.time() * 1000 - newest))
