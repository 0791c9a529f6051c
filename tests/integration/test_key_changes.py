"""A primary-key change under writes never leaves phantom keys in a compacted topic.

``ALTER TABLE k DROP PRIMARY KEY, ADD PRIMARY KEY (id, k2)`` while a writer changes ``k`` and
a control table ``c``: the topics hold ``{"id":N}`` keys; new-key messages ``{"id":N,"k2":0}``
beside them would leave every old key live. With the default
``pipeline.schema.change.behavior: lenient`` capture commits everything before the first row
under the new key and stops there, naming the table, both keys, the DDL, the binlog position
and the fix; ``start`` exits 9 and says starting again stops at the same change. The sink
topics then hold exactly each key's change sequence up to the ALTER, keyed by the old key
only, and the schema topic shows the DDL. Following the fix (the pipeline started again with
``k`` excluded goes on with ``c``; ``k``'s topic deleted and captured by a pipeline of its own)
gives topics that ``verify`` finds equal to the server, ``k`` keyed by its new key.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
from confluent_kafka.admin import AdminClient

from tests.integration.flavors import Source
from tests.integration.pipeline_helpers import (
    cli,
    sink_topic,
    start_command,
    stop,
    wait_for,
    write_pipeline,
)
from tests.integration.test_schema_changes import Sequences, Writer

TABLES = ("k", "c")
ALTER = "ALTER TABLE k DROP PRIMARY KEY, ADD PRIMARY KEY (id, k2)"


def _sequences(kafka: Any, db: str, key_fields: list[str]) -> Sequences:
    """Each key's value sequence in the sink topics; every key of k must have
    ``key_fields``."""
    out: Sequences = {}
    for table in TABLES:
        for m in sink_topic(kafka, f"{db}.{table}"):
            key = orjson.loads(m.key)
            fields = key_fields if table == "k" else ["id"]
            assert sorted(key) == fields, f"{db}.{table}: key {key} has not {fields}"
            value = None if m.value is None else orjson.loads(m.value)["v"]
            out.setdefault((table, key["id"]), []).append(value)
    return out


def snapshotted_tables(source: Source, db: str, seed: int) -> Writer:
    """Tables ``k`` (key ``id``, ``k2`` ready to extend it) and ``c`` with 100 changes; the
    writer expects each live row once, as the snapshot reads it."""
    writer = Writer(source, db, seed=seed)
    writer.execute("CREATE TABLE k (id INT PRIMARY KEY, k2 INT NOT NULL DEFAULT 0, v INT)")
    writer.execute("CREATE TABLE c (id INT PRIMARY KEY, v INT)")
    writer.random_changes(100, TABLES)
    writer.expected = {slot: [v] for slot, v in writer.live.items()}
    return writer


def _config(tmp_path: Path, source: Source, kafka: Any, name: str, db: str,
            tables: str = "", exclude: str | None = None) -> Path:
    more = {"tables.exclude": exclude} if exclude else {}
    return write_pipeline(
        tmp_path / f"{name}.yaml", source, kafka, name, tables or f"{db}.[kc]",
        source={"scan.startup.mode": "initial", "capture.transaction.max-interval": "200ms",
                **more},
        sink={"sink.delivery-guarantee": "exactly-once"},
        pipeline={"parallelism": 3},
    )


def test_a_primary_key_change_stops_capture_with_no_phantom_key_then_the_fix_works(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    db = fresh_source_db
    writer = snapshotted_tables(source, db, seed=21)
    name = f"pk-{db}"
    config = _config(tmp_path, source, kafka, name, db)
    log = tmp_path / "start.log"
    proc = start_command("start", config, log)
    try:
        wait_for(lambda: _sequences(kafka, db, ["id"]) == writer.expected, timeout=180,
                 what="the snapshot in the sink topics")
        writer.random_changes(150, TABLES)
        before_alter = copy.deepcopy(writer.expected)
        writer.execute(ALTER)
        # the first rows under the new key (k first: capture stops there), then more of both
        writer.random_changes(30, ("k",))
        writer.random_changes(30, TABLES)
        code = proc.wait(180)
    finally:
        stop(proc, timeout=60)
    text = log.read_text()
    assert code == 9, text[-3000:]
    for part in (f"the key of {db}.k changed from (id int) to (id int, k2 int)",
                 "ADD PRIMARY KEY (id, k2)", "phantom", f"Fix: exclude {db}.k",
                 "Starting again would stop at the same schema change"):
        assert part in text, f"{part!r} not in: {text[-3000:]}"
    assert "Traceback" not in text

    # The fix, as the message says. 1: the pipeline without k goes on where it stopped;
    # k's topic holds every change before the ALTER, keyed by the old key only.
    resumed = _config(tmp_path, source, kafka, name, db, exclude=f"{db}.k")
    log_resumed = tmp_path / "resumed.log"
    proc = start_command("start", resumed, log_resumed)
    try:
        def caught_up() -> bool:
            got = _sequences(kafka, db, ["id"])
            return (all(got.get(s) == seq for s, seq in writer.expected.items() if s[0] == "c")
                    and {s: q for s, q in got.items() if s[0] == "k"}
                    == {s: q for s, q in before_alter.items() if s[0] == "k"})

        wait_for(caught_up, timeout=180,
                 what="c caught up after the restart, k as it was before the ALTER")
        report = cli("verify", "--config", str(resumed))
        assert report.returncode == 0, report.stdout + report.stderr
    finally:
        assert stop(proc, timeout=60) == 0, log_resumed.read_text()[-3000:]
    schema = [orjson.loads(m.value) for m in sink_topic(kafka, f"cdc-ingest.{name}.schema")
              if m.value is not None and orjson.loads(m.key)["table"] == "k"]
    assert schema[-1]["ddl"] == ALTER and schema[-1]["key"]["columns"] == ["id"], schema[-1]

    # 2: k's topic deleted, a pipeline of its own snapshots it under the new key.
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    admin.delete_topics([f"{db}.k"])[f"{db}.k"].result(30)
    wait_for(lambda: f"{db}.k" not in admin.list_topics(timeout=10).topics, timeout=30,
             what="the topic deleted")
    own = _config(tmp_path, source, kafka, f"pk2-{db}", db, tables=f"{db}.k")
    log_own = tmp_path / "own.log"
    proc = start_command("start", own, log_own)
    try:
        def rekeyed() -> bool:
            got = {s: q for s, q in _sequences(kafka, db, ["id", "k2"]).items()
                   if s[0] == "k"}
            return got == {s: [v] for s, v in writer.live.items() if s[0] == "k"}

        wait_for(rekeyed, timeout=180, what="table k snapshotted under its new key")
        report = cli("verify", "--config", str(own))
        assert report.returncode == 0, report.stdout + report.stderr
    finally:
        assert stop(proc, timeout=60) == 0, log_own.read_text()[-3000:]
