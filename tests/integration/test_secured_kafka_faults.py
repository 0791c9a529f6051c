"""Faults against Kafka as production runs it (issue 47): the secured broker of
test_secured_kafka.py (TLS, SCRAM, the StandardAuthorizer with no ACL meaning no access), a
pipeline configured with Java client settings only and a principal holding exactly the ACLs
`cdc-ingest acls` prints, exactly-once with transaction metadata, capture and the sink run
as separate processes and each SIGKILLed once while a :class:`LoggedWriter` writes: each
killed (the sink with its Spark JVM and Python workers) while its Kafka transaction holds
records, found by stopping it in slices, so each kill leaves records its restart aborts.

What a user sees afterwards is checked against what MySQL says happened (its ``changes``
table, written in each transaction): every key's messages in the sink topic are exactly its
changes (no duplicate, nothing lost, in order), every transaction has one BEGIN and one END
in the metadata topic that count its one message, `verify`, `status`, `watch --transactions`
and a re-snapshot requested with `cdc-ingest snapshot` work through the secured login, and
neither the SCRAM password nor the trust store's is in any log or output.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pymysql
import yaml
from confluent_kafka import Consumer, TopicPartition

from cdc_ingest.services.kafka_secured import TRUST_PASS
from tests.integration.faults import LoggedWriter, expected_sequences
from tests.integration.pipeline_helpers import (
    child_pids,
    cli,
    process_alive,
    sink_topic,
    start_command,
    stop,
    wait_for,
    written_batches,
)
from tests.integration.test_secured_kafka import SCRAM, _grants, _pipeline

INITIAL = 60  # rows of t before the pipeline starts (ids 1..60), the snapshot's
SECRET = "Scram-faults-7f3c9a"  # the SCRAM password: must appear in no log or output


def _tree(pid: int) -> list[int]:
    """``pid`` and every process below it (a sink: its Spark JVM, the JVM's Python workers)."""
    out = [pid]
    for kid in child_pids(pid):
        out += _tree(kid)
    return out


def _signal_tree(proc: subprocess.Popen[bytes], signum: int) -> list[int]:
    """Send ``signum`` to a process and all its descendants, again to any found after (a
    stopped process forks no more); returns their pids."""
    done: list[int] = []
    while todo := [p for p in _tree(proc.pid) if p not in done]:
        for pid in reversed(todo):  # the leaves first
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)
        done += todo
        if signum not in (signal.SIGSTOP, signal.SIGKILL):
            break
    return done


def _kill_inside_transaction(proc: subprocess.Popen[bytes], is_open: Callable[[], bool],
                             run_for: float = 0.05, settle: float = 0.3,
                             timeout: float = 60) -> None:
    """SIGKILL ``proc`` and all its descendants (an OOM kill of its container) while the
    Kafka transaction it writes is open, on purpose rather than by a poll's luck: it runs in
    slices of ``run_for`` seconds, all of it SIGSTOPped between them, until ``is_open()``
    holds ``settle`` seconds into a stop (a commit already sent lands meanwhile)."""
    deadline = time.monotonic() + timeout
    slices = 0
    while True:
        assert proc.poll() is None, f"pid {proc.pid} exited with {proc.returncode}"
        pids = _signal_tree(proc, signal.SIGSTOP)
        inside = False
        try:
            time.sleep(settle)
            inside = is_open()
        finally:
            if not inside:  # running on, also when the test fails here
                _signal_tree(proc, signal.SIGCONT)
        if inside:
            break
        assert time.monotonic() < deadline, f"no open transaction in {timeout}s of slices"
        slices += 1
        time.sleep(run_for)
    print(f"killed {pids} inside a transaction after {slices} slices")
    pids += _signal_tree(proc, signal.SIGKILL)
    proc.wait(30)
    wait_for(lambda: not any(process_alive(p) for p in pids), timeout=30,
             what=f"the killed processes {pids} to exit")


class _OpenTransactions:
    """Whether a topic holds records of a Kafka transaction still open (a partition's high
    watermark past its last stable offset), read through the harness's own door: the moment
    its writer is in the middle of writing."""

    def __init__(self, broker: Any, topic: str) -> None:
        self.topic = topic
        self.consumers = [Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "unused",
                                    "enable.auto.commit": False, "isolation.level": level})
                          for level in ("read_uncommitted", "read_committed")]

    def __call__(self) -> bool:
        high, stable = self.consumers
        partitions = high.list_topics(self.topic, timeout=10).topics[self.topic].partitions
        for p in partitions:
            tp = TopicPartition(self.topic, p)
            if high.get_watermark_offsets(tp, timeout=10)[1] > stable.get_watermark_offsets(
                    tp, timeout=10)[1]:
                return True
        return False

    def aborted(self) -> int:
        """How many records of the topic no read_committed reader ever gets: those of
        transactions aborted (the kill's, once its writer started again)."""
        high, stable = self.consumers
        total = committed = 0
        for p in high.list_topics(self.topic, timeout=10).topics[self.topic].partitions:
            tp = TopicPartition(self.topic, p)
            end = high.get_watermark_offsets(tp, timeout=10)[1]
            assert stable.get_watermark_offsets(tp, timeout=10)[1] == end, "still open"
            for consumer in self.consumers:
                consumer.assign([TopicPartition(self.topic, p, 0)])
                n, position, deadline = 0, 0, time.monotonic() + 30
                while position < end:
                    assert time.monotonic() < deadline, f"{self.topic}: stuck at {position}"
                    batch = consumer.consume(1000, timeout=1)
                    n += sum(1 for m in batch if m.error() is None)
                    position = consumer.position([tp])[0].offset
                if consumer is high:
                    total += n
                else:
                    committed += n
        return total - committed

    def close(self) -> None:
        for consumer in self.consumers:
            consumer.close()


def _gtid_seq(tx_id: str) -> int:
    """The sequence number of MariaDB's ``domain-server-sequence``."""
    return int(tx_id.rsplit("-", 1)[1])


def _headers(m: Any) -> dict[str, str]:
    return {k: v.decode() for k, v in m.headers}


def test_secured_pipeline_survives_kills_exactly_once_with_transaction_metadata(
        mariadb: Any, secured_kafka: Any, fresh_db: str, tmp_path: Path) -> None:
    seed = int(os.environ.get("CDC_INGEST_TEST_SEED", random.randrange(1 << 30)))
    print(f"workload seed {seed}")
    rng = random.Random(seed)
    db, broker = fresh_db, secured_kafka
    name, topic, meta_topic = f"secfault-{db}", f"{db}.t", f"{db}-transactions"
    user = "cdc-faults"
    broker.add_scram_user(user, SECRET)
    config = _pipeline(tmp_path / "p.yaml", mariadb, db, name, {
        "bootstrap.servers": broker.sasl_bootstrap, "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": f'{SCRAM} required username="{user}" password="{SECRET}";',
        "ssl.truststore.location": str(broker.tls / "truststore.jks"),
        "ssl.truststore.password": TRUST_PASS})
    doc = yaml.safe_load(config.read_text())
    doc["source"]["server-id"] = "5910-5914"
    # a name under neither the pipeline's prefix nor the database's: `acls` must name it
    doc["sink"]["sink.transaction-metadata.topic"] = meta_topic
    config.write_text(yaml.safe_dump(doc, sort_keys=False))

    writer = LoggedWriter(mariadb.admin, db, seed, pause_s=0.02)
    writer.create_tables()
    with pymysql.connect(**mariadb.admin, database=db, autocommit=True) as conn, \
            conn.cursor() as cur:  # the snapshot's rows, logged as the writer logs its own
        cur.executemany("INSERT INTO t (id, v, pad) VALUES (%s, %s, 'x')",
                        [(i, i * 1000) for i in range(1, INITIAL + 1)])
        cur.executemany("INSERT INTO changes (id, v) VALUES (%s, %s)",
                        [(i, i * 1000) for i in range(1, INITIAL + 1)])

    outputs: list[tuple[str, str]] = []  # every command's output, searched for secrets

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        done = cli(args[0], "--config", str(config), *args[1:])
        outputs.append((" ".join(args), done.stdout + done.stderr))
        return done

    printed = run("acls")
    assert printed.returncode == 0, printed.stdout + printed.stderr
    assert f"--allow-principal 'User:{user}'" in printed.stdout, printed.stdout
    assert f"--topic '{meta_topic}' --resource-pattern-type literal" in printed.stdout, (
        f"`cdc-ingest acls` grants nothing on the transaction metadata topic {meta_topic}:\n"
        + printed.stdout)
    broker.allow(f"User:{user}", _grants(printed.stdout))
    check = run("validate")
    assert check.returncode == 0, check.stdout + check.stderr

    logs = {"capture": tmp_path / "capture.log", "sink": tmp_path / "sink.log"}
    procs = {n: start_command(n, config, logs[n]) for n in logs}

    def running() -> bool:
        for n, proc in procs.items():
            if proc.poll() is not None:
                raise AssertionError(f"{n} exited by itself with code {proc.returncode}; its "
                                     f"log ends:\n{logs[n].read_text()[-3000:]}")
        return True

    def sequences(messages: list[Any]) -> dict[int, list[int | None]]:
        out: dict[int, list[int | None]] = {}
        for m in messages:
            out.setdefault(orjson.loads(m.key)["id"], []).append(
                None if m.value is None else orjson.loads(m.value)["v"])
        return out

    def sink_messages() -> list[Any]:
        running()
        return sink_topic(broker, topic)  # read back through the harness's own door

    watch_log = tmp_path / "watch.log"
    capture_open = _OpenTransactions(broker, f"cdc-ingest.{name}.changelog")
    sink_open = _OpenTransactions(broker, topic)
    try:
        # 1. the snapshot, then live changes
        wait_for(lambda: len(sink_messages()) >= INITIAL, timeout=180,
                 what="the snapshot in the sink topic")
        writer.start()
        wait_for(lambda: len(sink_messages()) >= INITIAL + 100, timeout=60,
                 what="100 live changes in the sink topic")

        # 2. SIGKILL capture in the middle of a transaction of the changelog, start it again
        time.sleep(rng.uniform(0.2, 1.5))
        _kill_inside_transaction(procs["capture"], capture_open)
        procs["capture"] = start_command("capture", config, logs["capture"])
        at_restart = len(sink_messages())
        wait_for(lambda: len(sink_messages()) > at_restart + 50, timeout=60,
                 what="changes of the restarted capture in the sink topic")
        # the sink, with its Spark JVM and the JVM's Python workers, in the middle of a
        # transaction of the sink topic; then started again
        time.sleep(rng.uniform(0.2, 1.5))
        _kill_inside_transaction(procs["sink"], sink_open)
        procs["sink"] = start_command("sink", config, logs["sink"])
        batches = written_batches(logs["sink"])
        wait_for(lambda: running() and written_batches(logs["sink"]) > batches + 2,
                 timeout=120, what="the restarted sink writing batches")

        # 3. the writer stops; the sink topic comes to hold every change
        wait_for(lambda: writer.committed >= 400, timeout=60, what="400 writer transactions")
        writer.stop()
        assert writer.failed == 0, writer.failed
        expected = expected_sequences(mariadb.admin, db)
        total = sum(len(v) for v in expected.values())
        wait_for(lambda: len(sink_messages()) >= total, timeout=120,
                 what=f"{total} messages in the sink topic")
        time.sleep(2)  # anything written twice would have come meanwhile
        messages = sink_messages()

        # 4. exactly once: each key's messages are its changes as MySQL logged them (the
        # snapshot's row first), no more, no fewer
        got = sequences(messages)
        different = [k for k in expected if got.get(k) != expected[k]]
        assert not different, (
            f"seed {seed}: {len(different)} keys differ, e.g. {different[0]}: expected "
            f"{expected[different[0]]}, got {got.get(different[0])}")
        assert set(got) == set(expected)
        assert len(messages) == total
        # the kills cut real writes: each left records its restart aborted
        aborted = {"changelog": capture_open.aborted(), "sink topic": sink_open.aborted()}
        print(f"records aborted: {aborted}")
        assert all(aborted.values()), aborted

        # ... and in MySQL's commit order (one writer: its changes' seq is commit order), each
        # message with the transaction.id of its own transaction
        with pymysql.connect(**mariadb.admin, database=db) as conn, conn.cursor() as cur:
            cur.execute("SELECT id, v FROM changes WHERE seq > %s ORDER BY seq", (INITIAL,))
            changes = [(int(k), None if v is None else int(v)) for k, v in cur.fetchall()]
        live = [m for m in messages if "transaction.id" in _headers(m)]
        assert len(messages) - len(live) == INITIAL  # the snapshot's rows carry none
        tx_of = Counter(_headers(m)["transaction.id"] for m in live)
        assert not [t for t, n in tx_of.items() if n != 1], "a transaction.id twice"
        in_order = [(orjson.loads(m.key)["id"], None if m.value is None
                     else orjson.loads(m.value)["v"], _headers(m)["transaction.id"])
                    for m in sorted(live, key=lambda m: _gtid_seq(_headers(m)["transaction.id"]))]
        wrong = next((i for i, (a, b) in enumerate(zip(in_order, changes, strict=False))
                      if a[:2] != b), None)
        assert wrong is None and len(in_order) == len(changes), (
            f"{len(in_order)} messages of {len(changes)} transactions; in GTID order, the "
            f"first not MySQL's change: {wrong}: " + (
                "" if wrong is None else f"{in_order[wrong]} for {changes[wrong]}"))
        assert {(_headers(m)["transaction.total_order"],
                 _headers(m)["transaction.data_collection_order"]) for m in live} == {("1", "1")}

        # every MySQL transaction's BEGIN and END exactly once, in commit order
        wait_for(lambda: running() and len(sink_topic(broker, meta_topic)) >= 2 * len(changes),
                 timeout=60, what=f"{len(changes)} BEGIN/END pairs in {meta_topic}")
        time.sleep(2)
        records = sink_topic(broker, meta_topic)
        values = [orjson.loads(r.value) for r in records]
        assert len(values) == 2 * len(changes), (len(values), len(changes))
        assert {r.partition for r in records} == {0}
        ids = [v["id"] for v in values[::2]]
        assert [v["status"] for v in values] == ["BEGIN", "END"] * len(changes)
        assert [v["id"] for v in values[1::2]] == ids
        assert [orjson.loads(r.key) for r in records] == [{"id": v["id"]} for v in values]
        assert len(set(ids)) == len(ids), "a transaction's BEGIN/END twice"
        assert ids == sorted(ids, key=_gtid_seq)
        assert set(ids) == set(tx_of), "BEGIN/END of other transactions than the messages'"
        ends = {(v["event_count"], orjson.dumps(v["data_collections"])) for v in values[1::2]}
        assert ends == {(1, orjson.dumps([{"data_collection": topic, "event_count": 1}]))}

        # 5. verify and status through the secured login
        live_keys = [k for k, seq in expected.items() if seq[-1] is not None]
        report = run("verify")
        assert report.returncode == 0, report.stdout + report.stderr
        equal = f"MySQL rows {len(live_keys)}, topic keys {len(live_keys)}: equal"
        assert equal in report.stdout, report.stdout
        status = run("status")
        assert re.search(r"^\s+total\s+0$", status.stdout, re.MULTILINE), status.stdout  # lag
        assert status.returncode == 0, status.stdout + status.stderr

        # 6. watch --transactions: one block per transaction, in commit order
        watcher = start_command("watch", config, watch_log, "--transactions",
                                "--from-beginning")
        try:
            wait_for(lambda: watch_log.read_text().count("\ntransaction ") >= len(ids)
                     or watcher.poll() is not None, timeout=90,
                     what=f"{len(ids)} transaction blocks from watch")
        finally:
            watcher.send_signal(signal.SIGINT)
            code = watcher.wait(30)
        watched = watch_log.read_text()
        assert code == 0, watched[-3000:]
        heads = [line for line in watched.splitlines() if line.startswith("transaction ")]
        assert [h.split()[1] for h in heads] == ids, watched[-3000:]
        assert all(f" (1 message: {topic} 1) committed " in h for h in heads), heads[:5]
        standalone = [line for line in watched.splitlines() if line.startswith(f"{topic} p")]
        assert len(standalone) == INITIAL, watched[:3000]  # the snapshot's rows

        # 7. a re-snapshot requested while capture runs
        done_before = logs["capture"].read_text().count("snapshot done")
        requested = run("snapshot", topic)
        assert requested.returncode == 0, requested.stdout + requested.stderr
        assert f"snapshot of {topic} requested" in requested.stdout, requested.stdout
        wait_for(lambda: running()
                 and logs["capture"].read_text().count("snapshot done") > done_before,
                 timeout=90, what="the requested snapshot done")
        wait_for(lambda: len(sink_messages()) >= total + 2 * len(live_keys), timeout=90,
                 what="the re-snapshot's tombstones and rows in the sink topic")
        again = run("verify")
        assert again.returncode == 0, again.stdout + again.stderr
        assert equal in again.stdout, again.stdout
        seen = {(m.partition, m.offset) for m in messages}
        rewritten = sequences([m for m in sink_messages() if (m.partition, m.offset) not in seen])
        assert rewritten == {k: [None, expected[k][-1]] for k in live_keys}, rewritten
        assert len(sink_topic(broker, meta_topic)) == len(records), (
            "the re-snapshot's rows got transaction metadata")
    finally:
        capture_open.close()
        sink_open.close()
        writer.stop()
        codes = {n: stop(p, timeout=90) for n, p in procs.items()}
    assert codes == {"capture": 0, "sink": 0}, {n: logs[n].read_text()[-3000:] for n in logs}

    # 8. no secret in any log or output
    # logs, and every file the pipeline wrote (state.dir: Spark's checkpoint)
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p != config]
    assert set(logs.values()) | {watch_log} <= set(written)
    said = {**{str(p): p.read_bytes().decode(errors="replace") for p in written},
            **{f"output of {args}": text for args, text in outputs}}
    for secret in (SECRET, TRUST_PASS):
        leaked = [where for where, text in said.items() if secret in text]
        assert not leaked, f"{secret!r} in {leaked}"
