"""Prometheus metrics (names from the Flink connector metrics where they fit).

Only the process that calls :func:`serve` exposes them: the sink on ``pipeline.metrics.port``,
capture on ``pipeline.metrics.port + 1``.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

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
COMMIT_TIME = Histogram("transactionCommitTime", "seconds per Kafka transaction commit",
                        ["stage"], buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5))


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


def record_sink_batch(batch_id: int, results: list[dict[str, Any]]) -> None:
    """Fold one foreachBatch's per-partition counters into the metrics."""
    newest = 0
    for r in results:
        NUM_RECORDS_IN.labels("sink").inc(r.get("rows_in", 0))
        NUM_RECORDS_OUT.labels("sink").inc(r.get("rows_out", 0))
        NUM_BYTES_OUT.labels("sink").inc(r.get("bytes_out", 0))
        for table, count in (r.get("per_table") or {}).items():
            TABLE_RECORDS_OUT.labels("sink", table).inc(count)
        if r.get("commit_ms"):
            COMMIT_TIME.labels("sink").observe(r["commit_ms"] / 1000)
        newest = max(newest, int(r.get("max_event_ts_ms") or 0))
    if newest:
        EMIT_LAG.labels("sink").set(max(0.0, time.time() * 1000 - newest))
