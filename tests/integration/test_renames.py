"""`RENAME TABLE` between captured names: the old name's keys are tombstoned as after
`DROP TABLE`, the table under its new name is snapshotted while the binlog goes on, and a
swap (`RENAME TABLE t TO t_old, t_new TO t`, as pt-online-schema-change does, followed by
`DROP TABLE t_old`) leaves `t`'s topic equal to the new `t`. Before this, `b`'s topic held
only the rows inserted after the rename and `a`'s topic kept its keys live.

What is checked is what a reader of the sink topics sees: the latest value per key of every
topic (the old names' included, which `verify` does not walk because their tables are gone),
`verify`'s verdict, and, across a SIGKILL of capture in the middle of the new name's
snapshot while a writer changes the table, that no key's value goes back and the snapshot
is taken once.
"""

from __future__ import annotations

import re
import threading
from itertools import pairwise
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from tests.conftest import admin_conn
from tests.integration.flavors import Source
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
from tests.integration.test_snapshot_request import _went_back


def _latest(kafka: Any, topic: str) -> dict[bytes, bytes | None]:
    return {m.key: m.value for m in sink_topic(kafka, topic)}


def _live(kafka: Any, topic: str) -> set[bytes]:
    return {k for k, v in _latest(kafka, topic).items() if v is not None}


def _equal(config: Path, procs: dict[str, Any] | None = None) -> bool:
    for name, proc in (procs or {}).items():
        assert proc.poll() is None, f"{name} exited with {proc.returncode}"
    return cli("verify", "--config", str(config)).returncode == 0


def test_renames_tombstone_the_old_name_and_snapshot_the_new_one(
        source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path) -> None:
    db = fresh_source_db
    with admin_conn(source, db) as conn, conn.cursor() as cur:
        for name in ("a", "t", "leaving"):
            cur.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, name VARCHAR(40), v INT)")
            cur.executemany(f"INSERT INTO {name} VALUES (%s, %s, %s)",
                            [(i, f"{name}{i}", i) for i in range(1, 121)])
    # every name of letters and '_' is captured; `gone9` is not
    config = write_pipeline(tmp_path / "p.yaml", source, kafka, f"rn-{db}",
                            f"{db}.[a-z_]+",
                            source={"scan.startup.mode": "initial",
                                    "scan.incremental.snapshot.chunk.size": 50})
    logs = {"capture": tmp_path / "capture.log", "sink": tmp_path / "sink.log"}
    procs = {n: start_command(n, config, logs[n]) for n in logs}
    try:
        wait_for(lambda: _equal(config, procs), 180, "the first snapshot in the topics")
        with admin_conn(source, db) as conn, conn.cursor() as cur:
            cur.execute("RENAME TABLE a TO b")
            cur.execute("INSERT INTO b VALUES (1000, 'after', 1000)")
            cur.execute("UPDATE b SET v = -v WHERE id <= 10")
            cur.execute("DELETE FROM b WHERE id BETWEEN 11 AND 20")
            # the swap of an online schema change: the new table has a column more, other
            # values for some rows and lacks a row of the old one
            cur.execute("CREATE TABLE t_new (id INT PRIMARY KEY, name VARCHAR(40), v INT, "
                        "c INT NOT NULL DEFAULT 7)")
            cur.execute("INSERT INTO t_new (id, name, v) SELECT id, name, v FROM t "
                        "WHERE id <> 5")
            cur.execute("UPDATE t_new SET name = 'changed' WHERE id <= 3")
            cur.execute("RENAME TABLE t TO t_old, t_new TO t")
            cur.execute("DROP TABLE t_old")
            cur.execute("INSERT INTO t (id, name, v) VALUES (500, 'new', 500)")
            cur.execute("RENAME TABLE leaving TO gone9")  # out of the selection
            cur.execute("ALTER TABLE b ADD COLUMN extra INT, RENAME TO c")
            cur.execute("INSERT INTO c (id, name, v) VALUES (2000, 'last', 2000)")
        wait_for(lambda: _equal(config, procs), 180, "verify equal after the renames")
        report = cli("verify", "--config", str(config))
        assert report.returncode == 0, report.stdout + report.stderr
        # a key left live in the old name's topic (a stray producer's, or a rename the
        # pipeline missed): verify looks there too, though MySQL has no table `a` now
        producer = Producer({"bootstrap.servers": kafka.bootstrap})
        producer.produce(f"{db}.a", b'{"id":77,"name":"a77","v":77}', b'{"id":77}')
        assert producer.flush(30) == 0
        stray = cli("verify", "--config", str(config))
        assert stray.returncode == 8, stray.stdout + stray.stderr
        assert f"topic {db}.a <- {db}.a (no longer in MySQL)" in stray.stdout, stray.stdout
        assert 'extra' in stray.stdout and '{"id":77}' in stray.stdout, stray.stdout
    finally:
        codes = {n: stop(p, timeout=60) for n, p in procs.items()}
    assert codes == {"capture": 0, "sink": 0}, {n: logs[n].read_text()[-3000:] for n in logs}

    key = lambda i: b'{"id":%d}' % i  # noqa: E731
    # the old names hold nothing live: a, b (renamed on to c), t_old (dropped), leaving
    assert _live(kafka, f"{db}.a") == {b'{"id":77}'}  # the stray key only
    for old in ("b", "t_old", "leaving"):
        assert _live(kafka, f"{db}.{old}") == set(), old
    assert _live(kafka, f"{db}.gone9") == set()  # not captured: no topic, or an empty one
    c = _latest(kafka, f"{db}.c")
    assert set(k for k, v in c.items() if v is not None) == (
        {key(i) for i in range(1, 121) if not 11 <= i <= 20} | {key(1000), key(2000)})
    assert b'"v":-3' in (c[key(3)] or b""), c[key(3)]
    t = _latest(kafka, f"{db}.t")
    assert {k for k, v in t.items() if v is not None} == (
        {key(i) for i in range(1, 121) if i != 5} | {key(500)})
    assert t[key(5)] is None, "the row the new table lacks is still live"
    # the swap rewrote nothing needlessly: the one key tombstoned is the one the new table
    # lacks; every other key of `t` was overwritten in place by its snapshot row
    assert {m.key for m in sink_topic(kafka, f"{db}.t") if m.value is None} == {key(5)}
    assert b'"name":"changed"' in (t[key(2)] or b"") and b'"c":7' in (t[key(2)] or b"")
    text = logs["capture"].read_text()
    assert "Traceback" not in text, text[-3000:]
    assert re.search(rf"renamed to captured name\(s\) {db}\.b at ", text), text[-3000:]


def test_a_kill_in_the_middle_of_a_renamed_tables_snapshot_under_writes(
        mariadb: Any, kafka: Any, fresh_db: str, tmp_path: Path) -> None:
    db = fresh_db
    with admin_conn(mariadb, db) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE staged (id INT PRIMARY KEY, name VARCHAR(40), v INT)")
        cur.executemany("INSERT INTO staged VALUES (%s, %s, %s)",
                        [(i, f"n{i}", i) for i in range(1, 3001)])
        # the table `staged` is swapped in for: some keys of both, some only its own
        cur.execute("CREATE TABLE live (id INT PRIMARY KEY, name VARCHAR(40), v INT)")
        cur.executemany("INSERT INTO live VALUES (%s, %s, %s)",
                        [(i, f"old{i}", 0) for i in (*range(1, 101), *range(5000, 5011))])
    # only `live` is captured: `staged` arrives by the swap, 120 chunks to read
    config = write_pipeline(tmp_path / "p.yaml", mariadb, kafka, f"rk-{db}", f"{db}.live",
                            source={"scan.startup.mode": "initial",
                                    "scan.incremental.snapshot.chunk.size": 25},
                            sink={"sink.delivery-guarantee": "exactly-once"})
    topic = f"{db}.live"
    logs = {"capture": tmp_path / "capture.log", "sink": tmp_path / "sink.log"}
    procs = {n: start_command(n, config, logs[n]) for n in logs}
    writer = _Writer(mariadb, db, "live", 3001)
    thread = threading.Thread(target=writer.run, daemon=True)
    try:
        wait_for(lambda: len(_live(kafka, topic)) == 111, 120, "the old `live` written")
        with admin_conn(mariadb, db) as conn, conn.cursor() as cur:
            cur.execute("RENAME TABLE live TO live_old, staged TO live")
        thread.start()  # changes to `live` while its snapshot is read
        text = kill_capture_mid_snapshot(procs, config, logs["capture"],
                                         "renamed to captured name(s)")
        assert re.search(rf"snapshot goes on at {db}\.live after key", text), text[-3000:]
        writer.stop.set()
        thread.join(30)
        assert writer.error is None, writer.error
        wait_for(lambda: _equal(config, procs), 180, "verify equal after the snapshot")
    finally:
        writer.stop.set()
        codes = {n: stop(p, timeout=60) for n, p in procs.items()}
    assert codes == {"capture": 0, "sink": 0}, {n: logs[n].read_text()[-3000:] for n in logs}
    assert not _went_back(kafka, topic)
    # exactly once: a key never written again with the value it already had
    values: dict[bytes, list[bytes | None]] = {}
    for m in sink_topic(kafka, topic):
        values.setdefault(m.key, []).append(m.value)
    repeated = {k: vs for k, vs in values.items()
                if any(a is not None and a == b for a, b in pairwise(vs))}
    assert not repeated, list(repeated.items())[:3]
    assert len(_live(kafka, topic)) > 2500
    # the swap across the kill: the old table's own keys tombstoned once its successor was
    # written, and no key the successor has was tombstoned on the way (only deleted ones)
    live = _live(kafka, topic)
    assert not live & {b'{"id":%d}' % i for i in range(5000, 5011)}
    with admin_conn(mariadb, db) as conn, conn.cursor() as cur:
        cur.execute("SELECT id FROM live WHERE id <= 100")
        present = {b'{"id":%d}' % row[0] for row in cur.fetchall()}
    assert not present & {k for k, vs in values.items() if None in vs}


def test_drop_database_tombstones_every_table_of_it(
        source: Source, kafka: Any, tmp_path: Path) -> None:
    # a database of its own, dropped by the test itself (fresh_source_db would drop it too)
    db = f"t_dropdb_{tmp_path.name[-12:].replace('-', '_')}"
    with admin_conn(source) as conn, conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{db}`")
        cur.execute(f"CREATE DATABASE `{db}`")
        for name in ("x", "y"):
            cur.execute(f"CREATE TABLE `{db}`.{name} (id INT PRIMARY KEY, v INT)")
            cur.executemany(f"INSERT INTO `{db}`.{name} VALUES (%s, %s)",
                            [(i, i) for i in range(1, 31)])
    config = write_pipeline(tmp_path / "p.yaml", source, kafka, f"dd-{db}", f"{db}.[a-z]+",
                            source={"scan.startup.mode": "initial"})
    logs = {"capture": tmp_path / "capture.log", "sink": tmp_path / "sink.log"}
    procs = {n: start_command(n, config, logs[n]) for n in logs}
    try:
        wait_for(lambda: _equal(config, procs), 180, "the first snapshot in the topics")
        with admin_conn(source) as conn, conn.cursor() as cur:
            cur.execute(f"INSERT INTO `{db}`.y VALUES (100, 100)")
            cur.execute(f"DROP DATABASE `{db}`")
        wait_for(lambda: not _live(kafka, f"{db}.x") and not _live(kafka, f"{db}.y"), 120,
                 "every key of the dropped database tombstoned")
        report = cli("verify", "--config", str(config))
        assert report.returncode == 0, report.stdout + report.stderr
    finally:
        codes = {n: stop(p, timeout=60) for n, p in procs.items()}
    assert codes == {"capture": 0, "sink": 0}, {n: logs[n].read_text()[-3000:] for n in logs}
    y = _latest(kafka, f"{db}.y")
    # the insert just before the drop: written then tombstoned, or (read once the database
    # was gone, its key unknown) not written at all
    assert set(y) - {b'{"id":100}'} == {b'{"id":%d}' % i for i in range(1, 31)}, y
    assert not any(y.values()), y
