"""Capture's notifications (``<prefix>.notifications``, Debezium's format): an initial snapshot
of two tables with capture SIGKILLed in the middle of it, then a snapshot requested with
``cdc-ingest snapshot`` while the pipeline runs, on MariaDB and MySQL. Each notification is in
the transaction of the chunk it counts, so none is missing or told twice across the kill: one
STARTED, one IN_PROGRESS per chunk with the rows read so far, one TABLE_SCAN_COMPLETED per
table with its row count, one COMPLETED; the requested snapshot's id is the request's.
``watch --notifications`` prints them."""

from __future__ import annotations

import json
import random
import re
import signal
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from cdc_ingest.kafka.consumer import read_topic
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

ROWS = {"a": 610, "b": 400}
CHUNK = 10  # 103 chunks: the kill after 4 lands inside the snapshot on any machine


def _notes(kafka: Any, name: str) -> list[dict[str, Any]]:
    return [json.loads(m.value) for m in read_topic({"bootstrap.servers": kafka.bootstrap},
                                                    f"cdc-ingest.{name}.notifications")]


def _one_snapshot(notes: list[dict[str, Any]], tables: dict[str, int], db: str) -> None:
    """A whole snapshot's notifications, in order, each once."""
    kinds = [n["type"] for n in notes]
    assert kinds[0] == "STARTED" and kinds[-1] == "COMPLETED", kinds
    assert kinds.count("STARTED") == kinds.count("COMPLETED") == 1, kinds
    assert len({n["id"] for n in notes}) == 1
    assert all(n["additional_data"]["connector_name"] == notes[0]["additional_data"][
        "connector_name"] for n in notes)
    for table, rows in tables.items():
        name = f"{db}.{table}"
        progress = [int(n["additional_data"]["rows_scanned"]) for n in notes
                    if n["type"] == "IN_PROGRESS"
                    and n["additional_data"]["current_collection_in_progress"] == name]
        # a chunk each, its rows added: none told twice (the kill), none missing
        want = [min(rows, CHUNK * i) for i in range(1, -(-rows // CHUNK) + 1)]
        if rows % CHUNK == 0:
            want.append(rows)  # the last chunk, past the last key, reads none
        assert progress == want, (name, progress)
        done = [n for n in notes if n["type"] == "TABLE_SCAN_COMPLETED"
                and n["additional_data"]["data_collection"] == name]
        assert len(done) == 1, done
        assert done[0]["additional_data"]["total_rows_scanned"] == str(rows)
        assert done[0]["additional_data"]["status"] == "SUCCEEDED"
    assert all(int(n["timestamp"]) > 1_600_000_000_000 for n in notes)


def _signal(kafka: Any, name: str, key: str | None, value: dict[str, Any]) -> None:
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    body = {k: v for k, v in value.items() if k != "expect"}
    producer.produce(f"cdc-ingest.{name}.signals", json.dumps(body).encode(),
                     None if key is None else key.encode())
    assert producer.flush(30) == 0


def _inserts(kafka: Any, name: str, table: str) -> dict[int, int]:
    """How many +I records each key of ``table`` has in the changelog."""
    counts: dict[int, int] = {}
    for r in changelog(kafka, name):
        if r.get("table") == table and r["op"] == "+I":
            counts[r["after"]["id"]] = counts.get(r["after"]["id"], 0) + 1
    return counts


def _refused(db: str) -> list[tuple[Any, dict[str, Any]]]:
    """Signals capture refuses: (key of the pipeline's name, value with what the reason says)."""
    def mine(name: str) -> str:
        return name

    return [
        (mine, {"type": "execute-snapshot", "id": "bad-0", "data": {
            "data-collections": [f"{db}.a"],
            "additional-conditions": [{"data-collection": f"{db}.a", "filter": "nosuch < 5"}]},
            "expect": "MySQL refused the filter 'nosuch < 5' on"}),
        (mine, {"type": "log", "id": "bad-1", "data": {"message": "hi"},
                "expect": "signal type 'log' is not one capture takes"}),
        (lambda _n: "someone-else", {"type": "execute-snapshot", "id": "bad-2",
                                     "data": {"data-collections": [f"{db}.a"]},
                                     "expect": "keyed by the pipeline's name"}),
        (mine, {"type": "execute-snapshot", "id": "bad-3",
                "data": {"data-collections": [f"{db}.other", f"{db}.nope"]},
                "expect": f"{db}.other is not a table this pipeline captures now; {db}.nope"}),
    ]


def test_snapshot_notifications_once_each_across_a_kill(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    db = fresh_source_db
    with admin_conn(source, db) as conn, conn.cursor() as cur:
        for table, rows in ROWS.items():
            cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, v INT)")
            cur.executemany(f"INSERT INTO {table} VALUES (%s, %s)",
                            [(i, i) for i in range(1, rows + 1)])
    name = f"notes-{source.name}-{db}"
    config = write_pipeline(
        tmp_path / "p.yaml", source, kafka, name, rf"{db}.[ab]",
        source={"scan.startup.mode": "initial",
                "scan.incremental.snapshot.chunk.size": CHUNK})
    log = tmp_path / "capture.log"
    capture = start_command("capture", config, log)
    try:
        wait_for(lambda: len(re.findall(r"snapshot chunk of \S+ read", log.read_text())) >= 4,
                 120, "4 snapshot chunks read")
        capture.send_signal(signal.SIGKILL)
        capture.wait(30)
        capture = start_command("capture", config, log)
        wait_for(lambda: "snapshot goes on at" in log.read_text(), 60, "the snapshot resumed")
        wait_for(lambda: "COMPLETED" in [n["type"] for n in _notes(kafka, name)], 120,
                 "COMPLETED of the initial snapshot")
        initial = _notes(kafka, name)
        assert {n["aggregate_type"] for n in initial} == {"Initial Snapshot"}
        _one_snapshot(initial, ROWS, db)
        assert initial[0]["additional_data"]["data_collections"] == f"{db}.a, {db}.b"

        requested = cli("snapshot", "--config", str(config), f"{db}.b")
        # it waits for capture's answer: taken
        assert requested.returncode == 0, requested.stdout + requested.stderr
        request_id = re.search(r"\(request (\w+)\)", requested.stdout)
        assert request_id, requested.stdout
        assert f"capture took request {request_id.group(1)}: snapshot of {db}.b" in \
            requested.stdout, requested.stdout
        wait_for(lambda: len(_notes(kafka, name)) > len(initial)
                 and _notes(kafka, name)[-1]["type"] == "COMPLETED", 120,
                 "COMPLETED of the requested snapshot")
    finally:
        code = stop(capture, timeout=60)
    assert code == 0, log.read_text()[-3000:]
    again = _notes(kafka, name)[len(initial):]
    # the request, taken (the signal's notification, committed with the position past it)
    assert [(n["aggregate_type"], n["type"], n["id"]) for n in again[:1]] == [
        ("Signal", "TAKEN", request_id.group(1))]
    assert again[0]["additional_data"]["data_collections"] == f"{db}.b"
    again = again[1:]
    assert {n["aggregate_type"] for n in again} == {"Incremental Snapshot"}
    assert {n["id"] for n in again} == {request_id.group(1)}
    _one_snapshot(again, {"b": ROWS["b"]}, db)

    # signals in Debezium's format, keyed by the pipeline's name, and ones capture refuses:
    # each notified once, taken or refused with why; capture goes on
    with admin_conn(source, db) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE other (id INT PRIMARY KEY)")
    before = len(_notes(kafka, name))
    capture = start_command("capture", config, log)
    try:
        _signal(kafka, name, name, {"type": "execute-snapshot", "id": "dbz-1", "data": {
            "data-collections": [f"{db}.a"], "type": "incremental"}})
        for key, value in _refused(db):
            _signal(kafka, name, key(name), value)
        wait_for(lambda: [n["type"] for n in _notes(kafka, name)[before:]][-1:] == [
            "COMPLETED"] and len(_notes(kafka, name)) > before + 6, 120,
            "the signals' notifications and the Debezium-format snapshot's COMPLETED")
        assert capture.poll() is None, log.read_text()[-3000:]
    finally:
        assert stop(capture, timeout=60) == 0, log.read_text()[-3000:]
    signals = [n for n in _notes(kafka, name)[before:] if n["aggregate_type"] == "Signal"]
    assert [(n["id"], n["type"]) for n in signals] == [
        ("dbz-1", "TAKEN"), *((f"bad-{i}", "REFUSED") for i in range(len(_refused(db))))]
    assert signals[0]["additional_data"]["data_collections"] == f"{db}.a"
    reasons = [n["additional_data"]["reason"] for n in signals[1:]]
    for (_, value), reason in zip(_refused(db), reasons, strict=True):
        assert value["expect"] in reason, (value, reason)  # type: ignore[index]
    dbz = [n for n in _notes(kafka, name)[before:] if n["aggregate_type"] != "Signal"]
    assert {n["id"] for n in dbz} == {"dbz-1"}
    _one_snapshot(dbz, {"a": ROWS["a"]}, db)
    # a filtered snapshot: only the rows the filter selects are written again, no key of the
    # table tombstoned; a filter MySQL refuses is refused before anything is sent
    capture = start_command("capture", config, log)
    try:
        bad = cli("snapshot", "--config", str(config), f"{db}.a", "--where", "nosuch = 1")
        assert bad.returncode == 2 and "MySQL refuses it on" in bad.stderr, bad.stderr
        counts = _inserts(kafka, name, "a")
        assert set(counts.values()) == {2}  # the initial snapshot and Debezium's signal
        taken = cli("snapshot", "--config", str(config), f"{db}.a", "--where",
                    "id BETWEEN 5 AND 9 OR id = 600")
        assert taken.returncode == 0, taken.stdout + taken.stderr
        assert f"{db}.a where id BETWEEN 5 AND 9 OR id = 600 (6 rows)" in taken.stdout
        wait_for(lambda: sum(_inserts(kafka, name, "a").values()) == sum(counts.values()) + 6,
                 120, "the filtered rows in the changelog")
    finally:
        assert stop(capture, timeout=60) == 0, log.read_text()[-3000:]
    after = _inserts(kafka, name, "a")
    assert {i for i in after if after[i] != counts[i]} == {5, 6, 7, 8, 9, 600}
    assert not [r for r in changelog(kafka, name) if r.get("table") == "a"
                and r["op"] == "-D"], "a key of the filtered table was tombstoned"

    # no capture runs: the request is not taken within --wait, and the command says so
    pending = cli("snapshot", "--config", str(config), f"{db}.a", "--wait", "3")
    assert pending.returncode == 16, pending.stdout + pending.stderr
    assert "no capture took request" in pending.stderr and "stays in the signal topic" in \
        pending.stderr, pending.stderr
    total = len(_notes(kafka, name))

    # watch --notifications prints them, one line each
    watch_log = tmp_path / "watch.log"
    watch = start_command("watch", config, watch_log, "--notifications", "--from-beginning")
    wait_for(lambda: len([x for x in watch_log.read_text().splitlines()
                          if re.match(r"\d{4}-\d\d-\d\dT", x)]) >= total,
             60, "watch to print every notification")
    watch.send_signal(signal.SIGINT)
    watch.wait(30)
    out = watch_log.read_text()
    lines = [x for x in out.splitlines() if re.match(r"\d{4}-\d\d-\d\dT", x)]
    assert len(lines) == total, out
    assert re.search(r"Signal REFUSED id=bad-1 .*reason=signal type 'log'", out), out
    assert re.search(rf"Incremental Snapshot TABLE_SCAN_COMPLETED id={request_id.group(1)} "
                     rf".*data_collection={db}\.b .*total_rows_scanned={ROWS['b']}", out), out


def _big_table_pipeline(source: Source, kafka: Any, db: str, tmp_path: Path,
                        prefix: str) -> tuple[str, Path]:
    """``db.big`` with 5,000 rows, and an initial-snapshot pipeline of it in 1,000 chunks (a
    stop lands inside the snapshot on any machine): its name and config file."""
    with admin_conn(source, db) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE big (id INT PRIMARY KEY, v INT)")
        cur.executemany("INSERT INTO big VALUES (%s, %s)", [(i, i) for i in range(1, 5001)])
    name = f"{prefix}-{source.name}-{db}"
    config = write_pipeline(
        tmp_path / "p.yaml", source, kafka, name, rf"{db}.big",
        source={"scan.startup.mode": "initial", "scan.incremental.snapshot.chunk.size": 5})
    return name, config


def test_stop_snapshot_stops_the_running_snapshot_and_capture_goes_on(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    db = fresh_source_db
    name, config = _big_table_pipeline(source, kafka, db, tmp_path, "stop")
    log = tmp_path / "capture.log"
    capture = start_command("capture", config, log)
    try:
        wait_for(lambda: len(re.findall(r"snapshot chunk of \S+ read", log.read_text())) >= 3,
                 120, "3 snapshot chunks read")
        stopped = cli("stop-snapshot", "--config", str(config), f"{db}.big")
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        assert "capture took request" in stopped.stdout and f"{db}.big (partly read)" in \
            stopped.stdout, stopped.stdout
        with admin_conn(source, db) as conn, conn.cursor() as cur:
            cur.execute("INSERT INTO big VALUES (9999, 1)")
        wait_for(lambda: any(r.get("table") == "big" and r["op"] == "+I"
                             and r["after"]["id"] == 9999 for r in changelog(kafka, name)),
                 60, "the binlog going on after the stop")
        nothing = cli("stop-snapshot", "--config", str(config))
        assert nothing.returncode == 15, nothing.stdout + nothing.stderr
        assert "no snapshot is running" in nothing.stderr, nothing.stderr
    finally:
        assert stop(capture, timeout=60) == 0, log.read_text()[-3000:]
    notes = _notes(kafka, name)
    kinds = [(n["aggregate_type"], n["type"]) for n in notes]
    assert kinds[0] == ("Initial Snapshot", "STARTED")
    assert ("Initial Snapshot", "COMPLETED") not in kinds
    assert kinds[-3:] == [("Signal", "TAKEN"), ("Initial Snapshot", "ABORTED"),
                          ("Signal", "REFUSED")], kinds[-5:]
    assert kinds.count(("Initial Snapshot", "ABORTED")) == 1
    inserted = [r for r in changelog(kafka, name) if r.get("table") == "big" and r["op"] == "+I"]
    read = int([n for n in notes if n["type"] == "IN_PROGRESS"][-1]["additional_data"][
        "rows_scanned"])
    assert len(inserted) == read + 1 < 5000  # the chunks read, and the binlog's row


def test_stop_snapshot_taken_once_across_a_sigkill_while_it_is_taken(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    """The bad timing on purpose: capture is SIGKILLed at a random moment (seeded, printed)
    in the second after the stop-snapshot signal is written, so before, while or after it is
    taken. Either the stop was committed with its notifications, or the restart resumes the
    snapshot and takes the signal again: TAKEN and ABORTED once each, no COMPLETED, no key
    read twice by the snapshot, and the binlog goes on."""
    db = fresh_source_db
    name, config = _big_table_pipeline(source, kafka, db, tmp_path, "stopkill")
    log = tmp_path / "capture.log"
    seed = random.randrange(1 << 30)
    delay = random.Random(seed).uniform(0, 1.0)
    print(f"seed {seed}: SIGKILL {delay:.3f} s after the signal")
    capture = start_command("capture", config, log)
    try:
        wait_for(lambda: len(re.findall(r"snapshot chunk of \S+ read", log.read_text())) >= 3,
                 120, "3 snapshot chunks read")
        sent = cli("stop-snapshot", "--config", str(config), f"{db}.big", "--wait", "0")
        assert sent.returncode == 0, sent.stdout + sent.stderr
        time.sleep(delay)
        capture.send_signal(signal.SIGKILL)
        capture.wait(30)
        capture = start_command("capture", config, log)
        wait_for(lambda: ("Initial Snapshot", "ABORTED") in [
            (n["aggregate_type"], n["type"]) for n in _notes(kafka, name)], 120,
            "the snapshot's ABORTED")
        with admin_conn(source, db) as conn, conn.cursor() as cur:
            cur.execute("INSERT INTO big VALUES (9999, 1)")
        wait_for(lambda: any(r.get("table") == "big" and r["op"] == "+I"
                             and r["after"]["id"] == 9999 for r in changelog(kafka, name)),
                 60, "the binlog going on after the stop")
    finally:
        assert stop(capture, timeout=60) == 0, log.read_text()[-3000:]
    kinds = [(n["aggregate_type"], n["type"]) for n in _notes(kafka, name)]
    assert kinds.count(("Signal", "TAKEN")) == 1, kinds
    assert kinds.count(("Initial Snapshot", "ABORTED")) == 1, kinds
    assert ("Initial Snapshot", "COMPLETED") not in kinds
    inserted = [r["after"]["id"] for r in changelog(kafka, name)
                if r.get("table") == "big" and r["op"] == "+I"]
    assert len(inserted) == len(set(inserted)) < 5001, "a key read twice, or the whole table"
    assert 9999 in inserted
