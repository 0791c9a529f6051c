"""The initial snapshot under concurrent writes, SIGKILLs and row locks, on both flavours
(MariaDB's snapshot watermarks are GTIDs, MySQL's binlog positions)."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pymysql
import pytest

from cdc_ingest.capture.positions import PositionStore
from tests.conftest import admin_conn
from tests.integration.flavors import ALL_SERVERS, Source, gtid_now, insert_sequence
from tests.integration.pipeline_helpers import (
    changelog,
    start_capture,
    stop,
    wait_for,
    write_pipeline,
)

ROWS = 250_000
CHUNK = 512  # rows a snapshot chunk


def _fill(conn: Any, table: str, rows: int) -> None:
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, v INT NOT NULL, "
                    "note VARCHAR(40), at DATETIME(3))")
        step = 20_000
        for start in range(1, rows + 1, step):
            insert_sequence(cur, table, "seq, 0, CONCAT('n', seq), '2024-01-01 00:00:00.5'",
                            start, min(start + step - 1, rows))


class Writer:
    """Updates, deletes and inserts at a paced rate, remembering each key's changes."""

    def __init__(self, admin: dict[str, Any], db: str, table: str, rows: int, seed: int,
                 rate: float) -> None:
        self.conn = pymysql.connect(**admin, database=db, autocommit=True)
        self.table, self.rng, self.rate = table, random.Random(seed), rate
        self.live = dict.fromkeys(range(1, rows + 1), 0)
        # the live keys again, for a uniform pick in O(1) (list(self.live) per pick was a
        # million-key copy, 120 times a second: the writer took a core from capture)
        self.keys = list(self.live)
        self.slot = {key: i for i, key in enumerate(self.keys)}
        self.next_id = rows + 1
        self.changes: dict[int, list[tuple[str, int | None]]] = {}
        self.stop = threading.Event()
        self.max_latency = 0.0
        self.error: BaseException | None = None

    def _do(self, sql: str, args: tuple[Any, ...]) -> None:
        began = time.monotonic()
        with self.conn.cursor() as cur:
            cur.execute(sql, args)
        self.max_latency = max(self.max_latency, time.monotonic() - began)

    def _forget(self, key: int) -> None:
        """Take ``key`` out of :attr:`keys`: the last key moves into its slot."""
        i, last = self.slot.pop(key), self.keys.pop()
        if last != key:
            self.keys[i] = last
            self.slot[last] = i

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                roll = self.rng.random()
                if roll < 0.6:
                    key = self.rng.choice(self.keys) if roll < 0.3 else self.rng.randint(
                        1, self.next_id - 1)
                    if key in self.live:
                        self._do(f"UPDATE {self.table} SET v = v + 1 WHERE id = %s", (key,))
                        self.live[key] += 1
                        self.changes.setdefault(key, []).append(("+U", self.live[key]))
                elif roll < 0.8:
                    key = self.rng.randint(1, self.next_id - 1)
                    if key in self.live:
                        self._do(f"DELETE FROM {self.table} WHERE id = %s", (key,))
                        del self.live[key]
                        self._forget(key)
                        self.changes.setdefault(key, []).append(("-D", None))
                else:
                    key = self.next_id
                    self.next_id += 1
                    self._do(f"INSERT INTO {self.table} VALUES (%s, 0, 'new', NOW(3))", (key,))
                    self.live[key] = 0
                    self.slot[key] = len(self.keys)
                    self.keys.append(key)
                    self.changes.setdefault(key, []).append(("+I", 0))
                time.sleep(1 / self.rate)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc


def _state_after(changes: list[tuple[str, int | None]], initial: int | None) -> int | None:
    state = initial
    for op, v in changes:
        state = None if op == "-D" else v
    return state


@pytest.mark.parametrize("source", ALL_SERVERS, indirect=True)
def test_snapshot_under_writes_and_sigkills_is_exact(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    fresh_db = fresh_source_db
    seed = int(os.environ.get("CDC_INGEST_TEST_SEED", random.randrange(1 << 30)))
    print(f"seed {seed}")
    rng = random.Random(seed)
    conn = admin_conn(source, fresh_db)
    _fill(conn, "big", ROWS)
    name = f"snap-{fresh_db}"
    config = write_pipeline(
        tmp_path / "snap.yaml", source, kafka, name, rf"{fresh_db}.big",
        # small chunks: 489 of them, so all three kills land inside the snapshot
        source={"scan.startup.mode": "initial",
                "scan.incremental.snapshot.chunk.size": CHUNK},
    )
    log = tmp_path / "capture.log"
    writer = Writer(source.admin, fresh_db, "big", ROWS, seed, rate=400)
    thread = threading.Thread(target=writer.run, daemon=True)
    proc = start_capture(config, log)
    thread.start()
    try:
        for _ in range(3):  # SIGKILL during the snapshot, three times
            reads = log.read_text().count("snapshot chunk of")
            wait_for(lambda r=reads: log.read_text().count("snapshot chunk of") >= r + 20,
                     timeout=120, what="20 more chunks")
            time.sleep(rng.uniform(0, 0.3))
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
            proc = start_capture(config, log)
        wait_for(lambda: "snapshot done" in log.read_text(), timeout=300, what="snapshot done")
        time.sleep(3)
        writer.stop.set()
        thread.join(30)
        assert writer.error is None, writer.error
        expected_total = len(writer.live)
        head = gtid_now(source)
        wait_for(lambda: head in log.read_text() or _committed(kafka, name, head),
                 timeout=120, what="capture caught up")
    finally:
        assert stop(proc) == 0, log.read_text()[-3000:]

    text = log.read_text()
    chunks = -(-ROWS // CHUNK)
    reads = text.count("snapshot chunk of")
    # finished chunks are never read again: at most one chunk re-read per kill
    assert chunks <= reads <= chunks + 3 + 2, (reads, chunks)

    per_key: dict[int, list[dict[str, Any]]] = {}
    for r in changelog(kafka, name):
        per_key.setdefault(r["pk"]["id"], []).append(r)
    final = {}
    for key, records in per_key.items():
        snaps = [r for r in records if r["pos"] == "snapshot"]
        assert len(snaps) <= 1, f"key {key}: {len(snaps)} snapshot rows"
        if snaps:
            assert records[0] is snaps[0], f"key {key}: snapshot row not first"
        binlog = [(r["op"], (r["after"] or {}).get("v")) for r in records if r["pos"] != "snapshot"]
        made = writer.changes.get(key, [])
        cut = len(made) - len(binlog)
        assert cut >= 0 and made[cut:] == binlog, (key, made, binlog)
        initial = 0 if key <= ROWS else None
        at_snapshot = _state_after(made[:cut], initial)
        assert (snaps[0]["after"]["v"] if snaps else None) == at_snapshot, (key, made, records)
        final[key] = _state_after([(r["op"], (r["after"] or {}).get("v")) for r in records],
                                  None)
    live = {k: v for k, v in final.items() if v is not None}
    assert live == writer.live
    assert len(live) == expected_total
    print(f"chunk reads {reads} for {chunks} chunks; writer max latency "
          f"{writer.max_latency * 1000:.0f} ms")


def _committed(kafka: Any, name: str, head: str) -> bool:
    saved = PositionStore({"bootstrap.servers": kafka.bootstrap},
                          f"cdc-ingest.{name}.offsets").load()
    return saved is not None and saved.gtid_set == head and saved.snapshot is None


def test_snapshot_takes_no_lock(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    fresh_db = fresh_source_db
    conn = admin_conn(source, fresh_db)
    _fill(conn, "locked", 50_000)
    holder = pymysql.connect(**source.admin, database=fresh_db, autocommit=False)
    with holder.cursor() as cur:  # a row lock held for the whole snapshot
        cur.execute("UPDATE locked SET v = 99 WHERE id = 25000")
    name = f"nolock-{fresh_db}"
    config = write_pipeline(tmp_path / "nolock.yaml", source, kafka, name,
                            rf"{fresh_db}.locked", source={"scan.startup.mode": "snapshot"},
                            pipeline={"parallelism": 1})
    log = tmp_path / "capture.log"
    writer = Writer(source.admin, fresh_db, "locked", 50_000, 7, rate=200)
    writer.live.pop(25000)  # the writer keeps off the locked row
    thread = threading.Thread(target=writer.run, daemon=True)
    thread.start()
    try:
        code = start_capture(config, log).wait(120)  # snapshot only: exits when done
    finally:
        writer.stop.set()
        thread.join(30)
        holder.rollback()
        holder.close()
    assert code == 0, log.read_text()[-3000:]
    assert "snapshot done" in log.read_text()
    assert writer.error is None, writer.error
    assert writer.max_latency < 2.0, f"a writer waited {writer.max_latency:.2f}s"
    rows = [r for r in changelog(kafka, name) if r["op"] == "+I"]
    locked = next(r for r in rows if r["pk"] == {"id": 25000})
    assert locked["after"]["v"] == 0  # the committed value, read without waiting for the lock
    print(f"writer max latency during the snapshot {writer.max_latency * 1000:.0f} ms")
