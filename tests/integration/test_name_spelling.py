"""One spelling of a pipeline's name in every Kafka name, and the upgrade of a pipeline whose
name earlier releases spelled two ways.

Earlier releases named the topics of pipeline ``Shop-...`` from its lowercased name but its
transactional ids, sink group and transaction-metadata state from the name as written.
Setting ``sink.transactional-id-prefix`` to ``cdc-ingest.<name as written>`` reproduces
exactly what such a release ran. The pipeline runs that way, stops, loses its Spark
checkpoint (so the sink group's offsets alone decide where the sink goes on), and starts
again under this release's names: every change must reach the sink topic exactly once, and
every MySQL transaction's BEGIN and END exactly once, across both runs.

The carry-over is also interrupted on purpose where a crash hurts most: the transaction
metadata state already carried to the new topics, the sink group's offsets not yet (what a
kill between steps 3 and 4 of sink/driver/old_names.py leaves). The next start must finish
it without copying a part record or a BEGIN/END twice."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from cdc_ingest.config import load_pipeline
from cdc_ingest.kafka.offsets import GroupOffsets
from cdc_ingest.sink.driver import old_names
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


def _transactions(conn: Any, first: int, count: int) -> None:
    with conn.cursor() as cur:
        for i in range(first, first + count, 2):  # two rows per MySQL transaction
            cur.execute("INSERT INTO t VALUES (%s, %s), (%s, %s)", (i, i, i + 1, i + 1))
            conn.commit()


def _run(config: Path, log: Path, conn: Any, kafka: Any, first: int, count: int,
         topics: tuple[str, str]) -> str:
    proc = start_command("start", config, log)
    try:
        wait_for(lambda: "starts at" in log.read_text() or proc.poll() is not None,
                 timeout=120, what="capture running")
        _transactions(conn, first, count)
        total = first + count - 1
        wait_for(lambda: len(sink_topic(kafka, topics[0])) >= total
                 and len(sink_topic(kafka, topics[1])) >= total, timeout=120,
                 what=f"{total} rows and {total // 2} BEGIN/END pairs")
    finally:
        code = stop(proc)
    text = log.read_text()
    assert code == 0, text[-3000:]
    return text


@pytest.mark.parametrize("source", ["mariadb"], indirect=True)
@pytest.mark.parametrize("interrupted", [False, True], ids=["whole", "interrupted"])
def test_upgrade_from_two_spellings_carries_the_sink_over_exactly_once(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path, interrupted: bool
) -> None:
    db = fresh_source_db
    conn = admin_conn(source, db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    conn.commit()
    name = f"Shop-{db}"
    old, new = f"cdc-ingest.{name}", f"cdc-ingest.{name.lower()}"
    topic, meta = f"{db}-t", f"{db}-transactions"
    sink = {"sink.delivery-guarantee": "exactly-once", "topic.partitions": 2,
            "sink.transaction-metadata.topic": meta}
    routes = [{"source-table": f"{db}.t", "sink-table": topic}]

    def pipeline(**more: Any) -> Path:
        return write_pipeline(tmp_path / "p.yaml", source, kafka, name, f"{db}.t",
                              sink={**sink, **more}, routes=routes)

    before = _run(pipeline(**{"sink.transactional-id-prefix": old}), tmp_path / "1.log",
                  conn, kafka, 1, 20, (topic, meta))
    assert f"{old}.capture" in before, "the first run used the old names"
    shutil.rmtree(tmp_path / name / "checkpoint")  # the sink group decides where it resumes

    if interrupted:  # step 3 done, the crash before step 4
        defn = load_pipeline(pipeline())
        assert defn.old_transactional_id_prefix == old
        old_names._carry_metadata(defn, old)
    after = _run(pipeline(), tmp_path / "2.log", conn, kafka, 21, 10, (topic, meta))
    assert "carried the sink's committed offsets" in after, after[-3000:]
    assert ("carried the transaction metadata state" in after) is not interrupted, after[-3000:]
    assert f"fenced {old}.capture" in after, after[-3000:]
    assert f"{new}.capture" in after

    keys = [json.loads(m.key)["id"] for m in sink_topic(kafka, topic)]
    assert sorted(keys) == list(range(1, 31)), "each row exactly once"
    records = [json.loads(m.value) for m in sink_topic(kafka, meta)]
    begins = [r["id"] for r in records if r["status"] == "BEGIN"]
    ends = [(r["id"], r["event_count"]) for r in records if r["status"] == "END"]
    assert len(begins) == len(set(begins)) == 15, records
    assert [tx for tx, _ in ends] == begins
    assert {count for _, count in ends} == {2}

    group = GroupOffsets({"bootstrap.servers": kafka.bootstrap}, f"{new}.sink")
    try:
        committed = group.committed(f"cdc-ingest.{name.lower()}.changelog", [0, 1])
    finally:
        group.close()
    assert sorted(committed) == [0, 1], committed
    verify = cli("verify", "--config", str(tmp_path / "p.yaml"))
    assert verify.returncode == 0, verify.stdout + verify.stderr
