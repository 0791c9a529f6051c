"""Prometheus metrics on a real pipeline (`cdc-ingest start`): the sink answers on
``pipeline.metrics.port``, capture on the port after it (what the Docker health check
reads), and their counters rise by exactly the rows the snapshot read and MySQL changed."""

from __future__ import annotations

import socket
import urllib.request
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import admin_conn
from tests.integration.pipeline_helpers import cli, start_command, stop, wait_for, write_pipeline

ORDERS = "CREATE TABLE orders (id INT PRIMARY KEY, status VARCHAR(20), amount DECIMAL(8,2))"


def _free_port_pair() -> int:
    """A port P such that P and P + 1 are free on 127.0.0.1 now."""
    for _ in range(50):
        with socket.socket() as first:
            first.bind(("127.0.0.1", 0))
            port = first.getsockname()[1]
            if port >= 65535:
                continue
            with socket.socket() as second:
                try:
                    second.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
                return int(port)
    raise AssertionError("no two consecutive free ports")


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """(sample name, sorted labels) -> value, from http://127.0.0.1:<port>/metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def _answers(port: int) -> bool:
    try:
        scrape(port)
    except OSError:
        return False
    return True


def test_both_endpoints_count_what_the_pipeline_moved(mariadb: Any, kafka: Any, fresh_db: str,
                                                      tmp_path: Path) -> None:
    db, table = fresh_db, f"{fresh_db}.orders"
    with admin_conn(mariadb, db) as conn, conn.cursor() as cur:
        cur.execute(ORDERS)
        cur.execute("INSERT INTO orders VALUES (1, 'new', 1.00), (2, 'new', 2.00), "
                    "(3, 'new', 3.00)")
    port = _free_port_pair()
    config = write_pipeline(tmp_path / "p.yaml", mariadb, kafka, f"metrics-{db}", table,
                            source={"scan.startup.mode": "initial"},
                            pipeline={"metrics.port": port})
    log = tmp_path / "start.log"
    proc = start_command("start", config, log)
    try:
        caught_up = cli("status", "--config", str(config), "--wait-caught-up", "180",
                        timeout=200)
        assert caught_up.returncode == 0, caught_up.stdout + caught_up.stderr + log.read_text()
        wait_for(lambda: _answers(port) and _answers(port + 1), 60, "both /metrics")
        sink_stage, capture_stage = (("stage", "sink"),), (("stage", "capture"),)
        per_table = (("stage", "sink"), ("table", table))

        capture = scrape(port + 1)
        assert capture[("sourceConnected", ())] == 1
        assert capture[("numSnapshotRecords_total", (("table", table),))] == 3
        assert capture[("transactionCommitTime_count", capture_stage)] >= 1
        # the snapshot's 3 rows are written, and counted, by the sink
        sink = wait_for(lambda: (s := scrape(port)).get(("numRecordsOutPerTable_total",
                                                         per_table)) == 3 and s,
                        60, "the sink to count the 3 snapshot rows")
        assert sink[("numRecordsOut_total", sink_stage)] == 3

        # 6 row changes: 2 inserts, 3 updates (one statement), 1 delete
        with admin_conn(mariadb, db) as conn, conn.cursor() as cur:
            cur.execute("INSERT INTO orders VALUES (4, 'new', 4.00), (5, 'new', 5.00)")
            cur.execute("UPDATE orders SET status = 'paid' WHERE id <= 3")
            cur.execute("DELETE FROM orders WHERE id = 5")
        after = wait_for(lambda: (s := scrape(port)).get(("numRecordsOutPerTable_total",
                                                          per_table)) == 3 + 6 and s,
                         90, "the sink to count the 6 changes")
        assert after[("numRecordsOut_total", sink_stage)] == 3 + 6
        assert (after[("numRecordsIn_total", sink_stage)]
                - sink[("numRecordsIn_total", sink_stage)]) == 6
        assert after[("numBytesOut_total", sink_stage)] > sink[("numBytesOut_total",
                                                                sink_stage)]
        assert (after[("transactionCommitTime_count", sink_stage)]
                > sink[("transactionCommitTime_count", sink_stage)])
        assert after[("currentEmitEventTimeLag", sink_stage)] > 0

        capture_after = scrape(port + 1)
        assert (capture_after[("numRecordsOut_total", capture_stage)]
                - capture[("numRecordsOut_total", capture_stage)]) == 6
        assert capture_after[("numSnapshotRecords_total", (("table", table),))] == 3
        assert capture_after[("sourceConnected", ())] == 1
        assert capture_after[("currentFetchEventTimeLag", ())] > 0
    finally:
        assert stop(proc, 90) == 0, log.read_text()[-3000:]
    text = log.read_text()
    assert f"metrics on http://127.0.0.1:{port}/metrics" in text
    assert f"metrics on http://127.0.0.1:{port + 1}/metrics" in text
