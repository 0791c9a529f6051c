"""``cdc-ingest set-position`` (Debezium's ``set-binlog-position`` signal) on MariaDB 10.11
and 11.8 and MySQL: capture goes back 1,000 transactions by binlog file and position, across
an ``ALTER TABLE`` inside them, and writes exactly those changes again, each row with the
columns of its time; capture is SIGKILLed as it takes the signal, and the changes are still
read again once. Positions inside a transaction, or with GTIDs the server never wrote, are
refused with why while capture goes on; then forward by GTID set past 1,000 transactions it
never reads, with a warning naming what it skipped."""

from __future__ import annotations

import json
import random
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pymysql
import pytest

from cdc_ingest import exit_codes
from cdc_ingest.capture.positions import PositionStore
from cdc_ingest.kafka.consumer import read_topic
from tests.conftest import admin_conn
from tests.integration.flavors import ALL_SERVERS, Source, binlog_head, gtid_now
from tests.integration.pipeline_helpers import (
    changelog,
    cli,
    rows_of,
    start_capture,
    stop,
    wait_for,
    write_pipeline,
)

TRANSACTIONS = 1_000
ALTER_AT = 500  # the ALTER TABLE is this transaction


def _workload(conn: pymysql.Connection[Any], first_id: int) -> int:
    """1,000 transactions (inserts, updates, deletes; the ALTER at :data:`ALTER_AT` when the
    table has no ``c`` yet); returns how many changed a row."""
    changed = 0
    with conn.cursor() as cur:
        cur.execute("SHOW COLUMNS FROM t LIKE 'c'")
        has_c = bool(cur.fetchall())
        for i in range(1, TRANSACTIONS + 1):
            key = first_id + i
            if i == ALTER_AT and not has_c:
                cur.execute("ALTER TABLE t ADD COLUMN c INT NOT NULL DEFAULT 7")
                has_c = True
                continue
            if i % 3 == 1:
                cur.execute("INSERT INTO t (id, v) VALUES (%s, %s)", (key, i))
            elif i % 3 == 2:
                cur.execute("UPDATE t SET v = %s WHERE id = %s", (-i, key - 1))
            else:
                cur.execute("DELETE FROM t WHERE id = %s", (key - 2,))
            changed += 1
    return changed


def _changes(kafka: Any, name: str) -> list[tuple[int, str, Any, Any]]:
    """Per partition, in order (a key's changes are in one partition)."""
    return [(r["_partition"], r["op"], r["pk"], r["after"])
            for r in rows_of(changelog(kafka, name), "t")]


def _notes(kafka: Any, name: str) -> dict[str, dict[str, Any]]:
    return {n["id"]: n for m in read_topic({"bootstrap.servers": kafka.bootstrap},
                                           f"cdc-ingest.{name}.notifications")
            if (n := json.loads(m.value))["aggregate_type"] == "Signal"}


def _beyond(source: Source, gtid_set: str) -> str:
    """A GTID set with transactions this server never wrote."""
    if source.name.startswith("mariadb"):
        domain, server, seq = gtid_set.split(",", maxsplit=1)[0].split("-")
        return f"{domain}-{server}-{int(seq) + 1_000_000}"
    return f"{gtid_set},{uuid.uuid4()}:1-5"


@pytest.mark.parametrize("source", ALL_SERVERS, indirect=True)
def test_set_position_back_across_an_alter_refused_then_forward(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    db = fresh_source_db
    conn = admin_conn(source, db)
    conn.autocommit(True)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    name = f"setpos-{source.name}-{db}"
    config = write_pipeline(tmp_path / "p.yaml", source, kafka, name, rf"{db}.t", source={
        "scan.startup.mode": "specific-offset",
        "scan.startup.specific-offset.gtid-set": gtid_now(source)})
    log = tmp_path / "capture.log"
    store = PositionStore({"bootstrap.servers": kafka.bootstrap}, f"cdc-ingest.{name}.offsets")
    capture = start_capture(config, log)
    try:
        # 1. Back by file and position, 1,000 transactions, the ALTER among them.
        file, pos = binlog_head(source)
        changed = _workload(conn, 0)
        first = wait_for(lambda: len(c := _changes(kafka, name)) >= changed and c,
                         timeout=120, what=f"{changed} changes captured")
        assert len(first) == changed
        # capture SIGKILLed as it takes the signal: the new position is committed with the
        # signal's notification and the first changes read again, or not at all (then the
        # restart takes it again), so the changes are read again once
        back = cli("set-position", "--config", str(config), "--binlog", f"{file}:{pos}",
                   "--wait", "0")
        assert back.returncode == 0, back.stdout + back.stderr
        wait_for(lambda: "capture goes on from" in log.read_text(), timeout=60,
                 what="capture taking the signal")
        time.sleep(random.uniform(0, 0.3))
        capture.send_signal(signal.SIGKILL)
        capture.wait(30)
        capture = start_capture(config, log)
        both = wait_for(lambda: len(c := _changes(kafka, name)) >= 2 * changed and c,
                        timeout=120, what="the 1,000 transactions read again")
        for partition in {p for p, *_ in both}:  # each key's changes in order: per partition
            mine = [c for c in both if c[0] == partition]
            assert mine[len(mine) // 2:] == mine[:len(mine) // 2], f"partition {partition}"
        # what a restart resumes from: every GTID the server wrote (MySQL too: the set at
        # the file and position, not only the transactions read since)
        head = gtid_now(source)
        wait_for(lambda: (p := store.load()) is not None and p.gtid_set == head, timeout=60,
                 what=f"committed position {head}")
        # the layout of each row's time: before the ALTER without c, after it with c
        assert all(("c" in after) == (pk["id"] > ALTER_AT)
                   for _, _, pk, after in first if after is not None)
        ddl = [r for r in changelog(kafka, name)
               if r["op"] == "DDL" and "ADD COLUMN" in r["ddl"] and r["_partition"] == 0]
        assert len(ddl) == 2, ddl  # the ALTER read again too

        # 2. Refused with why; capture goes on where it was.
        with conn.cursor() as cur:
            cur.execute(f"SHOW BINLOG EVENTS IN '{file}' FROM {pos} LIMIT 12")
            inside = next(int(row[1]) for row in cur.fetchall() if row[2] == "Table_map")
        for args, why in (
            (["--binlog", f"{file}:{inside}"], "is inside a transaction (its event there is "
                                               "Table_map)"),
            (["--gtid", _beyond(source, gtid_now(source))], "never"),
        ):
            refused = cli("set-position", "--config", str(config), *args, "--wait", "60")
            assert refused.returncode == exit_codes.SIGNAL_REFUSED, refused.stdout
            assert "capture refused request" in refused.stderr + refused.stdout
            assert why in refused.stderr + refused.stdout, refused.stderr + refused.stdout
        assert stop(capture) == 0, log.read_text()[-3000:]
        assert len(_changes(kafka, name)) == 2 * changed  # nothing read again by a refusal

        # 3. Forward by GTID set, capture stopped meanwhile: what it skips is never read.
        _workload(conn, 100_000)
        head = gtid_now(source)
        sent = cli("set-position", "--config", str(config), "--gtid", head, "--wait", "0")
        assert sent.returncode == 0, sent.stdout + sent.stderr
        capture = start_capture(config, log)
        with conn.cursor() as cur:
            cur.execute("INSERT INTO t (id, v) VALUES (999999, 1)")
        got = wait_for(lambda: len(c := _changes(kafka, name)) > 2 * changed and c,
                       timeout=120, what="the insert after the forward position")
        assert len(got) == 2 * changed + 1, "a change it skipped was read"
        assert ("+I", {"id": 999999}, {"id": 999999, "v": 1, "c": 7}) in [c[1:] for c in got]
    finally:
        assert stop(capture) == 0, log.read_text()[-3000:]
    text = log.read_text()
    assert "forward: skips" in text and "cdc-ingest verify finds what they left behind" in text
    notes = list(_notes(kafka, name).values())
    assert [n["type"] for n in notes] == ["TAKEN", "REFUSED", "REFUSED", "TAKEN"], notes
    assert "back: reads again" in notes[0]["additional_data"]["data_collections"]
    assert "forward: skips" in notes[3]["additional_data"]["data_collections"]
