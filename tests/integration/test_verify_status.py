"""`cdc-ingest verify` and `status` on a real pipeline: capture runs, the sink topics are
written by the sink's own partition writer, then MySQL moves on without the sink. Both
flavours: verify reads every all-types column (on MySQL also VECTOR and JSON) from the server."""

from __future__ import annotations

import json
import signal
from collections import defaultdict
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from cdc_ingest.config import load_pipeline
from cdc_ingest.kafka import read_topic
from cdc_ingest.sink.driver.task_settings import sink_settings
from cdc_ingest.sink.task.writer import write_partition
from tests.conftest import admin_conn
from tests.integration.flavors import Source
from tests.integration.pipeline_helpers import (
    changelog,
    cli,
    gtid_now,
    rows_of,
    start_capture,
    stop,
    wait_for,
    write_pipeline,
)
from tests.integration.test_capture_types import ZERO_DATES, all_types_ddl, all_types_rows

ORDERS = "CREATE TABLE {} (id INT PRIMARY KEY, status VARCHAR(20), amount DECIMAL(8,2))"


class ChangelogRow(NamedTuple):
    """What the sink's writer reads of a Spark Kafka row."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def run_sink(config: Path, kafka: Any) -> None:
    """Everything in the changelog through the sink's writer, one call per partition."""
    settings = sink_settings(load_pipeline(config))
    partitions: dict[int, list[ChangelogRow]] = defaultdict(list)
    for msg in read_topic({"bootstrap.servers": kafka.bootstrap}, settings.changelog_topic):
        partitions[msg.partition].append(
            ChangelogRow(msg.partition, msg.offset, msg.key, msg.value))
    for rows in partitions.values():
        write_partition(settings, sorted(rows, key=lambda r: r.offset))


def status_json(config: Path) -> dict[str, Any]:
    result = cli("status", "--config", str(config), "--json")
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def test_verify_and_status(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    db = fresh_source_db
    start = gtid_now(source)
    conn = admin_conn(source, db)
    with conn.cursor() as cur:
        cur.execute(all_types_ddl(source))
        cur.execute(ORDERS.format("order_1"))
        cur.execute(ORDERS.format("order_2"))
        cur.execute("SET time_zone = '+00:00'")
        for row in all_types_rows(source):
            cur.execute(f"INSERT INTO all_types VALUES {row}")
        cur.execute("SET SESSION sql_mode = ''")
        cur.execute(ZERO_DATES)
        cur.execute("INSERT INTO order_1 VALUES (1, 'new', 0.50), (3, 'new', 10)")
        cur.execute("INSERT INTO order_2 VALUES (2, 'new', 99.99)")

    name = f"verify-{db}"
    config = write_pipeline(
        tmp_path / "pipeline.yaml", source, kafka, name, f"{db}.\\.*",
        source={"scan.startup.mode": "specific-offset",
                "scan.startup.specific-offset.gtid-set": start},
    )
    doc = yaml.safe_load(config.read_text())
    doc["route"] = [{"source-table": f"{db}.order_[0-9]+", "sink-table": f"orders-{db}"}]
    doc["sink"]["value.fields-include"] = "EXCEPT_KEY"
    config.write_text(yaml.safe_dump(doc, sort_keys=False))

    proc = start_capture(config, tmp_path / "capture.log")
    try:
        wait_for(lambda: len(rows_of(changelog(kafka, name))) >= 7, what="7 row changes")
        run_sink(config, kafka)

        # 1. the sink topics hold exactly what MySQL holds
        result = cli("verify", "--config", str(config))
        assert result.returncode == 0, result.stdout + result.stderr
        out = result.stdout
        assert f"topic {db}.all_types <- {db}.all_types" in out
        assert "MySQL rows 4, topic keys 4: equal" in out
        assert f"topic orders-{db} <- {db}.order_1, {db}.order_2" in out
        assert f"MySQL rows 3 ({db}.order_1: 2, {db}.order_2: 1), topic keys 3: equal" in out
        assert "verify: 2 topic(s) from 3 table(s) equal to MySQL (7 rows)" in out
        assert status_json(config)["sink"]["lag"] == 0

        # 2. MySQL moves on; capture follows, the sink does not
        with conn.cursor() as cur:
            cur.execute("UPDATE order_1 SET status = 'paid', amount = 0.5 WHERE id = 1")
            cur.execute("DELETE FROM all_types WHERE id = 3")
            cur.execute("INSERT INTO order_2 VALUES (4, 'new', 1.25)")
        wait_for(lambda: len(rows_of(changelog(kafka, name))) >= 10, what="3 more changes")

        result = cli("verify", "--config", str(config), "--max-diffs", "5")
        assert result.returncode == 8, result.stdout + result.stderr
        out = result.stdout
        assert "MySQL rows 3, topic keys 4: DIFFERENT" in out
        assert f'differing  {{"id":1}} ({db}.order_1): status: mysql "paid" | topic "new"' in out
        assert '  extra      {"id":3}: mysql (absent) | topic {"ti":127,' in out
        assert f'  missing    {{"id":4}} ({db}.order_2): mysql {{"status":"new","amount":1.25}}' \
            in out
        assert "verify: 2 of 2 topic(s) differ from MySQL (1 missing, 1 extra, 1 differing, " \
            "0 conflicts)" in out
        assert "2 sink topic(s) differ from MySQL" in result.stderr

        # 3. status: capture is at the binlog head, the sink three rows behind
        report = status_json(config)
        capture, sink = report["capture"], report["sink"]
        assert capture["error"] is None and sink["error"] is None
        assert capture["position"]["gtid_set"] == capture["head"]["gtid_set"]
        assert capture["behind_bytes"] == 0 and capture["behind_seconds"] == 0.0
        assert sink["lag"] == 3
        assert sum(p["lag"] for p in sink["partitions"]) == 3
        for p in sink["partitions"]:
            assert p["end_offset"] - p["committed"] >= p["lag"]
        assert sink["last_event"] is not None
        text = cli("status", "--config", str(config))
        assert text.returncode == 0, text.stderr
        assert text.stdout.splitlines()[0] == f"pipeline          {name}"
        assert any(line.split() == ["total", "3"] for line in text.stdout.splitlines())

        # 4. the sink catches up (skipping what it committed) and verify agrees again
        run_sink(config, kafka)
        result = cli("verify", "--config", str(config))
        assert result.returncode == 0, result.stdout + result.stderr
        assert status_json(config)["sink"]["lag"] == 0
    finally:
        assert stop(proc) == 0, (tmp_path / "capture.log").read_text()
        conn.close()


def test_status_and_verify_wait_instead_of_sleeps(mariadb: Any, kafka: Any, fresh_db: str,
                                                  tmp_path: Path) -> None:
    """The README's hand-run without sleeps: `status --wait-caught-up` returns once capture
    reads the binlog head and the sink has written it all, so changes made next are streamed
    in order; `verify --wait` returns once the topic equals MySQL."""
    from tests.integration.pipeline_helpers import sink_topic, start_command  # noqa: PLC0415

    db = fresh_db
    with admin_conn(mariadb, db) as conn, conn.cursor() as cur:
        cur.execute(ORDERS.format("orders"))
    config = write_pipeline(tmp_path / "p.yaml", mariadb, kafka, f"wait-{db}", f"{db}.orders",
                            source={"scan.startup.mode": "initial"})
    early = cli("status", "--config", str(config), "--wait-caught-up", "2")
    assert early.returncode == 12, early.stdout + early.stderr  # nothing runs yet
    assert "not caught up after 2 s" in early.stderr
    log = tmp_path / "start.log"
    proc = start_command("start", config, log)
    try:
        waited = cli("status", "--config", str(config), "--wait-caught-up", "180",
                     timeout=200)
        assert waited.returncode == 0, waited.stdout + waited.stderr + log.read_text()[-2000:]
        with admin_conn(mariadb, db) as conn, conn.cursor() as cur:
            cur.execute("INSERT INTO orders VALUES (1, 'new', 1.00)")
            cur.execute("UPDATE orders SET status = 'paid'")
            cur.execute("DELETE FROM orders")
            cur.execute("INSERT INTO orders VALUES (2, 'new', 2.00)")
        verified = cli("verify", "--config", str(config), "--wait", "120", timeout=150)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert verified.stdout.count("equal") >= 1
        by_key: dict[bytes, list[Any]] = defaultdict(list)
        for m in sink_topic(kafka, f"{db}.orders"):
            by_key[m.key].append(None if m.value is None else json.loads(m.value)["status"])
        assert by_key[b'{"id":1}'] == ["new", "paid", None]  # streamed, in order
        assert by_key[b'{"id":2}'] == ["new"]
        # watch: every sink topic of the pipeline, as committed, until Ctrl-C
        watch_log = tmp_path / "watch.log"
        watcher = start_command("watch", config, watch_log)
        try:
            wait_for(lambda: "following" in watch_log.read_text(), 60, "watch to start")
            with admin_conn(mariadb, db) as conn, conn.cursor() as cur:
                cur.execute("UPDATE orders SET status = 'late' WHERE id = 2")
            wait_for(lambda: '"late"' in watch_log.read_text(), 60, "the update in watch")
        finally:
            watcher.send_signal(signal.SIGINT)
            assert watcher.wait(30) in (0, 130), watch_log.read_text()
        seen = watch_log.read_text()
        assert f"following {db}.orders (new messages" in seen, seen
        assert f'{db}.orders p' in seen and 'key={"id":2} value={"id":2,"status":"late"' in seen
        assert "Traceback" not in seen
    finally:
        assert stop(proc, 60) == 0, log.read_text()[-3000:]
