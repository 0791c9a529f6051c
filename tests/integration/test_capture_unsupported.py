"""Binlog features capture cannot follow yet stop it with what, where and the fix; they are
never skipped (a skipped event is a lost change), and `validate` flags them first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import admin_conn
from tests.integration.pipeline_helpers import (
    changelog,
    cli,
    rows_of,
    start_capture,
    stop,
    wait_for,
    write_pipeline,
)


def test_mariadb_compressed_events_stop_capture_instead_of_being_skipped(
    mariadb: Any, kafka: Any, fresh_db: str, tmp_path: Path
) -> None:
    with admin_conn(mariadb, fresh_db) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, body TEXT)")
    name = f"compressed-{fresh_db}"
    config = write_pipeline(tmp_path / "p.yaml", mariadb, kafka, name, rf"{fresh_db}.t")
    log = tmp_path / "capture.log"
    with mariadb.reconfigured(log_bin_compress="ON", log_bin_compress_min_len=10):
        checked = cli("validate", "--config", str(config))
        assert checked.returncode == 4, checked.stdout + checked.stderr
        assert "[FAIL] log_bin_compress: is ON" in checked.stdout
        assert "SET GLOBAL log_bin_compress=OFF" in checked.stdout

        proc = start_capture(config, log)
        try:
            wait_for(lambda: "starts at" in log.read_text(), 60, "capture to start")
            with admin_conn(mariadb, fresh_db) as conn, conn.cursor() as cur:
                cur.execute("INSERT INTO t VALUES (1, %s)", ("x" * 2000,))
            code = proc.wait(60)
        finally:
            stop(proc)
    text = log.read_text()
    assert code == 3, text[-3000:]
    assert "MariaDB compressed an event at binlog mysql-bin." in text, text[-3000:]
    assert "SET GLOBAL log_bin_compress=OFF" in text and "Traceback" not in text
    assert rows_of(changelog(kafka, name)) == []  # nothing of it, and nothing made up
