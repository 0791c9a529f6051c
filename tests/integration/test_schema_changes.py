"""Statements that empty a table reach the compacted topics: TRUNCATE and DROP TABLE under
writes tombstone every key the table had, in order with the changes around them, per key.

One writer, so the order of every change is known: random inserts, updates and deletes on
three tables, then ``TRUNCATE a`` followed at once by re-inserts of the same keys (a
tombstone written after them would delete live rows; one written before an older value
would leave a phantom), ``DROP TABLE b`` then ``CREATE TABLE b`` and inserts, more changes,
with table ``c`` written throughout as a control. The pipeline runs exactly-once with three
changelog partitions, so the keys of each table are spread over three sink tasks. Every
key's messages in the sink topics must be exactly its change sequence (tombstones included)
and ``verify`` must find the topics equal to the server.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pymysql

from tests.integration.flavors import Source
from tests.integration.pipeline_helpers import (
    cli,
    sink_topic,
    start_command,
    stop,
    wait_for,
    write_pipeline,
)

TABLES = ("a", "b", "c")
KEYS = 60  # ids 1..KEYS per table
Sequences = dict[tuple[str, int], list[int | None]]


class Writer:
    """Autocommitted changes, one at a time; ``expected`` is each key's value sequence."""

    def __init__(self, source: Source, db: str, seed: int) -> None:
        self.conn = pymysql.connect(**source.admin, database=db, autocommit=True)
        self.rng = random.Random(seed)
        self.expected: Sequences = {}
        self.live: dict[tuple[str, int], int] = {}
        self.next_v = 1

    def execute(self, sql: str, args: Any = None) -> None:
        with self.conn.cursor() as cur:
            cur.execute(sql, args)

    def put(self, table: str, key: int) -> None:
        v, self.next_v = self.next_v, self.next_v + 1
        if (table, key) in self.live:
            self.execute(f"UPDATE {table} SET v = %s WHERE id = %s", (v, key))
        else:
            self.execute(f"INSERT INTO {table} (id, v) VALUES (%s, %s)", (key, v))
        self.live[(table, key)] = v
        self.expected.setdefault((table, key), []).append(v)

    def delete(self, table: str, key: int) -> None:
        self.execute(f"DELETE FROM {table} WHERE id = %s", (key,))
        if self.live.pop((table, key), None) is not None:
            self.expected[(table, key)].append(None)

    def random_changes(self, count: int, tables: tuple[str, ...]) -> None:
        for _ in range(count):
            table, key = self.rng.choice(tables), self.rng.randint(1, KEYS)
            if (table, key) in self.live and self.rng.random() < 0.3:
                self.delete(table, key)
            else:
                self.put(table, key)

    def emptied(self, table: str, sql: str) -> None:
        """A statement that removes every row of ``table``: each live key gets a tombstone."""
        self.execute(sql)
        for slot in [s for s in self.live if s[0] == table]:
            del self.live[slot]
            self.expected[slot].append(None)


def _sequences(kafka: Any, topics: dict[str, str]) -> Sequences:
    out: Sequences = {}
    for table, topic in topics.items():
        for m in sink_topic(kafka, topic):
            key = orjson.loads(m.key)["id"]
            value = None if m.value is None else orjson.loads(m.value)["v"]
            out.setdefault((table, key), []).append(value)
    return out


def _wait_for_sequences(kafka: Any, topics: dict[str, str], expected: Sequences,
                        what: str) -> None:
    try:
        wait_for(lambda: _sequences(kafka, topics) == expected, timeout=240, what=what)
    except AssertionError:
        got = _sequences(kafka, topics)
        wrong = sorted(k for k in set(expected) | set(got) if got.get(k) != expected.get(k))
        raise AssertionError(f"{what}: {len(wrong)} keys differ, e.g. " + "; ".join(
            f"{k}: expected {expected.get(k)}, got {got.get(k)}" for k in wrong[:5])) from None


def test_truncate_and_drop_table_under_writes_tombstone_every_key_in_order(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    db = fresh_source_db
    writer = Writer(source, db, seed=13)
    for table in TABLES:
        writer.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, v INT NOT NULL)")
    writer.random_changes(150, TABLES)
    # the snapshot holds each live row once, as it is now
    writer.expected = {slot: [v] for slot, v in writer.live.items()}
    config = write_pipeline(
        tmp_path / "p.yaml", source, kafka, f"ddl-{db}", f"{db}.[abc]",
        source={"scan.startup.mode": "initial", "capture.transaction.max-interval": "200ms"},
        sink={"sink.delivery-guarantee": "exactly-once"},
        pipeline={"parallelism": 3},
    )
    topics = {t: f"{db}.{t}" for t in TABLES}
    log = tmp_path / "start.log"
    proc = start_command("start", config, log)
    try:
        _wait_for_sequences(kafka, topics, writer.expected, "the snapshot in the sink topics")
        writer.random_changes(150, TABLES)
        writer.emptied("a", "TRUNCATE TABLE a")
        for key in range(1, KEYS // 2):  # the same keys again, at once
            writer.put("a", key)
        writer.random_changes(50, TABLES)
        writer.emptied("b", "DROP TABLE b")
        writer.execute("CREATE TABLE b (id INT PRIMARY KEY, v INT NOT NULL)")
        for key in range(1, KEYS // 3):
            writer.put("b", key)
        writer.random_changes(150, TABLES)
        _wait_for_sequences(kafka, topics, writer.expected,
                            "every key's change sequence in the sink topics")
        report = cli("verify", "--config", str(config))
        assert report.returncode == 0, report.stdout + report.stderr
    finally:
        code = stop(proc, timeout=60)
    assert code == 0, log.read_text()[-3000:]
