"""A primary-key change under writes with ``pipeline.schema.change.behavior: evolve``: the
table is re-keyed in place, exactly once, with no phantom key and no reordered change.

``ALTER TABLE k DROP PRIMARY KEY, ADD PRIMARY KEY (id, k2)`` while a writer keeps changing
``k`` and a control table ``c``. Made to happen on purpose: the sink is stopped before the
ALTER, so capture has to wait at the re-key's first step, and is SIGKILLed there; started
again, it goes on from that step once the sink runs again, while the writer goes on.

Checked against the writer's own change log, per key: every old key ``{"id":N}`` holds its
changes up to the ALTER, then one tombstone if it was live; every new key
``{"id":N,"k2":0}`` holds its row as the re-key read it, then every later change, in order;
``c`` holds exactly its changes. In each sink topic partition no old-key message comes after
the first new-key one (the old keys' tombstones and the table under its new key are one
transaction), the schema topic names the new key, and ``verify`` finds the topics equal.
"""

from __future__ import annotations

import copy
import signal
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from tests.integration.flavors import Source
from tests.integration.pipeline_helpers import (
    cli,
    sink_topic,
    start_command,
    stop,
    wait_for,
    write_pipeline,
)
from tests.integration.test_key_changes import ALTER, TABLES, snapshotted_tables
from tests.integration.test_schema_changes import Sequences

OLD, NEW = ["id"], ["id", "k2"]


class Topics:
    """The sink topics of k and c, each key's value sequence, split by key schema."""

    def __init__(self, kafka: Any, db: str) -> None:
        self.old: Sequences = {}
        self.new: Sequences = {}
        self.late_old: list[Any] = []  # old-key messages after a new-key one, same partition
        for table in TABLES:
            new_seen: set[int] = set()
            for m in sink_topic(kafka, f"{db}.{table}"):
                key = orjson.loads(m.key)
                value = None if m.value is None else orjson.loads(m.value)["v"]
                if sorted(key) == NEW and table == "k":
                    self.new.setdefault((table, key["id"]), []).append(value)
                    new_seen.add(m.partition)
                    continue
                assert sorted(key) == OLD, f"{db}.{table}: key {key}"
                self.old.setdefault((table, key["id"]), []).append(value)
                if m.partition in new_seen:
                    self.late_old.append((m.partition, m.offset, key, value))


def _config(tmp_path: Path, source: Source, kafka: Any, name: str, db: str) -> Path:
    return write_pipeline(
        tmp_path / f"{name}.yaml", source, kafka, name, f"{db}.[kc]",
        source={"scan.startup.mode": "initial", "capture.transaction.max-interval": "200ms",
                "scan.incremental.snapshot.chunk.size": 7},
        sink={"sink.delivery-guarantee": "exactly-once"},
        pipeline={"parallelism": 3, "schema.change.behavior": "evolve"},
    )


def _suffix(seq: list[int | None], history: list[int | None]) -> bool:
    """``seq`` is what follows some point of ``history``, starting with a row."""
    if not seq:
        return not history or history[-1] is None
    return seq[0] is not None and history[len(history) - len(seq):] == seq


def test_a_primary_key_change_re_keys_the_table_in_place_under_writes_and_a_kill(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    db = fresh_source_db
    writer = snapshotted_tables(source, db, seed=31)
    name = f"rekey-{db}"
    config = _config(tmp_path, source, kafka, name, db)
    capture_log, sink_log = tmp_path / "capture.log", tmp_path / "sink.log"
    capture = start_command("capture", config, capture_log)
    sink = start_command("sink", config, sink_log)
    writing = threading.Event()

    def write() -> None:
        while writing.is_set():
            writer.random_changes(5, TABLES)
            time.sleep(0.02)

    thread = threading.Thread(target=write)
    try:
        wait_for(lambda: Topics(kafka, db).old == writer.expected, timeout=180,
                 what="the snapshot in the sink topics")
        writer.random_changes(100, TABLES)
        wait_for(lambda: Topics(kafka, db).old == writer.expected, timeout=120,
                 what="the changes before the ALTER in the sink topics")
        assert stop(sink, timeout=60) == 0, sink_log.read_text()[-3000:]
        before = copy.deepcopy(writer.expected)
        at_alter = {s: v for s, v in writer.live.items() if s[0] == "k"}
        writer.execute(ALTER)
        writing.set()
        thread.start()
        # capture waits for the sink to pass its re-key record: killed right there
        wait_for(lambda: "re-keying it in place" in capture_log.read_text(), timeout=60,
                 what="capture at the re-key")
        time.sleep(1)
        capture.send_signal(signal.SIGKILL)
        capture.wait(30)
        capture = start_command("capture", config, capture_log)
        sink = start_command("sink", config, sink_log)
        wait_for(lambda: "is re-keyed" in capture_log.read_text(), timeout=240,
                 what="the re-key done")
        time.sleep(3)  # more changes after the re-key, to their keys' partitions
    finally:
        writing.clear()
        if thread.is_alive():
            thread.join(30)
        final = copy.deepcopy(writer.expected)
        try:
            def caught_up() -> bool:
                got = Topics(kafka, db)
                for slot in final:
                    seq = (got.new if slot[0] == "k" else got.old).get(slot) or [None]
                    if seq[-1] != writer.live.get(slot):
                        return False
                return True

            wait_for(caught_up, timeout=180, what="the sink topics caught up with MySQL")
        finally:
            codes = stop(capture, timeout=60), stop(sink, timeout=90)
    text = capture_log.read_text()
    assert codes == (0, 0), text[-3000:] + sink_log.read_text()[-3000:]
    assert "Traceback" not in text

    got = Topics(kafka, db)
    assert got.late_old == [], f"old keys written after new ones: {got.late_old[:5]}"
    for slot in {s for s in final if s[0] == "k"}:
        old_seq = before.get(slot, []) + ([None] if slot in at_alter else [])
        assert got.old.get(slot, []) == old_seq, (slot, got.old.get(slot), old_seq)
        history = final[slot][len(before.get(slot, [])):]
        if slot in at_alter:
            history = [at_alter[slot], *history]
        assert _suffix(got.new.get(slot, []), history), (slot, got.new.get(slot), history)
    for slot in {s for s in final if s[0] == "c"}:
        assert got.old[slot] == final[slot], (slot, got.old[slot], final[slot])
    schema = [orjson.loads(m.value) for m in sink_topic(kafka, f"cdc-ingest.{name}.schema")
              if m.value is not None and orjson.loads(m.key)["table"] == "k"]
    assert schema[-1]["key"]["columns"] == NEW and schema[-1]["action"] == "rekey", schema[-1]
    report = cli("verify", "--config", str(config))
    assert report.returncode == 0, report.stdout + report.stderr
