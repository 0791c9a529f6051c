"""``pause-snapshot`` / ``resume-snapshot`` on MariaDB and MySQL, with the sink running and a
writer changing the snapshotted table all along.

An initial snapshot is paused after a few chunks: no chunk is read while paused, the binlog
goes on (a row inserted into another captured table reaches the changelog), ``status`` says
paused, other signals (``verify --repair``'s too) and a second pause are refused with why. Capture is SIGKILLed while
paused and stays paused after its restart; a rename giving a captured name to a table with
rows stops it (exit 3, naming the fix); it is started again with ``resume-snapshot`` waiting
and SIGKILLed at a seeded random moment in the second after (before, while or after the
resume is taken), and the sink at one in the two seconds after capture's restart. The
snapshot then ends, the renamed table is snapshotted, ``verify`` finds the topics equal to the tables, no key's stamp ``v``
goes back in its topic, and each notification (PAUSED, RESUMED, the signals' answers,
COMPLETED) is there once.
"""

from __future__ import annotations

import random
import re
import signal
import threading
import time
from pathlib import Path
from typing import Any

from tests.conftest import admin_conn
from tests.integration.flavors import Source
from tests.integration.pipeline_helpers import (
    changelog,
    cli,
    start_command,
    stop,
    wait_for,
    write_pipeline,
)
from tests.integration.test_newly_added_tables import _Writer
from tests.integration.test_notifications import _notes
from tests.integration.test_snapshot_request import _went_back

ROWS = 3000
CHUNK = 5  # 600 chunks: the pause after 3 lands inside the snapshot on any machine


def _chunks(log: Path) -> int:
    return len(re.findall(r"snapshot chunk of \S+ read", log.read_text()))


def _side_row(source: Source, kafka: Any, db: str, name: str, row: int) -> None:
    """Insert ``row`` into ``db.side`` and wait for it in the changelog: the binlog goes on."""
    with admin_conn(source, db) as conn, conn.cursor() as cur:
        cur.execute("INSERT INTO side VALUES (%s)", (row,))
    wait_for(lambda: any(r.get("table") == "side" and r["op"] == "+I" and r["after"]["id"] == row
                         for r in changelog(kafka, name)), 60, f"side row {row} in the changelog")


def test_a_paused_snapshot_lets_the_binlog_flow_and_resumes_exactly_across_kills(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    db = fresh_source_db
    with admin_conn(source, db) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(40), v INT)")
        cur.executemany("INSERT INTO t VALUES (%s, %s, %s)",
                        [(i, f"n{i}", i) for i in range(1, ROWS + 1)])
        cur.execute("CREATE TABLE side (id INT PRIMARY KEY)")
    name = f"pause-{source.name}-{db}"
    config = write_pipeline(
        tmp_path / "p.yaml", source, kafka, name, rf"{db}.(t|side)",
        source={"scan.startup.mode": "initial", "scan.incremental.snapshot.chunk.size": CHUNK},
        sink={"sink.delivery-guarantee": "exactly-once"})
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    delay, sink_delay = rng.uniform(0, 1.0), rng.uniform(0, 2.0)
    print(f"seed {seed}: SIGKILL of capture {delay:.3f} s after it starts to take "
          f"resume-snapshot, of the sink {sink_delay:.3f} s after capture's restart")
    logs = {"capture": tmp_path / "capture.log", "sink": tmp_path / "sink.log"}
    procs = {n: start_command(n, config, logs[n]) for n in logs}
    writer = _Writer(source, db, "t", ROWS + 1)
    thread = threading.Thread(target=writer.run, daemon=True)
    try:
        thread.start()
        wait_for(lambda: _chunks(logs["capture"]) >= 3, 120, "3 snapshot chunks read")
        paused = cli("pause-snapshot", "--config", str(config))
        assert paused.returncode == 0, paused.stdout + paused.stderr
        assert re.search(rf"capture took request \w+: paused snapshot of {db}\.t", paused.stdout), \
            paused.stdout
        read = _chunks(logs["capture"])
        assert read < ROWS // CHUNK, "the snapshot ended before the pause"
        _side_row(source, kafka, db, name, 1)
        status = cli("status", "--config", str(config))
        assert re.search(r"snapshot +paused \(cdc-ingest resume-snapshot reads on\): table \d "
                         rf"of 2 \({db}\.", status.stdout), status.stdout
        again = cli("pause-snapshot", "--config", str(config))
        assert again.returncode == 15 and "the snapshot is paused already" in again.stderr, \
            again.stdout + again.stderr
        other = cli("snapshot", "--config", str(config), f"{db}.side")
        assert other.returncode == 15 and "resume it first" in other.stderr, \
            other.stdout + other.stderr
        repair = cli("verify", "--config", str(config), "--repair")  # the unread rows differ
        assert repair.returncode == 15 and "capture refused repair request" in repair.stderr \
            and "resume it first" in repair.stderr, repair.stdout + repair.stderr

        # killed while paused: the restart stays paused, the binlog goes on
        procs["capture"].send_signal(signal.SIGKILL)
        procs["capture"].wait(30)
        procs["capture"] = start_command("capture", config, logs["capture"])
        wait_for(lambda: logs["capture"].read_text().count("snapshot paused (") >= 2, 60,
                 "the restart to stay paused")
        _side_row(source, kafka, db, name, 2)
        assert _chunks(logs["capture"]) == read, "a chunk was read while paused"

        # a rename giving a captured name to a table with rows would replace the paused plan:
        # capture stops naming it and the fix; after the resume it goes on past it
        with admin_conn(source, db) as conn, conn.cursor() as cur:
            cur.execute("CREATE TABLE x_new (id INT PRIMARY KEY)")
            cur.execute("INSERT INTO x_new VALUES (100), (101)")
            cur.execute("RENAME TABLE side TO x_old, x_new TO side")
        assert procs["capture"].wait(60) == 3, logs["capture"].read_text()[-3000:]
        text = logs["capture"].read_text()
        assert f"the rename giving captured name(s) {db}.side to a table with rows at binlog" \
            in text and f"while the snapshot of {db}.t is paused" in text, text[-3000:]
        assert "Fix: cdc-ingest resume-snapshot --config <pipeline file> --wait 0" in text

        # started again, killed at a random moment around the resume's taking
        sent = cli("resume-snapshot", "--config", str(config), "--wait", "0")
        assert sent.returncode == 0, sent.stdout + sent.stderr
        procs["capture"] = start_command("capture", config, logs["capture"])
        time.sleep(delay)
        procs["capture"].send_signal(signal.SIGKILL)
        procs["capture"].wait(30)
        procs["capture"] = start_command("capture", config, logs["capture"])
        time.sleep(sink_delay)  # the sink too, while it writes the resumed chunks
        procs["sink"].send_signal(signal.SIGKILL)
        procs["sink"].wait(30)
        procs["sink"] = start_command("sink", config, logs["sink"])
        wait_for(lambda: "COMPLETED" in [n["type"] for n in _notes(kafka, name)], 180,
                 "the resumed snapshot's COMPLETED")
        assert _chunks(logs["capture"]) > read
        time.sleep(2)
        writer.stop.set()
        thread.join(30)
        assert writer.error is None, writer.error
        said: list[str] = []

        def equal() -> bool:
            done = cli("verify", "--config", str(config))
            said[:] = [done.stdout + done.stderr]
            return done.returncode == 0

        try:
            wait_for(equal, 180, "verify equal after the resumed snapshot")
        except AssertionError:
            raise AssertionError(f"verify: {said[0][-3000:]}") from None
    finally:
        writer.stop.set()
        codes = {n: stop(p, timeout=60) for n, p in procs.items()}
    assert codes == {"capture": 0, "sink": 0}, {n: logs[n].read_text()[-3000:] for n in logs}
    assert not _went_back(kafka, f"{db}.t")
    notes = [(n["aggregate_type"], n["type"]) for n in _notes(kafka, name)]
    for once in [("Initial Snapshot", t) for t in ("STARTED", "PAUSED", "RESUMED", "COMPLETED")]:
        assert notes.count(once) == 1, (once, notes)
    assert notes.index(("Initial Snapshot", "PAUSED")) < notes.index(
        ("Initial Snapshot", "RESUMED")) < notes.index(("Initial Snapshot", "COMPLETED"))
    assert [t for a, t in notes if a == "Signal"] == ["TAKEN", "REFUSED", "REFUSED", "REFUSED",
                                                      "TAKEN"]
