"""pt-online-schema-change (Percona Toolkit) on a captured table under writes, both servers.

pt-osc never alters the table itself: it creates ``_t_new`` with the new definition, keeps
it in step with triggers on ``t`` while copying ``t`` into it in chunks, then swaps
(``RENAME TABLE t TO _t_old, _t_new TO t``) and drops ``_t_old``. The pipeline captures
``t`` alone, or the whole database (``_t_new`` and ``_t_old`` included, as a user selecting
every table would), and one writer changes ``t`` all along, a few hundred changes a second.

Four changes go through one pipeline run, each under writes: a column added with a default,
columns widened (``VARCHAR(40)`` -> ``VARCHAR(200)``, ``INT`` -> ``BIGINT``, then written with
values only the new types hold), a column dropped, and a column added to the primary key.
After each one ``verify`` must find the topics equal to MySQL with capture and sink still
running, and the sink topic's latest message of every key must be MySQL's row.

What the pipeline does (docs/output-contract.md, "Schema changes", the rename row): the
swap is a rename, so at it every key of ``t`` is tombstoned and the table now named ``t``
is snapshotted again, under writes; when captured, ``_t_new``'s keys are tombstoned as a
name that holds no table any more. The key change is no exception, with
``schema.change.behavior`` ``lenient`` as with ``evolve``: capture does not stop (the old
keys are gone before the first row under the new key) and no in-place re-key happens; ``t``
comes back keyed ``(id, k)``.
"""

from __future__ import annotations

import itertools
import random
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest

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

ROWS = 1500  # t's rows before the first change: 15 chunks of pt-osc's copy
STEPS = (
    ("add", "ADD COLUMN c INT NOT NULL DEFAULT 7"),
    ("modify", "MODIFY name VARCHAR(200), MODIFY v BIGINT"),
    ("drop", "DROP COLUMN note"),
    ("key", "DROP PRIMARY KEY, ADD PRIMARY KEY (id, k)"),
)


def _ptosc(source: Source, db: str, alter: str) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("pt-online-schema-change")
    assert tool, ("pt-online-schema-change is not installed: scripts/setup.sh installs "
                  "percona-toolkit with CDC_INGEST_SETUP_TESTS=1")
    admin = source.admin
    dsn = (f"h=127.0.0.1,P={admin['port']},u={admin['user']},p={admin['password']},"
           f"D={db},t=t")
    # MySQL 9.7's EXPLAIN prints a tree by default (explain_format=TREE), in which
    # Percona Toolkit 3.2.1 finds no row estimate: it takes the table for empty and copies
    # it in one INSERT ... SELECT instead of chunks. MariaDB has no such variable.
    explain = [] if source.flavor.mariadb else ["--set-vars=explain_format=TRADITIONAL"]
    return subprocess.run(
        [tool, "--no-version-check", "--recursion-method=none",
         "--no-check-replication-filters", *explain,
         # the key change: pt-osc refuses DROP PRIMARY KEY and a new unique key by default
         "--no-check-alter", "--no-check-unique-key-change",
         # small fixed chunks with a pause: the copy lasts a few seconds under the writer
         "--chunk-size=100", "--chunk-time=0", "--sleep=0.1",
         f"--alter={alter}", "--execute", "--print", dsn],
        capture_output=True, text=True, timeout=180, check=False)


class _Writer:
    """Autocommitted inserts, updates and deletes of ``t`` on one connection, a few hundred
    a second, naming only columns every layout of ``t`` has; ``wide``: values only the
    widened columns hold."""

    def __init__(self, source: Source, db: str) -> None:
        self.source, self.db = source, db
        self.rng = random.Random(11)
        self.next_id = ROWS + 1
        self.changes = 0
        self.wide = False
        self.error: BaseException | None = None
        self._stop = threading.Event()

    @contextmanager
    def running(self) -> Iterator[None]:
        self._stop.clear()
        thread = threading.Thread(target=self._run, daemon=True)
        thread.start()
        try:
            yield
        finally:
            self._stop.set()
            thread.join(30)
        assert self.error is None, f"the writer failed: {self.error!r}"

    def _run(self) -> None:
        try:
            with admin_conn(self.source, self.db) as conn, conn.cursor() as cur:
                while not self._stop.is_set():
                    self._change(cur)
                    self.changes += 1
                    time.sleep(0.002)
        except BaseException as exc:  # noqa: BLE001 - reported by running()
            self.error = exc

    def _change(self, cur: Any) -> None:
        some = self.rng.randrange(1, self.next_id)
        # v only goes up, whatever the row: a message older than one before it shows
        v = ROWS + self.changes + (3_000_000_000 if self.wide else 0)
        name = (f"long-{v}-" + "x" * 120) if self.wide else f"n{v}"
        pick = self.rng.random()
        if pick < 0.3:
            cur.execute("INSERT INTO t (id, k, name, v) VALUES (%s, %s, %s, %s)",
                        (self.next_id, self.next_id % 3, name, v))
            self.next_id += 1
        elif pick < 0.85:
            cur.execute("UPDATE t SET name = %s, v = %s WHERE id = %s", (name, v, some))
        else:
            cur.execute("DELETE FROM t WHERE id = %s", (some,))


def _mysql_rows(source: Source, db: str, key: list[str]) -> dict[str, dict[str, Any]]:
    with admin_conn(source, db) as conn, conn.cursor() as cur:
        cur.execute("SELECT * FROM t")
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
    return {orjson.dumps({k: r[k] for k in key}).decode(): r for r in rows}


def _latest(kafka: Any, topic: str) -> dict[bytes, bytes | None]:
    return {m.key: m.value for m in sink_topic(kafka, topic)}


def _topic_rows(kafka: Any, db: str) -> dict[str, dict[str, Any]]:
    """The live rows of ``t``'s sink topic: the latest value of each key, by key."""
    return {orjson.dumps(orjson.loads(k)).decode(): orjson.loads(v)
            for k, v in _latest(kafka, f"{db}.t").items() if v is not None}


def _went_back(kafka: Any, topic: str) -> dict[bytes, list[int | None]]:
    """Keys whose ``v`` goes back in the topic: a change older than one before it."""
    seen: dict[bytes, list[int | None]] = {}
    for m in sink_topic(kafka, topic):
        seen.setdefault(m.key, []).append(None if m.value is None else orjson.loads(m.value)["v"])
    return {key: vs for key, vs in seen.items()
            if any(a > b for a, b in itertools.pairwise(v for v in vs if v is not None))}


def _config(tmp_path: Path, source: Source, kafka: Any, db: str, behavior: str,
            tables: str) -> Path:
    return write_pipeline(
        tmp_path / "p.yaml", source, kafka, f"osc-{behavior}-{db}", f"{db}.{tables}",
        source={"scan.startup.mode": "initial", "scan.incremental.snapshot.chunk.size": 500},
        pipeline={"schema.change.behavior": behavior})


def _wait_equal(config: Path, procs: dict[str, Any], logs: dict[str, Path],
                what: str) -> None:
    """Wait until ``verify`` finds every topic equal to MySQL, capture and sink running."""
    def equal() -> bool:
        for name, proc in procs.items():
            assert proc.poll() is None, (f"{name} exited with {proc.returncode}: "
                                         f"{logs[name].read_text()[-3000:]}")
        return cli("verify", "--config", str(config)).returncode == 0

    try:
        wait_for(equal, 180, what)
    except AssertionError as exc:
        report = cli("verify", "--config", str(config))
        raise AssertionError(f"{exc}; verify said: {report.stdout[-3000:]}") from None


# lenient captures t alone (pt-osc's tables are names it does not capture), evolve every
# table of the database; each server runs one of the two (the other is the same steps, and
# the suite's time is better spent elsewhere): MariaDB the one, MySQL the other
@pytest.mark.parametrize(("source", "behavior", "tables"),
                         [("mariadb", "lenient", "t"), ("mysql", "evolve", "[a-z_]+")],
                         ids=["mariadb-lenient-t", "mysql-evolve-every-table"],
                         indirect=["source"])
def test_pt_online_schema_change_under_writes_leaves_the_topics_equal_to_mysql(
        source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path,
        behavior: str, tables: str) -> None:
    db = fresh_source_db
    with admin_conn(source, db) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, k INT NOT NULL, name VARCHAR(40), "
                    "v INT, note VARCHAR(20) DEFAULT 'n')")
        cur.executemany("INSERT INTO t (id, k, name, v) VALUES (%s, %s, %s, %s)",
                        [(i, i % 3, f"n{i}", i) for i in range(1, ROWS + 1)])
        # a new table's row estimate (InnoDB's persistent statistics, updated in the
        # background) may still be 1: pt-osc would copy it in one statement, not chunks
        cur.execute("ANALYZE TABLE t")
    config = _config(tmp_path, source, kafka, db, behavior, tables)
    logs = {"capture": tmp_path / "capture.log", "sink": tmp_path / "sink.log"}
    procs = {n: start_command(n, config, logs[n]) for n in logs}
    writer = _Writer(source, db)
    try:
        _wait_equal(config, procs, logs, "the snapshot in the topics")
        for step, alter in STEPS:
            with writer.running():
                before = writer.changes
                done = _ptosc(source, db, alter)
                during = writer.changes - before
                # widened: from now on values only the new types hold
                writer.wide = writer.wide or (step == "modify" and done.returncode == 0)
                time.sleep(1.5)  # changes after the swap, while t is read again
            assert done.returncode == 0, done.stdout + done.stderr
            assert "Swapped original and new tables OK" in done.stdout, done.stdout
            # copied in chunks ("copy nibble"), not in one statement ("copy table")
            assert "copy nibble" in done.stdout, done.stdout
            assert during >= 100, f"{step}: only {during} changes while pt-osc ran"
            _wait_equal(config, procs, logs, f"verify equal after pt-osc's {step}")
            report = cli("verify", "--config", str(config))
            assert report.returncode == 0, report.stdout + report.stderr
            assert f"topic {db}.t <- {db}.t" in report.stdout, report.stdout
            # the latest message of every key is MySQL's row: the added column with its
            # default, the widened values, no dropped column, keyed (id, k) after the key
            # change with no {"id":N} key left live
            key = ["id", "k"] if step == "key" else ["id"]
            got, want = _topic_rows(kafka, db), _mysql_rows(source, db, key)
            wrong = sorted(k for k in got.keys() | want.keys() if got.get(k) != want.get(k))
            assert not wrong, f"{step}: {len(wrong)} keys differ, e.g. " + "; ".join(
                f"{k}: topic {got.get(k)}, MySQL {want.get(k)}" for k in wrong[:3])
    finally:
        codes = {n: stop(p, timeout=60) for n, p in procs.items()}
    assert codes == {"capture": 0, "sink": 0}, {n: logs[n].read_text()[-3000:] for n in logs}
    text = logs["capture"].read_text()
    for name, log in logs.items():
        assert "Traceback" not in log.read_text(), f"{name}: {log.read_text()[-3000:]}"
    # each swap: t's keys tombstoned and t read again under its new definition, under
    # either behavior; the key change is no exception: no stop, no in-place re-key
    assert len(re.findall(rf"renamed to captured name\(s\) [^\n]*{db}\.t[ ,]", text)) == 4, \
        text[-3000:]
    assert "changed from" not in text and "re-keying" not in text, text[-3000:]
    assert not _went_back(kafka, f"{db}.t"), "a key's v went back"
    for gone in ("_t_new", "_t_old"):  # pt-osc's tables: nothing of them left live
        assert not any(_latest(kafka, f"{db}.{gone}").values()), gone
