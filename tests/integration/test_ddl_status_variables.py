"""DDL whose binlog event carries status variables python-mysql-replication does not know.

MariaDB 11 writes ``character_set_collations`` (status variable 131) with any statement that
names a character set without a collation: ``CREATE TABLE ... CHARACTER SET utf8mb4``,
``DEFAULT CHARSET=utf8mb4``, ``ALTER TABLE ... ADD COLUMN ... CHARACTER SET``, ``CREATE
DATABASE ... CHARACTER SET`` (gh-ost's first statement is one), in any database, captured or
not. The library raised on it, and capture stopped there at every restart. Each server runs
the statements between two captured rows; capture must go on and the row after them must
carry the added column.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymysql
import pytest

from tests.integration.flavors import ALL_SERVERS, Source, gtid_now
from tests.integration.pipeline_helpers import (
    changelog,
    start_capture,
    stop,
    wait_for,
    write_pipeline,
)


@pytest.mark.parametrize("source", ALL_SERVERS, indirect=True)
def test_ddl_naming_a_character_set_does_not_stop_capture(
        source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path) -> None:
    db, name = fresh_source_db, f"charset-ddl-{fresh_source_db}"
    conn = pymysql.connect(**source.admin, database=db, autocommit=True)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))")
    config = write_pipeline(
        tmp_path / "p.yaml", source, kafka, name, f"{db}.t",
        source={"scan.startup.mode": "specific-offset",
                "scan.startup.specific-offset.gtid-set": gtid_now(source)})
    log = tmp_path / "capture.log"
    proc = start_capture(config, log)
    try:
        with conn.cursor() as cur:
            cur.execute("INSERT INTO t VALUES (1, 'before')")
            cur.execute("CREATE TABLE other (a VARCHAR(5) CHARACTER SET utf8mb4) "
                        "DEFAULT CHARSET=utf8mb4")
            cur.execute(f"CREATE DATABASE `{db}_x` CHARACTER SET utf8mb4")
            cur.execute(f"DROP DATABASE `{db}_x`")
            cur.execute("ALTER TABLE t ADD COLUMN b TEXT CHARACTER SET utf8mb4")
            cur.execute("INSERT INTO t VALUES (2, 'after', 'é')")

        def after() -> dict[str, Any] | None:
            assert proc.poll() is None, log.read_text()[-3000:]
            rows = [r for r in changelog(kafka, name) if r.get("op") == "+I"]
            return next((r for r in rows if r["after"]["id"] == 2), None)
        row = wait_for(after, timeout=90, what="the row inserted after the statements")
        assert row["after"] == {"id": 2, "v": "after", "b": "é"}
    finally:
        code = stop(proc)
    assert code == 0, log.read_text()[-3000:]
