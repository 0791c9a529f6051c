"""cdc_ingest/metrics.py without services: a sink batch's counters as Prometheus figures, the
endpoint, and a port in use (logged with the fix, never fatal)."""

from __future__ import annotations

import logging
import socket
import time
import urllib.request

import pytest
from prometheus_client import REGISTRY

from cdc_ingest import metrics
from cdc_ingest.sink.task.record_loop import Counters


def _value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_a_sink_batch_adds_its_partitions_counters() -> None:
    before = {name: _value(name, stage="sink") for name in
              ("numRecordsIn_total", "numRecordsOut_total", "numBytesOut_total",
               "transactionCommitTime_count")}
    table_before = _value("numRecordsOutPerTable_total", stage="sink", table="shop.orders")
    newest = int(time.time() * 1000) - 2_000
    metrics.record_sink_writes([
        Counters(rows_in=5, rows_out=4, bytes_out=100, per_table={"shop.orders": 4},
                 commit_ms=12, max_event_ts_ms=newest - 1_000),
        Counters(rows_in=2, rows_out=2, bytes_out=30, per_table={"shop.orders": 1,
                                                                 "shop.customers": 1},
                 commit_ms=8, max_event_ts_ms=newest),
        Counters(),  # a partition with nothing in this batch
    ])
    assert _value("numRecordsIn_total", stage="sink") - before["numRecordsIn_total"] == 7
    assert _value("numRecordsOut_total", stage="sink") - before["numRecordsOut_total"] == 6
    assert _value("numBytesOut_total", stage="sink") - before["numBytesOut_total"] == 130
    assert _value("numRecordsOutPerTable_total", stage="sink", table="shop.orders") \
        - table_before == 5
    assert (_value("transactionCommitTime_count", stage="sink")
            - before["transactionCommitTime_count"]) == 2
    lag = _value("currentEmitEventTimeLag", stage="sink")
    assert 2_000 <= lag < 60_000  # from the newest event of the batch, in ms


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_exposes_the_metrics_on_loopback(caplog: pytest.LogCaptureFixture) -> None:
    port = _free_port()
    with caplog.at_level(logging.INFO, "cdc_ingest.metrics"):
        metrics.serve(port)
    assert f"metrics on http://127.0.0.1:{port}/metrics" in caplog.text
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    for name in ("numRecordsOut_total", "sourceConnected", "transactionCommitTime_bucket",
                 "currentFetchEventTimeLag"):
        assert name in text


def test_a_port_in_use_is_logged_with_the_fix_and_skipped(
        caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with caplog.at_level(logging.INFO, "cdc_ingest.metrics"):
            metrics.serve(port)  # returns: never fatal
    assert f"metrics not served: 127.0.0.1:{port}" in caplog.text
    assert "set pipeline.metrics.port to a free port" in caplog.text
    assert "metrics on http" not in caplog.text


def test_port_0_serves_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, "cdc_ingest.metrics"):
        metrics.serve(0)
        metrics.serve(None)
    assert caplog.text == ""
