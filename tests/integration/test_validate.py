"""`cdc-ingest validate` and capture on bad config and wrong server settings: the stated errors.

Every test that reads the server runs on both flavours."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import admin_conn
from tests.integration.flavors import Source, binlog_head
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


def _validate(config: Path) -> tuple[int, str]:
    result = cli("validate", "--config", str(config))
    return result.returncode, result.stdout + result.stderr


def _line(output: str, check: str) -> str:
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if f"] {check}:" in line:
            follow = lines[i + 1] if i + 1 < len(lines) and "fix:" in lines[i + 1] else ""
            return line + "\n" + follow
    raise AssertionError(f"no line for check {check!r} in:\n{output}")


@pytest.fixture
def keyed_db(fresh_source_db: str, source: Source) -> str:
    conn = admin_conn(source, fresh_source_db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    conn.close()
    return fresh_source_db


def test_good_setup_passes(source: Source, kafka: Any, keyed_db: str, tmp_path: Path) -> None:
    config = write_pipeline(tmp_path / "p.yaml", source, kafka, "ok", rf"{keyed_db}.\.*")
    code, out = _validate(config)
    assert code == 0, out
    assert "[FAIL]" not in out and "validate: all" in out


def test_config_errors_are_all_listed_with_paths(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(
        "source:\n  type: mysql\n  hostnme: db\n  port: seventy\n  username: u\n"
        "  password: p\n  tables: a.b\n  server-id: 1\n"
        "sink:\n  type: upsert-kafka\n  sink.delivery-guarantee: twice\n"
        "route:\n  - source-table: a.(\n    sink-table: t\n"
    )
    code, out = _validate(config)
    assert code == 2, out
    assert "5 problems" in out
    for path in ("source.hostnme", "source.port", "source.hostname",
                 "sink.sink.delivery-guarantee", "route[0].source-table"):
        assert path in out, f"{path} missing from:\n{out}"
    assert "did you mean 'hostname'" in out


def test_wrong_binlog_settings_each_named_with_the_fix(
    source: Source, kafka: Any, keyed_db: str, tmp_path: Path
) -> None:
    config = write_pipeline(tmp_path / "p.yaml", source, kafka, "settings", rf"{keyed_db}.t")
    conn = admin_conn(source)
    try:
        with conn.cursor() as cur:
            cur.execute("SET GLOBAL binlog_format = 'STATEMENT'")
            cur.execute("SET GLOBAL binlog_row_image = 'MINIMAL'")
            cur.execute("SET GLOBAL binlog_row_metadata = 'MINIMAL'")
        code, out = _validate(config)
    finally:
        with conn.cursor() as cur:
            cur.execute("SET GLOBAL binlog_format = 'ROW'")
            cur.execute("SET GLOBAL binlog_row_image = 'FULL'")
            cur.execute("SET GLOBAL binlog_row_metadata = 'FULL'")
        conn.close()
    assert code == 4, out
    assert "is STATEMENT, must be ROW" in _line(out, "binlog_format")
    assert "binlog_format=ROW" in _line(out, "binlog_format")
    assert "is MINIMAL, must be FULL" in _line(out, "binlog_row_image")
    assert "binlog_row_metadata=FULL" in _line(out, "binlog_row_metadata")
    assert "[ok  ] log_bin" in out


def test_binlog_off_is_named_with_the_my_cnf_fix(
    source: Source, kafka: Any, keyed_db: str, tmp_path: Path
) -> None:
    config = write_pipeline(tmp_path / "p.yaml", source, kafka, "nobinlog", rf"{keyed_db}.t")
    with source.reconfigured(log_bin=None):
        code, out = _validate(config)
    assert code == 4, out
    line = _line(out, "log_bin")
    assert "is OFF, must be ON" in line and "log_bin=mysql-bin" in line and "my.cnf" in line


def test_missing_grants_and_keyless_table_and_unreachable_kafka(
    source: Source, kafka: Any, keyed_db: str, tmp_path: Path
) -> None:
    conn = admin_conn(source, keyed_db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE nokey (a INT, b INT)")
        cur.execute("CREATE USER IF NOT EXISTS 'weak'@'%' IDENTIFIED BY 'weak'")
        cur.execute("GRANT SELECT ON *.* TO 'weak'@'%'")
    config = write_pipeline(tmp_path / "p.yaml", source, kafka, "weak", rf"{keyed_db}.\.*",
                            user="weak")
    code, out = _validate(config)
    assert code == 4, out
    grants = _line(out, "grants")
    assert "lacks REPLICATION SLAVE, REPLICATION CLIENT" in grants
    assert f"GRANT {source.facts.grants} ON *.* TO 'weak'@'%';" in grants
    keys = _line(out, "primary keys")
    assert f"without a primary key: {keyed_db}.nokey" in keys and "key-columns" in keys

    # naming the key columns fixes the keyless table
    config = write_pipeline(tmp_path / "p2.yaml", source, kafka, "keyed", rf"{keyed_db}.\.*",
                            source={"tables.key-columns": {f"{keyed_db}.nokey": "a,b"}})
    code, out = _validate(config)
    assert "[ok  ] primary keys" in out, out

    dead = type("Dead", (), {"bootstrap": "127.0.0.1:1"})()
    config = write_pipeline(tmp_path / "p3.yaml", source, dead, "dead", rf"{keyed_db}.t")
    code, out = _validate(config)
    assert code == 4 and "[FAIL] kafka transactions" in out, out


def test_keyless_table_stops_capture_with_table_and_position(
    source: Source, kafka: Any, keyed_db: str, tmp_path: Path
) -> None:
    conn = admin_conn(source, keyed_db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE nokey (a INT, b INT)")
    start = gtid_now(source)
    with conn.cursor() as cur:
        cur.execute("INSERT INTO nokey VALUES (1, 2)")
    conn.commit()
    config = write_pipeline(
        tmp_path / "p.yaml", source, kafka, f"nokey-{keyed_db}", rf"{keyed_db}.nokey",
        source={"scan.startup.mode": "specific-offset",
                "scan.startup.specific-offset.gtid-set": start},
    )
    log = tmp_path / "capture.log"
    code = start_capture(config, log).wait(60)
    text = log.read_text()
    assert code == 3, text
    assert f"table {keyed_db}.nokey has no primary key" in text
    assert "binlog mysql-bin." in text and "tables.key-columns" in text


def _purge_all_but_current(cur: Any, source: Source) -> None:
    cur.execute("FLUSH BINARY LOGS")
    current = binlog_head(source)[0]

    # MariaDB keeps a file until its binlog checkpoint is written: retry briefly.
    def purged() -> bool:
        cur.execute(f"PURGE BINARY LOGS TO '{current}'")
        cur.execute("SHOW BINARY LOGS")
        return bool(cur.fetchone()[0] == current)

    wait_for(purged, timeout=30, what="older binlog files purged")


def test_status_and_start_say_a_committed_position_was_purged_and_a_login_rejected(
    source: Source, kafka: Any, keyed_db: str, tmp_path: Path
) -> None:
    """A committed position whose binlog is gone: `status` flags it (exit 7) and `start`'s
    closing line does not promise a resume it cannot make; a rejected login: exit 3."""
    name = f"gone-{keyed_db}"
    config = write_pipeline(tmp_path / "p.yaml", source, kafka, name, rf"{keyed_db}.t")
    log = tmp_path / "capture.log"
    proc = start_capture(config, log)
    try:
        wait_for(lambda: "starts at" in log.read_text(), 60, "capture to start")
        with admin_conn(source, keyed_db) as conn, conn.cursor() as cur:
            cur.execute("INSERT INTO t VALUES (1, 1)")
            conn.commit()
        wait_for(lambda: rows_of(changelog(kafka, name)), 60, "the row in the changelog")
    finally:
        assert stop(proc) == 0, log.read_text()[-2000:]
    healthy = cli("status", "--config", str(config))
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    with admin_conn(source, keyed_db) as conn, conn.cursor() as cur:
        cur.execute("INSERT INTO t VALUES (2, 2)")  # made while capture is away, then purged
        conn.commit()
        _purge_all_but_current(cur, source)

    status = cli("status", "--config", str(config))
    assert status.returncode == 7, status.stdout + status.stderr
    assert "capture PURGED" in status.stdout and source.facts.purged in status.stdout
    assert "a new pipeline.name" in status.stdout, status.stdout
    started = cli("start", "--config", str(config), timeout=180)
    said = started.stdout + started.stderr
    assert started.returncode == 9, said[-3000:]
    assert "capture exited with code 7" in said and "it resumes" not in said, said[-3000:]
    assert "Starting again would fail the same way" in said and "a new pipeline.name" in said

    stranger = write_pipeline(tmp_path / "s.yaml", source, kafka, name, rf"{keyed_db}.t",
                              user="nobody")
    rejected = cli("status", "--config", str(stranger))
    assert rejected.returncode == 3, rejected.stdout + rejected.stderr
    assert "capture error" in rejected.stdout and "nobody" in rejected.stdout
    assert "Traceback" not in rejected.stdout + rejected.stderr


def test_purged_position_is_a_clear_error(
    source: Source, kafka: Any, keyed_db: str, tmp_path: Path
) -> None:
    old = gtid_now(source)
    conn = admin_conn(source, keyed_db)
    with conn.cursor() as cur:
        cur.execute("INSERT INTO t VALUES (1, 1)")
        conn.commit()
        _purge_all_but_current(cur, source)
    config = write_pipeline(
        tmp_path / "p.yaml", source, kafka, f"purged-{keyed_db}", rf"{keyed_db}.t",
        source={"scan.startup.mode": "specific-offset",
                "scan.startup.specific-offset.gtid-set": old},
    )
    code, out = _validate(config)
    assert code == 4, out
    line = _line(out, "scan.startup.specific-offset position")
    assert old in line and source.facts.purged in line and "latest-offset" in line

    log = tmp_path / "capture.log"
    code = start_capture(config, log).wait(60)
    text = log.read_text()
    assert code == 7, text
    assert f"cannot resume capture of pipeline 'purged-{keyed_db}' at '{old}'" in text
    assert "binlog_expire_logs_seconds" in text
