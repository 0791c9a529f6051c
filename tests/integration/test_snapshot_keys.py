"""Snapshot chunks over string (case-insensitive), composite and uneven keys, empty tables,
under concurrent writes; then the whole pipeline and `cdc-ingest verify`. Both flavours:
the chunk boundaries follow each server's collation."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path
from typing import Any

import pymysql

from tests.conftest import admin_conn
from tests.integration.flavors import Source
from tests.integration.pipeline_helpers import cli, start_command, stop, wait_for, write_pipeline

NAMES = ["alpha", "Beta", "gamma", "Delta", "épsilon", "Zeta", "eta", "THETA", "iota", "kappa"]


def _writer(admin: dict[str, Any], db: str, stop_event: threading.Event) -> None:
    rng = random.Random(11)
    conn = pymysql.connect(**admin, database=db, autocommit=True)
    n = 0
    with conn.cursor() as cur:
        while not stop_event.is_set():
            n += 1
            name = f"{rng.choice(NAMES)}-{rng.randint(0, 400)}"
            cur.execute("INSERT INTO s (name, v) VALUES (%s, %s) ON DUPLICATE KEY UPDATE "
                        "v = v + 1", (name, n))
            cur.execute("UPDATE c SET v = v + 1 WHERE region = %s AND code = %s",
                        (rng.randint(1, 5), f"c{rng.randint(0, 60)}"))
            cur.execute("DELETE FROM u WHERE id = %s", (rng.choice([1, 2, 3, 10**6, 10**9]),))
            time.sleep(0.005)
    conn.close()


def test_string_composite_uneven_and_empty_tables_snapshot_then_verify(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    db = fresh_source_db
    conn = admin_conn(source, db)
    with conn.cursor() as cur:
        # case-insensitive collation: 'Beta-1' and 'beta-1' are one key to MySQL
        cur.execute("CREATE TABLE s (name VARCHAR(40) COLLATE utf8mb4_general_ci PRIMARY KEY,"
                    " v INT)")
        cur.executemany("INSERT INTO s VALUES (%s, 0)",
                        [(f"{n}-{i}",) for n in NAMES for i in range(0, 400, 3)])
        cur.execute("CREATE TABLE c (region INT, code VARCHAR(8), v INT, "
                    "PRIMARY KEY (region, code))")
        cur.executemany("INSERT INTO c VALUES (%s, %s, 0)",
                        [(r, f"c{i}") for r in range(1, 6) for i in range(60)])
        cur.execute("CREATE TABLE u (id BIGINT PRIMARY KEY, v INT)")  # very uneven keys
        cur.executemany("INSERT INTO u VALUES (%s, 0)",
                        [(i,) for i in (1, 2, 3, 10**6, 10**9, 10**12)])
        cur.execute("CREATE TABLE e (id INT PRIMARY KEY)")  # empty
    name = f"keys-{db}"
    config = write_pipeline(
        tmp_path / "p.yaml", source, kafka, name, rf"{db}.\.*",
        source={"scan.startup.mode": "initial", "scan.incremental.snapshot.chunk.size": 7},
        sink={"sink.delivery-guarantee": "exactly-once"},
    )
    stop_event = threading.Event()
    writer = threading.Thread(target=_writer, args=(source.admin, db, stop_event),
                              daemon=True)
    writer.start()
    log = tmp_path / "start.log"
    proc = start_command("start", config, log)
    try:
        wait_for(lambda: "snapshot done" in log.read_text(), timeout=180, what="snapshot")
        time.sleep(2)
        stop_event.set()
        writer.join(30)

        def verified() -> bool:
            return cli("verify", "--config", str(config)).returncode == 0

        wait_for(verified, timeout=180, what="verify to pass")
    finally:
        stop_event.set()
        code = stop(proc, timeout=90)
    assert code == 0, log.read_text()[-3000:]
    text = log.read_text()
    assert text.count("snapshot chunk of") > 40  # many small chunks per table
    assert f"snapshot chunk of {db}.e read: 0 rows" in text
