"""`cdc-ingest start` rides through what passes by itself, losing and repeating nothing.

* MariaDB stopped for 20 s under writes, then a switch (a moved virtual IP: a TCP proxy) to a
  second MariaDB server replicating from the first with GTIDs: capture reconnects, or exits
  11 and `start` restarts it with backoff; `start` never exits.
* The binlog connection cut inside a large transaction (a slowed proxy makes it land
  there): capture goes on from the transaction's committed row, each row exactly once.
* MySQL restarted under writes, then capture frozen (SIGSTOP) past
  ``transaction.timeout.ms``: the broker aborts its open transaction; on SIGCONT capture
  says so, exits 11, and `start` restarts it.

A writer changes ``t`` and logs each change in the same MySQL transaction, so the server's
log is the truth even for commits the client saw fail. Every key's messages in the sink
topic (exactly-once) must be its logged change sequence exactly, and ``verify`` equal.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pymysql
from confluent_kafka import Consumer, TopicPartition

from cdc_ingest.services.mariadb import MariaDB
from tests.integration.faults import LoggedWriter, Sequences, TcpProxy, expected_sequences
from tests.integration.pipeline_helpers import (
    changelog,
    cli,
    rows_of,
    sink_topic,
    start_capture,
    start_command,
    stop,
    wait_for,
    write_pipeline,
)

APP = {"user": "app", "password": "app"}


def _sequences(kafka: Any, topic: str) -> Sequences:
    out: Sequences = {}
    for m in sink_topic(kafka, topic):
        value = None if m.value is None else orjson.loads(m.value)["v"]
        out.setdefault(orjson.loads(m.key)["id"], []).append(value)
    return out


def _wait_equal(kafka: Any, topic: str, expected: Sequences) -> None:
    try:
        wait_for(lambda: _sequences(kafka, topic) == expected, timeout=240,
                 what="every key's logged change sequence in the sink topic")
    except AssertionError:
        got = _sequences(kafka, topic)
        wrong = sorted(k for k in set(expected) | set(got) if got.get(k) != expected.get(k))
        raise AssertionError(f"{len(wrong)} keys differ, e.g. " + "; ".join(
            f"{k}: logged {expected.get(k)}, topic {got.get(k)}" for k in wrong[:4])) from None


def _sql(kwargs: dict[str, Any], *statements: str) -> Any:
    with pymysql.connect(**kwargs, autocommit=True) as conn, conn.cursor() as cur:
        for sql in statements:
            cur.execute(sql)
        return cur.fetchall()


def _running_for(proc: subprocess.Popen[bytes], seconds: float, log: Path) -> None:
    """Wait ``seconds``, failing at once if ``proc`` exits meanwhile."""
    try:
        code = proc.wait(seconds)
    except subprocess.TimeoutExpired:
        return
    raise AssertionError(f"`start` exited {code}: {log.read_text()[-3000:]}")


def _open_transaction(bootstrap: str, topic: str) -> bool:
    """Whether ``topic`` has records of a transaction not yet ended: a partition whose end
    (read_uncommitted) lies past its last stable offset (read_committed's end)."""
    ends = {}
    for isolation in ("read_uncommitted", "read_committed"):
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe",
                             "isolation.level": isolation, "enable.auto.commit": False})
        try:
            partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
            ends[isolation] = [consumer.get_watermark_offsets(TopicPartition(topic, p), 10,
                                                              cached=False)[1]
                               for p in sorted(partitions)]
        finally:
            consumer.close()
    return any(u > c for u, c in zip(ends["read_uncommitted"], ends["read_committed"],
                                     strict=True))


def _freeze_inside_a_transaction(pid: int, kafka: Any, topic: str) -> None:
    """SIGSTOP ``pid`` (capture) at a moment its Kafka transaction is open. Capture commits
    within 50 ms of a MySQL transaction's end when caught up, so a stop at a random moment
    often finds none open: stop, let a commit already on its way land, look, and resume
    and try again until one is open and stays open."""
    for attempt in range(100):
        os.kill(pid, signal.SIGSTOP)
        time.sleep(0.5)
        if _open_transaction(kafka.bootstrap, topic):
            return
        os.kill(pid, signal.SIGCONT)
        time.sleep(0.02 * (attempt % 7))
    raise AssertionError(f"capture never stopped with a transaction open in {topic}")


def _child_pid(parent: subprocess.Popen[bytes], command: str) -> int:
    """The pid of `start`'s child running ``cdc_ingest.cli <command>``."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (int(fields[1]) == parent.pid and b"cdc_ingest.cli" in cmdline
                and command.encode() in cmdline):
            return int(stat.parent.name)
    raise AssertionError(f"no {command} child of `start` (pid {parent.pid})")


def test_mariadb_stopped_for_20s_then_failed_over_to_a_gtid_replica_under_writes(
    kafka: Any, tmp_path: Path
) -> None:
    primary = MariaDB(tmp_path / "primary")
    replica = MariaDB(tmp_path / "replica")
    proxy: TcpProxy | None = None
    writer: LoggedWriter | None = None
    proc = None
    log = tmp_path / "start.log"
    try:
        primary.start()
        replica.restart_with(server_id=2, log_slave_updates=True)
        # The replica's history is the primary's, from its first transaction.
        _sql(replica.admin, "STOP SLAVE", "RESET MASTER", "SET GLOBAL gtid_slave_pos = ''",
             f"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={primary.port}, "
             "MASTER_USER='root', MASTER_PASSWORD='root', MASTER_USE_GTID=slave_pos",
             "START SLAVE")
        # The application's user: read_only holds it off (root is exempt from read_only).
        _sql(primary.admin, "CREATE DATABASE rt", "CREATE USER app@'%' IDENTIFIED BY 'app'",
             "GRANT ALL ON rt.* TO app@'%'")
        proxy = TcpProxy(primary.port)
        via_proxy = {"host": "127.0.0.1", "port": proxy.port}
        writer = LoggedWriter({**via_proxy, **APP}, "rt", seed=20)
        writer.create_tables()
        config = write_pipeline(
            tmp_path / "p.yaml", SimpleNamespace(port=proxy.port, cdc=primary.cdc), kafka,
            "ride", "rt.t",
            source={"capture.transaction.max-interval": "200ms"},
            sink={"sink.delivery-guarantee": "exactly-once"},
        )
        proc = start_command("start", config, log)
        wait_for(lambda: "starts at" in log.read_text(), 120, "capture to start")
        writer.start()
        _running_for(proc, 5, log)

        primary.stop()  # a clean shutdown, under writes
        _running_for(proc, 20, log)
        primary.start()
        _running_for(proc, 10, log)

        # Switch over: writes held off, the replica caught up, the "virtual IP" moved.
        _sql(primary.admin, "SET GLOBAL read_only = 1")
        (pos,), = _sql(primary.admin, "SELECT @@gtid_binlog_pos")
        (waited,), = _sql(replica.admin, f"SELECT MASTER_GTID_WAIT('{pos}', 60)")
        assert waited == 0, f"the replica did not reach {pos}"
        _sql(replica.admin, "STOP SLAVE", "RESET SLAVE ALL")
        proxy.switch(replica.port)
        primary.stop()
        _running_for(proc, 10, log)
        writer.stop()
        assert writer.committed > 200 and writer.failed > 0, (writer.committed, writer.failed)

        _wait_equal(kafka, "rt.t", expected_sequences({**via_proxy, **APP}, "rt"))
        report = cli("verify", "--config", str(config))
        assert report.returncode == 0, report.stdout + report.stderr
        assert proc.poll() is None, log.read_text()[-3000:]
    finally:
        if writer is not None:
            writer.stop()
        code = stop(proc, timeout=90) if proc is not None else 0
        if proxy is not None:
            proxy.close()
        primary.stop(wipe=True)
        replica.stop(wipe=True)
    text = log.read_text()
    assert code == 0, text[-3000:]
    assert "reading again from" in text, text[-3000:]  # capture reconnected by itself
    assert "Traceback" not in text, text[-3000:]


def test_mysql_restarted_then_capture_frozen_past_the_transaction_timeout(
    mysql: Any, kafka: Any, fresh_mysql_db: str, tmp_path: Path
) -> None:
    db = fresh_mysql_db
    writer = LoggedWriter(mysql.admin, db, seed=21)
    writer.create_tables()
    config = write_pipeline(
        tmp_path / "p.yaml", mysql, kafka, f"frozen-{db}", f"{db}.t",
        source={"capture.transaction.max-interval": "2s"},
        sink={"sink.delivery-guarantee": "exactly-once",
              "properties.transaction.timeout.ms": "15000"},
    )
    log = tmp_path / "start.log"
    proc = start_command("start", config, log)
    try:
        wait_for(lambda: "starts at" in log.read_text(), 120, "capture to start")
        writer.start()
        _running_for(proc, 5, log)
        mysql.restart_with()  # stopped and started again under writes
        _running_for(proc, 10, log)

        capture = _child_pid(proc, "capture")
        # frozen with its Kafka transaction open: it stays open, and times out
        _freeze_inside_a_transaction(capture, kafka, f"cdc-ingest.frozen-{db}.changelog")
        _running_for(proc, 30, log)  # 15 s timeout + the broker's 10 s abort interval
        os.kill(capture, signal.SIGCONT)
        wait_for(lambda: "starting it again" in log.read_text(), 60, "capture restarted")
        _running_for(proc, 10, log)
        writer.stop()
        assert writer.committed > 200 and writer.failed > 0, (writer.committed, writer.failed)

        _wait_equal(kafka, f"{db}.t", expected_sequences(mysql.admin, db))
        report = cli("verify", "--config", str(config))
        assert report.returncode == 0, report.stdout + report.stderr
    finally:
        writer.stop()
        code = stop(proc, timeout=90)
    text = log.read_text()
    assert code == 0, text[-3000:]
    assert "longer than transaction.timeout.ms (15000 ms)" in text, text[-3000:]
    assert "Traceback" not in text, text[-3000:]


def test_a_binlog_connection_cut_inside_a_large_transaction_repeats_and_loses_no_row(
    mariadb: Any, kafka: Any, fresh_db: str, tmp_path: Path
) -> None:
    """The cut lands on purpose inside one 10,000-row transaction: the proxy slows the
    binlog to 100 kB/s, capture commits every 500 rows, and the connection is cut once 1,500
    of them are in the changelog. Capture goes on from the committed row of that transaction
    (not from its start, as the replication library's own reconnect would), so the
    changelog holds each row exactly once."""
    proxy = TcpProxy(mariadb.port)
    with pymysql.connect(**mariadb.admin, database=fresh_db, autocommit=True) as conn, \
            conn.cursor() as cur:
        cur.execute("CREATE TABLE big (id INT PRIMARY KEY, pad VARCHAR(100))")
    name = f"cut-{fresh_db}"
    config = write_pipeline(
        tmp_path / "p.yaml", SimpleNamespace(port=proxy.port, cdc=mariadb.cdc), kafka, name,
        f"{fresh_db}.big", source={"capture.transaction.max-rows": 500})
    log = tmp_path / "capture.log"
    proc = start_capture(config, log)
    try:
        wait_for(lambda: "starts at" in log.read_text(), 120, "capture to start")
        proxy.throttle = 100_000
        with pymysql.connect(**mariadb.admin, database=fresh_db) as conn, \
                conn.cursor() as cur:
            cur.executemany("INSERT INTO big VALUES (%s, REPEAT('p', 100))",
                            [(i,) for i in range(1, 10_001)])
            conn.commit()
        wait_for(lambda: len(rows_of(changelog(kafka, name))) >= 1500, 120,
                 "part of the transaction in the changelog")
        # Cut first, then lift the throttle: lifted first, the megabytes the server has
        # already sent into the proxy's socket buffer reach capture at full speed before
        # the cut, and the cut lands after the transaction (failed in CI that way).
        proxy.switch(mariadb.port)  # every connection cut, mid-transaction
        proxy.throttle = None
        records = wait_for(
            lambda: (r := rows_of(changelog(kafka, name))) and len(r) >= 10_000 and r, 120,
            "the whole transaction in the changelog")
        assert proc.poll() is None, log.read_text()[-3000:]
    finally:
        code = stop(proc, timeout=60)
        proxy.close()
    text = log.read_text()
    assert code == 0, text[-3000:]
    ids = sorted(r["after"]["id"] for r in records)
    assert ids == list(range(1, 10_001)), f"{len(ids)} records, {len(set(ids))} distinct ids"
    assert re.search(r"reading again from \S+#[1-9]\d* ", text), text[-3000:]
