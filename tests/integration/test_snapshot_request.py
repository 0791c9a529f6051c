"""`cdc-ingest snapshot`: a table's topic rebuilt on request while the pipeline runs.

The sink topic is damaged on purpose (a phantom key the table never had, a wrong value),
as a topic restored from a bad backup or written by a stray producer would be, so `verify`
reports it. A snapshot request then runs while the table changes, and capture is SIGKILLed
in the middle of the new snapshot. Afterwards `verify` finds the topic equal to the table:
the phantom is tombstoned, the wrong value rewritten. Every write stamps its row with a
global counter `v`: no key's `v` may go back (a snapshot row older than a change already
written), and the request is taken once, even across the kill.
"""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from cdc_ingest.kafka.partition import java_partition
from tests.conftest import admin_conn
from tests.integration.pipeline_helpers import (
    cli,
    kill_capture_mid_snapshot,
    sink_topic,
    start_command,
    stop,
    wait_for,
    write_pipeline,
)
from tests.integration.test_newly_added_tables import _Writer

PHANTOM = b'{"id":999999}'


def _damage(kafka: Any, topic: str, wrong: list[tuple[bytes, bytes]] | None = None) -> None:
    """A phantom key and a wrong value (or the ``wrong`` ones), written as a stray producer
    would, with our headers and in the partition our keys go to."""
    messages = sink_topic(kafka, topic)
    partitions = max(m.partition for m in messages) + 1
    headers = list(messages[0].headers)
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    for key, value in wrong or ((PHANTOM, b'{"id":999999,"name":"ghost","v":0}'),
                                (b'{"id":1}', b'{"id":1,"name":"wrong","v":-1}')):
        producer.produce(topic, value, key, partition=java_partition(key, partitions),
                         headers=headers)
    assert producer.flush(30) == 0


def _went_back(kafka: Any, topic: str) -> dict[str, list[int | None]]:
    """Keys whose `v` goes back: between tombstones (and the stray producer's wrong values)
    strictly up, and a key written again after one never older than before it."""
    seen: dict[str, list[int | None]] = {}
    for m in sink_topic(kafka, topic):
        if m.key != PHANTOM:  # a stray wrong value counts as a tombstone: rewritten after it
            stray = m.value is not None and b'"v":-1' in m.value
            seen.setdefault(m.key.decode(), []).append(
                None if m.value is None or stray else json.loads(m.value)["v"])
    bad = {}
    for key, vs in seen.items():
        last, since_tombstone = -1, True
        for v in vs:
            if v is None:
                since_tombstone = True
                continue
            if v < last or (v == last and not since_tombstone):
                bad[key] = vs
                break
            last, since_tombstone = v, False
    return bad


def test_a_requested_snapshot_rebuilds_a_damaged_topic_under_writes_and_a_kill(
        mariadb: Any, kafka: Any, fresh_db: str, tmp_path: Path) -> None:
    db = fresh_db
    with admin_conn(mariadb, db) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(40), v INT)")
        cur.executemany("INSERT INTO t VALUES (%s, %s, %s)",
                        [(i, f"n{i}", i) for i in range(1, 3001)])
        cur.execute("CREATE TABLE other (id INT PRIMARY KEY)")
    config = write_pipeline(
        tmp_path / "p.yaml", mariadb, kafka, f"rs-{db}", f"{db}.t",
        # 120 chunks: the kill below (after 3 of the new snapshot) lands inside it on any machine
        source={"scan.startup.mode": "initial", "scan.incremental.snapshot.chunk.size": 25},
        sink={"sink.delivery-guarantee": "exactly-once"})
    topic = f"{db}.t"
    refused = cli("snapshot", "--config", str(config), f"{db}.other", f"{db}.nope")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert f"{db}.other: is not captured by this pipeline" in refused.stderr, refused.stderr
    assert f"{db}.nope: is not a table in MySQL" in refused.stderr, refused.stderr

    logs = {"capture": tmp_path / "capture.log", "sink": tmp_path / "sink.log"}
    procs = {n: start_command(n, config, logs[n]) for n in logs}
    writer = _Writer(mariadb, db, "t", 3001)
    thread = threading.Thread(target=writer.run, daemon=True)
    try:
        wait_for(lambda: cli("verify", "--config", str(config)).returncode == 0, 180,
                 "the first snapshot in the topic")
        _damage(kafka, topic)
        damaged = cli("verify", "--config", str(config))
        assert damaged.returncode == 8, damaged.stdout
        assert "999999" in damaged.stdout and "wrong" in damaged.stdout, damaged.stdout

        thread.start()
        requested = cli("snapshot", "--config", str(config), topic)
        assert requested.returncode == 0, requested.stdout + requested.stderr
        assert f"snapshot of {topic} requested" in requested.stdout
        # killed in the middle of the new snapshot: the next start goes on with it
        text = kill_capture_mid_snapshot(procs, config, logs["capture"],
                                         "snapshot request(s)")
        assert re.search(rf"snapshot goes on at {db}\.t after key", text), text[-3000:]
        time.sleep(3)
        writer.stop.set()
        thread.join(30)
        assert writer.error is None, writer.error
        wait_for(lambda: cli("verify", "--config", str(config)).returncode == 0, 180,
                 "verify equal after the new snapshot")

        # a filtered snapshot repairs just the keys a stray producer wrote wrong: those rows
        # written again, no key tombstoned
        with admin_conn(mariadb, db) as conn, conn.cursor() as cur:
            cur.execute("SELECT id FROM t ORDER BY id LIMIT 2 OFFSET 10")
            a, b = (row[0] for row in cur.fetchall())
        _damage(kafka, topic, [(b'{"id":%d}' % i, b'{"id":%d,"name":"wrong","v":-1}' % i)
                               for i in (a, b)])
        assert cli("verify", "--config", str(config)).returncode == 8
        tombstones = sum(m.value is None for m in sink_topic(kafka, topic))
        condition = f"id IN ({a}, {b})"
        filtered = cli("snapshot", "--config", str(config), topic, "--where", condition)
        assert filtered.returncode == 0, filtered.stdout + filtered.stderr
        assert f"{topic} where {condition} (2 rows)" in filtered.stdout, filtered.stdout
        wait_for(lambda: cli("verify", "--config", str(config)).returncode == 0, 180,
                 "verify equal after the filtered snapshot")
        assert sum(m.value is None for m in sink_topic(kafka, topic)) == tombstones
    finally:
        writer.stop.set()
        codes = {n: stop(p, timeout=60) for n, p in procs.items()}
    assert codes == {"capture": 0, "sink": 0}, {n: logs[n].read_text()[-3000:] for n in logs}
    last = {m.key: m.value for m in sink_topic(kafka, topic)}
    assert last[PHANTOM] is None, "the phantom key is not tombstoned"
    assert not _went_back(kafka, topic)
    assert "Traceback" not in logs["capture"].read_text()
