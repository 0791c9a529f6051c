"""Startup modes and the heartbeat that keeps the committed position moving."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from cdc_ingest.capture.positions import PositionStore
from tests.conftest import admin_conn
from tests.integration.pipeline_helpers import (
    changelog,
    rows_of,
    start_capture,
    stop,
    wait_for,
    write_pipeline,
)


def _ids(records: list[dict[str, Any]]) -> list[int]:
    return [r["pk"]["id"] for r in rows_of(records)]


def _master_status(conn: Any) -> tuple[str, int]:
    with conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        row = cur.fetchone()
    return str(row[0]), int(row[1])


def test_specific_offset_by_file_and_position_and_by_timestamp(
    mariadb: Any, kafka: Any, fresh_db: str, tmp_path: Path
) -> None:
    conn = admin_conn(mariadb, fresh_db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE s (id INT PRIMARY KEY)")
        cur.execute("INSERT INTO s VALUES (1)")
    conn.commit()
    time.sleep(1.1)  # binlog timestamps have second resolution
    file, pos = _master_status(conn)
    millis = int(time.time() * 1000)
    with conn.cursor() as cur:
        cur.execute("INSERT INTO s VALUES (2)")
        cur.execute("INSERT INTO s VALUES (3)")
    conn.commit()

    for mode, options in (
        ("file", {"scan.startup.mode": "specific-offset",
                  "scan.startup.specific-offset.file": file,
                  "scan.startup.specific-offset.pos": pos}),
        ("ts", {"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": millis}),
    ):
        name = f"start-{mode}-{fresh_db}"
        config = write_pipeline(tmp_path / f"{mode}.yaml", mariadb, kafka, name,
                                rf"{fresh_db}.s", source=options)
        proc = start_capture(config, tmp_path / f"{mode}.log")
        try:
            records = wait_for(lambda n=name: (r := changelog(kafka, n)) and
                               len(rows_of(r)) >= 2 and r, what=f"rows from {mode}")
            time.sleep(1.0)  # nothing older may trickle in
            records = changelog(kafka, name)
        finally:
            assert stop(proc) == 0
        assert sorted(_ids(records)) == [2, 3], mode


def test_idle_capture_still_advances_its_committed_position(
    mariadb: Any, kafka: Any, fresh_db: str, tmp_path: Path
) -> None:
    conn = admin_conn(mariadb, fresh_db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE captured (id INT PRIMARY KEY)")
        cur.execute("CREATE TABLE other (id INT PRIMARY KEY)")
    name = f"idle-{fresh_db}"
    config = write_pipeline(tmp_path / "idle.yaml", mariadb, kafka, name,
                            rf"{fresh_db}.captured")
    log = tmp_path / "capture.log"
    proc = start_capture(config, log)
    store = PositionStore({"bootstrap.servers": kafka.bootstrap}, f"cdc-ingest.{name}.offsets")
    try:
        wait_for(lambda: "starts at" in log.read_text(), what="capture running")
        with conn.cursor() as cur:
            for i in range(5):
                cur.execute("INSERT INTO other VALUES (%s)", (i,))
                conn.commit()
        with conn.cursor() as cur:
            cur.execute("SELECT @@GLOBAL.gtid_binlog_pos")
            head = cur.fetchone()[0]
        # only other tables changed, yet the committed position reaches the binlog head
        saved = wait_for(lambda: (p := store.load()) and p.gtid_set == head and p,
                         timeout=30, what=f"committed position {head}")
        assert saved.rows_done == 0
    finally:
        assert stop(proc) == 0, log.read_text()
    assert rows_of(changelog(kafka, name)) == []
