"""``cdc-ingest add-table`` on MariaDB 10.11 and 11.8 and MySQL: a running pipeline takes in a table under a
writer with its existing rows, and another from now on only. Capture is SIGKILLed at a
seeded random moment in the 4 s after the signal is sent (before it is taken, between its
taking and its commit, or in the snapshot it plans: all three met in runs on this machine),
the sink in the 2 s after capture's restart.

The edited file is checked: a table it does not select is refused by the command (exit 2), a
route added with it and a selection that takes in more than the command names are refused
by capture (exit 15, capture goes on). The table added with its rows ends equal to its table
(``verify``), no key's stamp ``v`` goes back; the one added from now on holds exactly the
rows changed after it was taken in; a table captured before, taken out at a restart and
added again loses the keys of rows deleted while it was out; each signal's answer is
notified once.
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

import pytest
import yaml

from tests.conftest import admin_conn
from tests.integration.flavors import ALL_SERVERS, Source
from tests.integration.pipeline_helpers import (
    cli,
    sink_topic,
    start_command,
    stop,
    wait_for,
    write_pipeline,
)
from tests.integration.test_newly_added_tables import _Writer
from tests.integration.test_notifications import _notes
from tests.integration.test_snapshot_request import _went_back

ROWS = 3000


def _edit(config: Path, tables: str, routes: list[dict[str, str]] | None = None) -> None:
    doc = yaml.safe_load(config.read_text())
    doc["source"]["tables"] = tables
    doc.pop("route", None)
    if routes:
        doc["route"] = routes
    config.write_text(yaml.safe_dump(doc, sort_keys=False))


def _keys(kafka: Any, topic: str) -> set[int]:
    """The ids a compacted read of ``topic`` holds (a tombstone takes its key out)."""
    last: dict[bytes, bytes | None] = {}
    for m in sink_topic(kafka, topic):
        last[m.key] = m.value
    return {json.loads(k)["id"] for k, v in last.items() if v is not None}


@pytest.mark.parametrize("source", ALL_SERVERS, indirect=True)
def test_tables_added_to_a_running_pipeline_with_their_rows_or_from_now_on(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    db = fresh_source_db
    with admin_conn(source, db) as conn, conn.cursor() as cur:
        for table, rows in (("a", 100), ("b", ROWS), ("c", 20), ("d", 10)):
            cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, name VARCHAR(40), v INT)")
            cur.executemany(f"INSERT INTO {table} VALUES (%s, %s, %s)",
                            [(i, f"n{i}", i) for i in range(1, rows + 1)])
    name = f"add-{source.name}-{db}"
    config = write_pipeline(
        tmp_path / "p.yaml", source, kafka, name, f"{db}.(a|d)",
        source={"scan.startup.mode": "initial", "scan.incremental.snapshot.chunk.size": 50},
        sink={"sink.delivery-guarantee": "exactly-once"})
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    delay, sink_delay = rng.uniform(0, 4.0), rng.uniform(0, 2.0)
    print(f"seed {seed}: SIGKILL of capture {delay:.3f} s after add-table is sent, of the "
          f"sink {sink_delay:.3f} s after capture's restart")
    logs = {"capture": tmp_path / "capture.log", "sink": tmp_path / "sink.log"}
    procs = {n: start_command(n, config, logs[n]) for n in logs}
    writer = _Writer(source, db, "b", ROWS + 1)
    thread = threading.Thread(target=writer.run, daemon=True)
    try:
        wait_for(lambda: "snapshot done" in logs["capture"].read_text(), 120, "a's snapshot")
        # d taken out at a restart, and rows of it deleted while it is not captured
        assert stop(procs["capture"]) == 0
        _edit(config, f"{db}.a")
        with admin_conn(source, db) as conn, conn.cursor() as cur:
            cur.execute("DELETE FROM d WHERE id <= 5")
            cur.execute("UPDATE d SET v = 600 WHERE id = 6")
        procs["capture"] = start_command("capture", config, logs["capture"])
        wait_for(lambda: logs["capture"].read_text().count(" starts at ") == 2, 60,
                 "capture's restart without d")  # it has read the file: edits may follow
        thread.start()
        unselected = cli("add-table", "--config", str(config), f"{db}.b")
        assert unselected.returncode == 2, unselected.stdout + unselected.stderr
        assert f"{db}.b: is not selected by {config}" in unselected.stderr, unselected.stderr

        # a route of its own needs a restart: capture refuses, naming the YAML path
        _edit(config, f"{db}.(a|b)", [{"source-table": f"{db}.b", "sink-table": f"{db}.own"}])
        routed = cli("add-table", "--config", str(config), f"{db}.b")
        assert routed.returncode == 15, routed.stdout + routed.stderr
        assert "the edited pipeline file also changes route" in routed.stderr, routed.stderr
        # a selection taking in more than the command names
        _edit(config, f"{db}.(a|b|c)")
        wider = cli("add-table", "--config", str(config), f"{db}.b")
        assert wider.returncode == 15, wider.stdout + wider.stderr
        assert f"the edited source.tables also takes in {db}.c: name every table" \
            in wider.stderr, wider.stderr

        # b with its rows, capture SIGKILLed around the taking, the sink in b's snapshot
        _edit(config, f"{db}.(a|b)")
        sent = cli("add-table", "--config", str(config), f"{db}.b", "--wait", "0")
        assert sent.returncode == 0, sent.stdout + sent.stderr
        time.sleep(delay)
        procs["capture"].send_signal(signal.SIGKILL)
        procs["capture"].wait(30)
        procs["capture"] = start_command("capture", config, logs["capture"])
        time.sleep(sink_delay)
        procs["sink"].send_signal(signal.SIGKILL)
        procs["sink"].wait(30)
        procs["sink"] = start_command("sink", config, logs["sink"])
        wait_for(lambda: [(n["aggregate_type"], n["type"]) for n in _notes(kafka, name)].count(
            ("Incremental Snapshot", "COMPLETED")) == 1, 180, "b's snapshot to complete")

        # c from now on: its rows before the signal stay out, its changes after come in
        _edit(config, f"{db}.(a|b|c)")
        status = cli("status", "--config", str(config))
        assert re.search(rf"not captured yet +{db}\.c: selected by the pipeline file, not by "
                         "the running capture", status.stdout), status.stdout
        now = cli("add-table", "--config", str(config), f"{db}.c", "--no-snapshot")
        assert now.returncode == 0, now.stdout + now.stderr
        assert re.search(rf"capture took request \w+: added \S*{db}\.c \(from now on\)",
                         now.stdout), now.stdout
        with admin_conn(source, db) as conn, conn.cursor() as cur:
            cur.execute("UPDATE c SET v = 1000 WHERE id = 1")
            cur.executemany("INSERT INTO c VALUES (%s, %s, %s)",
                            [(i, f"n{i}", i) for i in range(21, 26)])
            cur.execute("DELETE FROM c WHERE id = 25")
        wait_for(lambda: _keys(kafka, f"{db}.c") == {1, 21, 22, 23, 24}, 60,
                 "c's changes after add-table")
        # d added again with its rows: the keys its topic kept of rows deleted meanwhile go
        _edit(config, f"{db}.(a|b|c|d)")
        again = cli("add-table", "--config", str(config), f"{db}.d")
        assert again.returncode == 0, again.stdout + again.stderr
        wait_for(lambda: [(n["aggregate_type"], n["type"]) for n in _notes(kafka, name)].count(
            ("Incremental Snapshot", "COMPLETED")) == 2, 120, "d's snapshot to complete")
        wait_for(lambda: _keys(kafka, f"{db}.d") == set(range(6, 11)), 60,
                 "d's topic without the rows deleted while it was out")
        time.sleep(2)
        writer.stop.set()
        thread.join(30)
        assert writer.error is None, writer.error
        said: list[str] = []

        def equal_but_c() -> bool:
            done = cli("verify", "--config", str(config))
            said[:] = [done.stdout + done.stderr]
            return done.returncode != 0 and all(
                re.search(rf"topic {db}\.{t} <- {db}\.{t}\n  MySQL rows \d+, topic keys \d+: "
                          "equal", done.stdout) for t in "abd")

        try:
            wait_for(equal_but_c, 180, "verify: a and b equal (c lacks its earlier rows)")
        except AssertionError:
            raise AssertionError(f"verify: {said[0][-3000:]}") from None
        assert _keys(kafka, f"{db}.c") == {1, 21, 22, 23, 24}
    finally:
        writer.stop.set()
        codes = {n: stop(p, timeout=60) for n, p in procs.items()}
    assert codes == {"capture": 0, "sink": 0}, {n: logs[n].read_text()[-3000:] for n in logs}
    assert not _went_back(kafka, f"{db}.b")
    assert re.search(rf"topic {db}\.c <- {db}\.c\n  MySQL rows 24, topic keys 5: DIFFERENT",
                     said[0]), said[0]
    answers = [(n["type"], n["additional_data"].get("data_collections"))
               for n in _notes(kafka, name) if n["aggregate_type"] == "Signal"]
    assert answers == [("REFUSED", None), ("REFUSED", None), ("TAKEN", f"{db}.b"),
                       ("TAKEN", f"{db}.c (from now on)"), ("TAKEN", f"{db}.d")], answers
