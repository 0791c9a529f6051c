"""``cdc-ingest verify`` while writes go on: exact, judged against binlog positions.

A writer changes random rows of a captured table (updates, deletes and inserts, a few
hundred a second) the whole time. verify must report no difference for a change in flight,
and every difference a stray producer makes in the sink topic meanwhile (a wrong value, a
key tombstoned, a key MySQL never had), named with both sides.
"""

from __future__ import annotations

import random
import re
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
    sink_topic,
    start_command,
    stop,
    wait_for,
    write_pipeline,
)

ROWS = 2_000
UNTOUCHED = range(1, 11)  # keys the writer leaves alone: the stray producer's targets


class Writer(threading.Thread):
    """Random updates, deletes and re-inserts of rows 11..ROWS until stopped."""

    def __init__(self, source: Source, db: str) -> None:
        super().__init__(daemon=True)
        self.conn = pymysql.connect(**source.admin, database=db, autocommit=True)
        self.stopped = threading.Event()
        self.changes = 0
        self.failure: BaseException | None = None

    def run(self) -> None:
        rnd = random.Random(7)
        try:
            with self.conn.cursor() as cur:
                while not self.stopped.is_set():
                    key = rnd.randrange(UNTOUCHED.stop, ROWS + 1)
                    roll = rnd.random()
                    if roll < 0.1:
                        cur.execute("DELETE FROM t WHERE id = %s", (key,))
                    elif roll < 0.2:
                        cur.execute("INSERT IGNORE INTO t VALUES (%s, %s, 'again')",
                                    (key, self.changes))
                    else:
                        cur.execute("UPDATE t SET v = %s WHERE id = %s", (self.changes, key))
                    self.changes += 1
                    time.sleep(0.003)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.failure = exc

    def finish(self) -> int:
        self.stopped.set()
        self.join(30)
        assert self.failure is None, self.failure
        return self.changes


def _differences(out: str) -> tuple[int, int, int]:
    """verify's counts of missing, extra and differing keys (0s when it lists none)."""
    found = re.search(r"missing (\d+), extra (\d+), differing (\d+)", out)
    return (0, 0, 0) if found is None else (int(found[1]), int(found[2]), int(found[3]))


def _unconfirmed(out: str) -> set[int]:
    """The ids verify lists as unconfirmed (written again in each recheck)."""
    return {int(m) for m in re.findall(r'unconfirmed +\{"id":(\d+)\}', out)}


def _live(kafka: Any, topic: str) -> dict[int, Any]:
    out: dict[int, Any] = {}
    for m in sink_topic(kafka, topic):
        out[orjson.loads(m.key)["id"]] = None if m.value is None else orjson.loads(m.value)
    return {k: v for k, v in out.items() if v is not None}


def busy_pipeline(source: Source, kafka: Any, db: str, tmp_path: Path, name: str,
                  rows: int = ROWS, source_options: dict[str, Any] | None = None
                  ) -> tuple[Any, Path]:
    """Table ``t`` (id, v, note) of ``rows`` rows in ``db``, and a pipeline ``name-db`` that
    snapshots it, then follows it exactly-once, committing every 200 ms (``source_options``
    added); the admin connection (autocommit) and the pipeline file."""
    conn = pymysql.connect(**source.admin, database=db, autocommit=True)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT, note VARCHAR(20))")
        cur.executemany("INSERT INTO t VALUES (%s, 0, 'first')",
                        [(i,) for i in range(1, rows + 1)])
    config = write_pipeline(
        tmp_path / "p.yaml", source, kafka, f"{name}-{db}", f"{db}.t",
        source={"scan.startup.mode": "initial", "capture.transaction.max-interval": "200ms",
                **(source_options or {})},
        sink={"sink.delivery-guarantee": "exactly-once"},
    )
    return conn, config


def test_verify_is_exact_while_writes_go_on(source: Source, kafka: Any, fresh_source_db: str,
                                           tmp_path: Path) -> None:
    db = fresh_source_db
    _, config = busy_pipeline(source, kafka, db, tmp_path, "busy")
    topic = f"{db}.t"
    log = tmp_path / "start.log"
    proc = start_command("start", config, log)
    writer = Writer(source, db)
    try:
        wait_for(lambda: len(_live(kafka, topic)) == ROWS, timeout=180, what="the snapshot")
        writer.start()
        time.sleep(3)  # writes in flight from here on
        report = cli("verify", "--config", str(config), timeout=300)
        assert writer.is_alive(), "the writer stopped before verify ended"
        # no change in flight is a difference; a key the writer hit in every recheck may be
        # listed unconfirmed (exit 8 then), never as equal nor as different
        assert _differences(report.stdout) == (0, 0, 0), report.stdout
        if report.returncode != 0:
            assert report.returncode == 8 and "unconfirmed" in report.stdout, report.stdout
        assert not _unconfirmed(report.stdout) & {1, 2, ROWS + 500}, report.stdout

        # a stray producer damages keys the writer leaves alone, while it goes on
        producer = Producer({"bootstrap.servers": kafka.bootstrap})
        producer.produce(topic, orjson.dumps({"id": 1, "v": 666, "note": "stray"}),
                         orjson.dumps({"id": 1}))
        producer.produce(topic, None, orjson.dumps({"id": 2}))
        producer.produce(topic, orjson.dumps({"id": ROWS + 500, "v": 0, "note": "stray"}),
                         orjson.dumps({"id": ROWS + 500}))
        producer.flush(30)
        report = cli("verify", "--config", str(config), timeout=300)
        assert report.returncode == 8, report.stdout + report.stderr
        out = report.stdout
        assert "missing 1, extra 1, differing 1, conflicts 0" in out, out
        assert 'v: mysql 0 | topic 666' in out, out
        assert '{"id":2}' in out and f'{{"id":{ROWS + 500}}}' in out, out
        assert not _unconfirmed(out) & {1, 2, ROWS + 500}, out  # the stray ones are confirmed
        assert writer.finish() > 500, "the writer made too few changes to mean anything"
    finally:
        if writer.is_alive():
            writer.finish()
        assert stop(proc, timeout=60) == 0, log.read_text()[-3000:]


def test_changes_the_sink_has_not_written_yet_are_waited_for_not_reported(
    mariadb: Any, kafka: Any, fresh_db: str, tmp_path: Path
) -> None:
    """The bad timing on purpose: capture has the changes, the sink is not running yet when
    verify reads the topic. verify reads those keys again once the sink (started meanwhile)
    has passed the binlog position: equal, exit 0."""
    db = fresh_db
    conn = pymysql.connect(**mariadb.admin, database=db, autocommit=True)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT, note VARCHAR(20))")
    config = write_pipeline(
        tmp_path / "p.yaml", mariadb, kafka, f"late-{db}", f"{db}.t",
        source={"scan.startup.mode": "initial"},
        sink={"sink.delivery-guarantee": "exactly-once"},
    )
    capture = start_command("capture", config, tmp_path / "capture.log")
    sink = None
    try:
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO t VALUES (%s, 1, 'late')", [(i,) for i in range(50)])
        verify = start_command("verify", config, tmp_path / "verify.log")
        time.sleep(3)  # verify has read the (empty) topic; now the sink starts
        sink = start_command("sink", config, tmp_path / "sink.log")
        assert verify.wait(timeout=180) == 0, (tmp_path / "verify.log").read_text()
        out = (tmp_path / "verify.log").read_text()
        assert ("50 key(s) that differed read again once the pipeline had passed MySQL's "
                "binlog position: 50 equal (changes in flight)") in out, out
        assert len(_live(kafka, f"{db}.t")) == 50
    finally:
        for proc, name in ((sink, "sink"), (capture, "capture")):
            if proc is not None:
                assert stop(proc, timeout=60) == 0, (tmp_path / f"{name}.log").read_text()[-3000:]
