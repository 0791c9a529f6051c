"""Tables that join a running pipeline (both servers): one created while capture runs, one
added to `source.tables` between two runs (`scan.newly-added-table.enabled`), snapshotted
while its rows change and while capture is SIGKILLed in the middle of that snapshot.

Every write stamps its row with a global counter `v`, so a message written twice, or a
snapshot row older than a change already written, shows as a key whose `v` goes back;
`verify` must find every topic equal to its table.
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

import yaml

from tests.conftest import admin_conn
from tests.integration.flavors import Source
from tests.integration.pipeline_helpers import (
    cli,
    sink_topic,
    start_command,
    stop,
    wait_for,
    write_pipeline,
)


class _Writer:
    def __init__(self, source: Source, db: str, table: str, first_id: int) -> None:
        self.source, self.db, self.table = source, db, table
        self.rng = random.Random(5)
        self.v = 100_000
        self.next_id = first_id
        self.stop = threading.Event()
        self.error: Exception | None = None

    def run(self) -> None:
        try:
            with admin_conn(self.source, self.db) as conn, conn.cursor() as cur:
                while not self.stop.is_set():
                    self.v += 1
                    pick = self.rng.random()
                    some = self.rng.randrange(1, self.next_id)
                    if pick < 0.3:
                        cur.execute(f"INSERT INTO {self.table} VALUES (%s, %s, %s)",
                                    (self.next_id, f"n{self.next_id}", self.v))
                        self.next_id += 1
                    elif pick < 0.85:
                        cur.execute(f"UPDATE {self.table} SET v=%s, name=%s WHERE id=%s",
                                    (self.v, f"u{self.v}", some))
                    else:
                        cur.execute(f"DELETE FROM {self.table} WHERE id=%s", (some,))
                    time.sleep(0.005)
        except Exception as exc:  # noqa: BLE001 - reported by the test
            self.error = exc


def _versions(kafka: Any, topic: str) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for m in sink_topic(kafka, topic):
        if m.value is not None:
            out.setdefault(m.key.decode(), []).append(json.loads(m.value)["v"])
    return out


def _chunks(log: Path, table: str) -> int:
    return len(re.findall(rf"snapshot chunk of [^ ]+\.{table} read", log.read_text()))


def test_created_and_added_tables_are_snapshotted_and_streamed(
        source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path) -> None:
    db = fresh_source_db
    with admin_conn(source, db) as conn, conn.cursor() as cur:
        for table in ("a", "b"):
            cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, name VARCHAR(40), v INT)")
            cur.executemany(f"INSERT INTO {table} VALUES (%s, %s, %s)",
                            [(i, f"n{i}", i) for i in range(1, 3001)])
    config = write_pipeline(
        tmp_path / "p.yaml", source, kafka, f"na-{db}", rf"{db}.a\.*",
        # 60 chunks of b: capture reads them for seconds, so the kill below (after 3) lands
        # inside that snapshot whatever the machine's speed
        source={"scan.startup.mode": "initial", "scan.incremental.snapshot.chunk.size": 50},
        sink={"sink.delivery-guarantee": "exactly-once"})
    logs = {"capture": tmp_path / "capture.log", "sink": tmp_path / "sink.log"}
    procs = {n: start_command(n, config, logs[n]) for n in logs}
    writer = _Writer(source, db, "b", 3001)
    thread = threading.Thread(target=writer.run, daemon=True)
    try:
        wait_for(lambda: "snapshot done" in logs["capture"].read_text(), timeout=120,
                 what="the snapshot of a")
        # created while capture runs: from its first row, no snapshot needed
        with admin_conn(source, db) as conn, conn.cursor() as cur:
            cur.execute("CREATE TABLE a_new (id INT PRIMARY KEY, name VARCHAR(40), v INT)")
            cur.executemany("INSERT INTO a_new VALUES (%s, %s, %s)",
                            [(i, f"n{i}", i) for i in range(1, 51)])
            cur.execute("UPDATE a_new SET v = v + 1000 WHERE id <= 10")
        thread.start()  # b changes from now on, while capture is down and after
        assert stop(procs["capture"]) == 0
        doc = yaml.safe_load(config.read_text())
        doc["source"]["tables"] = rf"{db}.a\.*,{db}.b"
        config.write_text(yaml.safe_dump(doc, sort_keys=False))
        refused = cli("capture", "--config", str(config))
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert f"now also selects {db}.b" in refused.stdout + refused.stderr
        assert "scan.newly-added-table.enabled: true" in refused.stdout + refused.stderr
        doc["source"]["scan.newly-added-table.enabled"] = True
        config.write_text(yaml.safe_dump(doc, sort_keys=False))
        procs["capture"] = start_command("capture", config, logs["capture"])
        # killed in the middle of b's snapshot: the next start goes on with its next chunk
        wait_for(lambda: _chunks(logs["capture"], "b") >= 3, timeout=120,
                 what="chunks of b's snapshot")
        procs["capture"].send_signal(signal.SIGKILL)
        procs["capture"].wait(30)
        procs["capture"] = start_command("capture", config, logs["capture"])
        wait_for(lambda: logs["capture"].read_text().count("snapshot done") >= 2,
                 timeout=120, what="b's snapshot to finish")
        text = logs["capture"].read_text()
        assert re.search(rf"snapshot goes on at {db}\.b after key \{{'id': \d+\}}", text), \
            "b's snapshot began again"
        assert text.count("newly-added-table.enabled: snapshot of 1 added table(s)") == 1
        time.sleep(3)
        writer.stop.set()
        thread.join(30)
        assert writer.error is None, writer.error

        def equal() -> bool:
            return cli("verify", "--config", str(config)).returncode == 0
        wait_for(equal, timeout=180, what="verify equal")
    finally:
        writer.stop.set()
        codes = {n: stop(p, timeout=60) for n, p in procs.items()}
    assert codes == {"capture": 0, "sink": 0}, {n: logs[n].read_text()[-3000:] for n in logs}
    result = cli("verify", "--config", str(config))
    assert result.returncode == 0, result.stdout
    for table in ("a", "a_new", "b"):
        assert f"topic {db}.{table} <- {db}.{table}" in result.stdout, result.stdout
    went_back = {k: vs for k, vs in _versions(kafka, f"{db}.b").items() if vs != sorted(set(vs))}
    assert not went_back, f"b: messages written twice or out of order: {went_back}"
    assert len(_versions(kafka, f"{db}.b")) >= 3000
