"""Startup modes and the heartbeat that keeps the committed position moving."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from cdc_ingest.capture.positions import SOURCE_KEY, PositionStore
from cdc_ingest.kafka import TopicAdmin, TopicSpec, TransactionalProducer, read_topic
from cdc_ingest.model import Position
from tests.conftest import admin_conn
from tests.integration.flavors import Source, binlog_head, insert_sequence
from tests.integration.pipeline_helpers import (
    changelog,
    gtid_now,
    rows_of,
    start_capture,
    stop,
    wait_for,
    write_pipeline,
)


def _ids(records: list[dict[str, Any]]) -> list[int]:
    return [r["pk"]["id"] for r in rows_of(records)]


def test_specific_offset_by_file_and_position_and_by_timestamp(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    fresh_db = fresh_source_db
    conn = admin_conn(source, fresh_db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE s (id INT PRIMARY KEY)")
        cur.execute("INSERT INTO s VALUES (1)")
    conn.commit()
    time.sleep(1.1)  # binlog timestamps have second resolution
    file, pos = binlog_head(source)
    millis = int(time.time() * 1000)
    with conn.cursor() as cur:
        cur.execute("INSERT INTO s VALUES (2)")
        cur.execute("INSERT INTO s VALUES (3)")
    conn.commit()

    for mode, options in (
        ("file", {"scan.startup.mode": "specific-offset",
                  "scan.startup.specific-offset.file": file,
                  "scan.startup.specific-offset.pos": pos}),
        ("ts", {"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": millis}),
    ):
        name = f"start-{mode}-{fresh_db}"
        config = write_pipeline(tmp_path / f"{mode}.yaml", source, kafka, name,
                                rf"{fresh_db}.s", source=options)
        proc = start_capture(config, tmp_path / f"{mode}.log")
        try:
            records = wait_for(lambda n=name: (r := changelog(kafka, n)) and
                               len(rows_of(r)) >= 2 and r, what=f"rows from {mode}")
            time.sleep(1.0)  # nothing older may trickle in
            records = changelog(kafka, name)
        finally:
            assert stop(proc) == 0
        assert sorted(_ids(records)) == [2, 3], mode


def test_idle_capture_still_advances_its_committed_position(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    fresh_db = fresh_source_db
    conn = admin_conn(source, fresh_db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE captured (id INT PRIMARY KEY)")
        cur.execute("CREATE TABLE other (id INT PRIMARY KEY)")
    name = f"idle-{fresh_db}"
    config = write_pipeline(tmp_path / "idle.yaml", source, kafka, name,
                            rf"{fresh_db}.captured")
    log = tmp_path / "capture.log"
    proc = start_capture(config, log)
    store = PositionStore({"bootstrap.servers": kafka.bootstrap}, f"cdc-ingest.{name}.offsets")
    try:
        wait_for(lambda: "starts at" in log.read_text(), what="capture running")
        with conn.cursor() as cur:
            for i in range(5):
                cur.execute("INSERT INTO other VALUES (%s)", (i,))
                conn.commit()
        head = gtid_now(source)
        # only other tables changed, yet the committed position reaches the binlog head
        saved = wait_for(lambda: (p := store.load()) and p.gtid_set == head and p,
                         timeout=30, what=f"committed position {head}")
        assert saved.rows_done == 0
    finally:
        assert stop(proc) == 0, log.read_text()
    assert rows_of(changelog(kafka, name)) == []


def _positions(kafka: Any, name: str) -> list[Position]:
    """Every committed position of a pipeline, in commit order (not the tables' totals)."""
    return [Position.from_json(m.value) for m in
            read_topic({"bootstrap.servers": kafka.bootstrap}, f"cdc-ingest.{name}.offsets")
            if m.value is not None and m.key == SOURCE_KEY]


def test_a_large_transaction_spans_kafka_transactions_and_resumes_inside(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    fresh_db = fresh_source_db
    conn = admin_conn(source, fresh_db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE big (id INT PRIMARY KEY, v VARCHAR(20))")
    start = gtid_now(source)
    with conn.cursor() as cur:  # one MySQL transaction of 2,500 rows
        insert_sequence(cur, "big", "seq, CONCAT('v', seq)", 1, 2500)
    conn.commit()
    conn.close()
    options = {"scan.startup.mode": "specific-offset",
               "scan.startup.specific-offset.gtid-set": start,
               "capture.transaction.max-rows": 1000}

    # 1. From the start: three Kafka transactions (1000, 1000, 500 rows), rows #1..#2500.
    first = f"bigtx-{fresh_db}"
    config = write_pipeline(tmp_path / "a.yaml", source, kafka, first, f"{fresh_db}.big",
                            source=options, pipeline={"parallelism": 1})
    proc = start_capture(config, tmp_path / "a.log")
    try:
        records = wait_for(lambda: (r := rows_of(changelog(kafka, first))) and len(r) >= 2500
                           and r, what="2500 rows")
    finally:
        assert stop(proc) == 0, (tmp_path / "a.log").read_text()
    gtid = records[0]["pos"].split("#")[0]
    assert [r["pos"] for r in records] == [f"{gtid}#{n}" for n in range(1, 2501)]
    assert [r["after"]["id"] for r in records] == list(range(1, 2501))
    inside = [p for p in _positions(kafka, first) if p.tx_gtid == gtid and p.rows_done]
    assert [p.rows_done for p in inside] == [1000, 2000]

    # 2. A pipeline whose committed position is 1,234 rows into that transaction (as a crash
    #    there leaves it) captures exactly the rest: rows #1235..#2500, once, in order.
    second = f"bigtx2-{fresh_db}"
    resume = replace(inside[0], rows_done=1234)
    store = PositionStore({"bootstrap.servers": kafka.bootstrap}, f"cdc-ingest.{second}.offsets")
    TopicAdmin({"bootstrap.servers": kafka.bootstrap}).ensure(
        TopicSpec(f"cdc-ingest.{second}.offsets", config={"cleanup.policy": "compact"}))
    producer = TransactionalProducer({"bootstrap.servers": kafka.bootstrap}, f"seed-{second}")
    producer.init()
    producer.begin()
    key, value = store.record(resume)
    producer.send(store.topic, value, key)
    producer.commit()
    producer.close()
    config = write_pipeline(tmp_path / "b.yaml", source, kafka, second, f"{fresh_db}.big",
                            source=options, pipeline={"parallelism": 1})
    proc = start_capture(config, tmp_path / "b.log")
    try:
        rest = wait_for(lambda: (r := rows_of(changelog(kafka, second))) and len(r) >= 1266
                        and r, what="1266 rows")
        time.sleep(2)  # nothing more may follow
        rest = rows_of(changelog(kafka, second))
    finally:
        assert stop(proc) == 0, (tmp_path / "b.log").read_text()
    assert [r["pos"] for r in rest] == [f"{gtid}#{n}" for n in range(1235, 2501)]
    assert [r["after"]["id"] for r in rest] == list(range(1235, 2501))
