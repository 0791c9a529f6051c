"""``verify --continuous`` and ``status --tables`` while the pipeline runs under writes.

Capture and the sink run as two processes; a writer inserts, updates and deletes random rows
(counting what MySQL really changed); capture is SIGKILLed in the middle and started again.
Continuous verification meanwhile passes again and again: no pass may report a difference
(a change in flight is not one), the JSON report and the verify topic keep each pass. A
stray producer then damages a key the writer leaves alone: the next pass names it, as a
WARNING line and in ``status --tables``. Once the writer stops and the pipeline has caught
up, ``status --tables`` shows for the table exactly the snapshot rows, inserts, updates and
deletes MySQL made, across the kill.
"""

from __future__ import annotations

import json
import random
import re
import signal
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pymysql
from confluent_kafka import Producer

from tests.integration.flavors import Source
from tests.integration.pipeline_helpers import (
    cli,
    start_command,
    stop,
    wait_for,
)
from tests.integration.test_verify_under_writes import _live, busy_pipeline

ROWS = 1_000


class CountingWriter(threading.Thread):
    """Random inserts, updates and deletes of rows 11..ROWS+200, counting the rows MySQL
    changed (rows 1..10 are never touched)."""

    def __init__(self, source: Source, db: str) -> None:
        super().__init__(daemon=True)
        self.conn = pymysql.connect(**source.admin, database=db, autocommit=True)
        self.stopped = threading.Event()
        self.counts = {"inserts": 0, "updates": 0, "deletes": 0}
        self.failure: BaseException | None = None

    def run(self) -> None:
        rnd, n = random.Random(11), 0
        try:
            with self.conn.cursor() as cur:
                while not self.stopped.is_set():
                    n += 1
                    key, roll = rnd.randrange(11, ROWS + 200), rnd.random()
                    if roll < 0.2:
                        kind = "deletes"
                        cur.execute("DELETE FROM t WHERE id = %s", (key,))
                    elif roll < 0.4:
                        kind = "inserts"
                        cur.execute("INSERT IGNORE INTO t VALUES (%s, %s, 'new')", (key, n))
                    else:
                        kind = "updates"
                        cur.execute("UPDATE t SET v = %s WHERE id = %s", (n, key))
                    self.counts[kind] += cur.rowcount
                    time.sleep(0.004)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.failure = exc

    def finish(self) -> dict[str, int]:
        self.stopped.set()
        self.join(30)
        assert self.failure is None, self.failure
        return self.counts


def _report(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {"passes": [], "topics": {}}


def test_continuous_verify_and_table_statistics_under_writes_and_a_kill(
        source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path) -> None:
    db = fresh_source_db
    _, config = busy_pipeline(source, kafka, db, tmp_path, "cont", ROWS,
                              source_options={"heartbeat.interval": "2s"})
    topic, report = f"{db}.t", tmp_path / "report.json"
    logs = {name: tmp_path / f"{name}.log" for name in ("capture", "sink", "verify")}
    procs = {name: start_command(name, config, logs[name]) for name in ("capture", "sink")}
    writer = CountingWriter(source, db)
    verify = None
    try:
        wait_for(lambda: len(_live(kafka, topic)) == ROWS, timeout=180, what="the snapshot")
        writer.start()
        verify = start_command("verify", config, logs["verify"], "--continuous", "--pause",
                               "0.5", "--rate", "50000", "--report", str(report))
        wait_for(lambda: len(_report(report)["passes"]) >= 1, 180, "a first pass")
        procs["capture"].send_signal(signal.SIGKILL)  # in the middle of the writes
        procs["capture"].wait(30)
        procs["capture"] = start_command("capture", config, logs["capture"])
        wait_for(lambda: len(_report(report)["passes"]) >= 4, 300, "four passes")
        passes = _report(report)["passes"]
        assert all(p["differences"] == 0 and p["rows_validated"] > 0 for p in passes), passes

        # a stray producer damages key 1: the next pass names it
        producer = Producer({"bootstrap.servers": kafka.bootstrap})
        producer.produce(topic, orjson.dumps({"id": 1, "v": 666, "note": "stray"}),
                         orjson.dumps({"id": 1}))
        producer.flush(30)
        wait_for(lambda: _report(report)["topics"][topic]["differing"] == 1, 180,
                 "a pass finding the damage")
        assert re.search(rf'WARNING .*verify: topic {re.escape(topic)} differs from MySQL '
                         r'\(differing 1\); first keys: \{"id":1\}',
                         logs["verify"].read_text()), logs["verify"].read_text()[-3000:]

        counts = writer.finish()
        assert sum(counts.values()) > 300, counts
        done = cli("status", "--config", str(config), "--wait-caught-up", "120")
        assert done.returncode == 0, done.stdout + done.stderr
        done = cli("status", "--config", str(config), "--tables", "--json")
        assert done.returncode == 0, done.stdout + done.stderr
        body = json.loads(done.stdout)
        # exactly what MySQL changed, across capture's SIGKILL
        assert body["tables"][f"{db}.t"] == {**counts, "ddls": 0, "snapshot_rows": ROWS}
        state = body["verify"][topic]
        assert (state["differing"], state["missing"], state["extra"], state["ok"]) == \
            (1, 0, 0, False), state
        text = cli("status", "--config", str(config), "--tables").stdout
        row = next(line for line in text.splitlines() if line.strip().startswith(f"{db}.t "))
        assert row.split()[1:] == [str(counts["inserts"]), str(counts["updates"]),
                                   str(counts["deletes"]), "0", str(ROWS)], text
        assert f"{topic} DIFFERENT" in text, text
    finally:
        if writer.is_alive():
            writer.finish()
        if verify is not None:
            assert stop(verify, timeout=120) == 0, logs["verify"].read_text()[-3000:]
        for name, proc in procs.items():
            assert stop(proc, timeout=60) == 0, logs[name].read_text()[-3000:]
    passes = _report(report)["passes"]
    assert passes[-1]["pass"] == len(passes) >= 5
