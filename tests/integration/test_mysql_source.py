"""Oracle MySQL 9.7 as a source: JSON and VECTOR values exactly as MySQL shows them, on the
snapshot and the binlog path; binlog features capture cannot follow stop it with the fix."""

from __future__ import annotations

import decimal
import json
import struct
from pathlib import Path
from typing import Any

import pytest

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

DOCS = [
    """'{"a":1e300,"b":0.00001,"c":1.5,"d":[1,2.0,-0.0],"e":1e-7,"f":1.2345678901234567e29}'""",
    "JSON_OBJECT('d', CAST(1.50 AS DECIMAL(5,2)), 't', CAST('-12:34:56.5' AS TIME(1)), "
    "'dt', CAST('2024-01-31 12:34:56' AS DATETIME), 'date', CAST('2024-01-31' AS DATE), "
    "'ts', TIMESTAMP'2024-01-31 12:34:56.123456')",
    "CAST(x'00ff' AS JSON)",
    "JSON_ARRAY(CAST(1e16 AS DOUBLE), 0.1e0, 100e0, 3.0e-5, 18446744073709551615, "
    "-9223372036854775808, CONVERT(CHAR(10, 34, 92) USING utf8mb4), 'é🔑')",
    "JSON_OBJECT('big', REPEAT('x', 70000), 'n', JSON_ARRAY(NULL, TRUE, JSON_OBJECT()))",
]
VECTORS = ["[1.5,2,3]", "[0.1,-1e-7,3.4e38]", "[0,0,0]"]


def _f32(value: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


def _floats(text: str) -> list[float]:
    """What MySQL stores for a vector literal: each value rounded to a 32-bit float."""
    return [_f32(float(v)) for v in json.loads(text)]


def _insert(mysql: Any, db: str, first: int) -> None:
    with admin_conn(mysql, db) as conn, conn.cursor() as cur:
        for i, doc in enumerate(DOCS):
            vector = VECTORS[i % len(VECTORS)]
            cur.execute(f"INSERT INTO t VALUES ({first + i}, {doc}, "
                        f"STRING_TO_VECTOR('{vector}'))")


def test_json_and_vector_values_match_mysql_on_snapshot_and_binlog(
    mysql: Any, kafka: Any, fresh_mysql_db: str, tmp_path: Path
) -> None:
    db = fresh_mysql_db
    with admin_conn(mysql, db) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, j JSON, v VECTOR(3))")
    _insert(mysql, db, 0)  # read by the snapshot
    name = f"myjson-{db}"
    config = write_pipeline(tmp_path / "p.yaml", mysql, kafka, name, rf"{db}.t",
                            source={"scan.startup.mode": "initial"})
    log = tmp_path / "capture.log"
    proc = start_capture(config, log)
    try:
        wait_for(lambda: "streaming from" in log.read_text(), 90, "the snapshot to end")
        _insert(mysql, db, 100)  # read from the binlog
        wait_for(lambda: len(rows_of(changelog(kafka, name, float))) >= 2 * len(DOCS), 60,
                 "every row in the changelog")
    finally:
        assert stop(proc) == 0, log.read_text()[-3000:]
    with admin_conn(mysql, db) as conn, conn.cursor() as cur:
        cur.execute("SELECT id, j FROM t")
        shown = dict(cur.fetchall())
    records = rows_of(changelog(kafka, name, float))
    assert sorted(r["pk"]["id"] for r in records) == sorted(shown)
    for record in records:
        row, i = record["after"], record["pk"]["id"]
        where = "snapshot" if record["pos"] == "snapshot" else "binlog"
        assert row["j"] == shown[i], f"{where} row {i}"  # MySQL's own text, to the byte
        assert [_f32(x) for x in row["v"]] == _floats(VECTORS[i % 100 % len(VECTORS)]), (
            f"{where} row {i}")
    assert {r["pos"] == "snapshot" for r in records} == {True, False}


@pytest.mark.parametrize(("setting", "value", "change", "words"), [
    ("binlog_row_value_options", "PARTIAL_JSON",
     "UPDATE t SET j = JSON_SET(j, '$.a', 5) WHERE id = 1", "partial JSON updates are applied"),
    ("binlog_transaction_compression", "ON", "INSERT INTO t VALUES (2, '{\"b\": 2}')",
     "compressed transactions are read"),
])
def test_validate_says_mysql_binlog_features_are_followed_and_capture_follows_them(
    mysql: Any, kafka: Any, fresh_mysql_db: str, tmp_path: Path, setting: str, value: str,
    change: str, words: str,
) -> None:
    db = fresh_mysql_db
    with admin_conn(mysql, db) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, j JSON)")
        cur.execute("""INSERT INTO t VALUES (1, '{"a": 1, "pad": "%s"}')""" % ("x" * 300))
    name = f"myfeature-{setting[-8:]}-{db}"
    config = write_pipeline(tmp_path / "p.yaml", mysql, kafka, name, rf"{db}.t")
    log = tmp_path / "capture.log"
    with mysql.reconfigured(**{setting: value}):
        checked = cli("validate", "--config", str(config))
        assert f"[ok  ] {setting}: " in checked.stdout and words in checked.stdout, (
            checked.stdout + checked.stderr)
        proc = start_capture(config, log)
        try:
            wait_for(lambda: "starts at" in log.read_text(), 60, "capture to start")
            with admin_conn(mysql, db) as conn, conn.cursor() as cur:
                cur.execute(change)
                cur.execute(f"SELECT id, j FROM t WHERE id = {2 if 'INSERT' in change else 1}")
                key, shown = cur.fetchone()
            records = wait_for(lambda: rows_of(changelog(kafka, name, decimal.Decimal)), 60,
                               "the change in the changelog")
        finally:
            code = stop(proc)
    text = log.read_text()
    assert code == 0 and "Traceback" not in text, text[-3000:]
    assert [(r["pk"]["id"], r["after"]["j"]) for r in records] == [(key, shown)]


def test_snapshot_refuses_unordered_commits_with_the_fix(
    mysql: Any, kafka: Any, fresh_mysql_db: str, tmp_path: Path
) -> None:
    """The snapshot relies on MySQL's executed GTID set growing in binlog order
    (binlog_order_commits, docs/decisions/0006): validate fails and capture stops before
    reading a row when it is OFF; a pipeline without a snapshot is not concerned."""
    db = fresh_mysql_db
    with admin_conn(mysql, db) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY)")
        cur.execute("INSERT INTO t VALUES (1)")
    snap = write_pipeline(tmp_path / "snap.yaml", mysql, kafka, f"order-{db}", rf"{db}.t",
                          source={"scan.startup.mode": "initial"})
    latest = write_pipeline(tmp_path / "latest.yaml", mysql, kafka, f"order-l-{db}", rf"{db}.t")
    with admin_conn(mysql) as conn, conn.cursor() as cur:
        cur.execute("SET GLOBAL binlog_order_commits = OFF")
    try:
        checked = cli("validate", "--config", str(snap))
        captured = cli("capture", "--config", str(snap))
        unconcerned = cli("validate", "--config", str(latest))
    finally:
        with admin_conn(mysql) as conn, conn.cursor() as cur:
            cur.execute("SET GLOBAL binlog_order_commits = ON")
    assert checked.returncode != 0
    assert "[FAIL] binlog_order_commits: is OFF" in checked.stdout, checked.stdout
    assert "SET PERSIST binlog_order_commits = ON" in checked.stdout
    assert captured.returncode == 3, captured.stdout + captured.stderr
    assert "binlog_order_commits is OFF" in captured.stderr and "Traceback" not in (
        captured.stdout + captured.stderr), captured.stderr
    assert not changelog(kafka, f"order-{db}")
    assert "binlog_order_commits" not in unconcerned.stdout
