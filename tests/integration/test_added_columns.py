"""Columns added under a running pipeline: what the compacted topic says, and verify agrees.

The contract (docs/output-contract.md, "Schema changes"): a message written before
``ADD COLUMN`` has no field for the column and stands for the value MySQL gave the rows that
existed then, the column's default. ``verify`` takes an absent field as that default: rows
unchanged since the ALTER are equal (NULL, a non-NULL string and a DECIMAL default), a row
changed afterwards carries the field, and a row whose value differs from the default without
a message saying so (changed with ``sql_log_bin=0``, which capture cannot see) is reported.
"""

from __future__ import annotations

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


def _latest(kafka: Any, topic: str) -> dict[int, Any]:
    out: dict[int, Any] = {}
    for m in sink_topic(kafka, topic):
        out[orjson.loads(m.key)["id"]] = None if m.value is None else orjson.loads(m.value)
    return out


def test_added_columns_are_absent_from_older_messages_and_verify_takes_their_default(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    db = fresh_source_db
    conn = pymysql.connect(**source.admin, database=db, autocommit=True)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
        cur.executemany("INSERT INTO t VALUES (%s, 0)", [(i,) for i in range(1, 21)])
    config = write_pipeline(
        tmp_path / "p.yaml", source, kafka, f"add-{db}", f"{db}.t",
        source={"scan.startup.mode": "initial", "capture.transaction.max-interval": "200ms"},
        sink={"sink.delivery-guarantee": "exactly-once"},
    )
    topic = f"{db}.t"
    log = tmp_path / "start.log"
    proc = start_command("start", config, log)
    try:
        wait_for(lambda: len(_latest(kafka, topic)) == 20, timeout=180, what="the snapshot")
        with conn.cursor() as cur:
            cur.execute("ALTER TABLE t ADD COLUMN note VARCHAR(20) NOT NULL DEFAULT 'none', "
                        "ADD COLUMN n INT NULL, ADD COLUMN d DECIMAL(6,2) DEFAULT 1.50")
            cur.execute("UPDATE t SET v = 1, note = 'changed' WHERE id <= 5")
            cur.execute("INSERT INTO t (id, v) VALUES (21, 0)")
        # each sink task commits its own partitions: wait for every row written since
        def written() -> bool:
            latest = _latest(kafka, topic)
            return all("note" in (latest.get(i) or {}) for i in (1, 2, 3, 4, 5, 21))

        wait_for(written, timeout=120, what="the rows written after the ALTER")
        latest = _latest(kafka, topic)
        assert latest[1] == {"id": 1, "v": 1, "note": "changed", "n": None, "d": 1.5}
        assert latest[21]["note"] == "none" and latest[21]["d"] == 1.5
        assert latest[10] == {"id": 10, "v": 0}  # unchanged since: the fields are absent
        report = cli("verify", "--config", str(config))
        assert report.returncode == 0, report.stdout + report.stderr

        with conn.cursor() as cur:  # a value no message says: verify must not call it equal
            cur.execute("SET SESSION sql_log_bin = 0")
            cur.execute("UPDATE t SET note = 'unseen' WHERE id = 10")
            cur.execute("SET SESSION sql_log_bin = 1")
        report = cli("verify", "--config", str(config))
        assert report.returncode == 8, report.stdout + report.stderr
        assert 'note: mysql "unseen" | topic (absent)' in report.stdout, report.stdout
        assert "differing 1" in report.stdout, report.stdout
    finally:
        assert stop(proc, timeout=60) == 0, log.read_text()[-3000:]


def test_ignore_keeps_each_tables_first_columns_and_verify_agrees(
    mariadb: Any, kafka: Any, fresh_db: str, tmp_path: Path
) -> None:
    """``pipeline.schema.change.behavior: ignore``: rows keep the columns the table had when
    first captured; a column added later is left out, a dropped one is null from then on."""
    db = fresh_db
    conn = pymysql.connect(**mariadb.admin, database=db, autocommit=True)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(10))")
        cur.executemany("INSERT INTO t VALUES (%s, %s, 'b')", [(i, i) for i in range(1, 6)])
    config = write_pipeline(
        tmp_path / "p.yaml", mariadb, kafka, f"ignore-{db}", f"{db}.t",
        source={"scan.startup.mode": "initial"},
        pipeline={"schema.change.behavior": "ignore"},
    )
    topic = f"{db}.t"
    log = tmp_path / "start.log"
    proc = start_command("start", config, log)
    try:
        wait_for(lambda: len(_latest(kafka, topic)) == 5, timeout=180, what="the snapshot")
        with conn.cursor() as cur:
            cur.execute("ALTER TABLE t ADD COLUMN c INT DEFAULT 7")
            cur.execute("UPDATE t SET a = 10 WHERE id = 1")
            cur.execute("ALTER TABLE t DROP COLUMN b")
            cur.execute("UPDATE t SET a = 20 WHERE id = 2")
            cur.execute("INSERT INTO t (id, a, c) VALUES (6, 6, 8)")
        wait_for(lambda: (rows := _latest(kafka, topic)).get(6) and rows[2]["a"] == 20,
                 timeout=120, what="the rows written after the ALTERs")
        latest = _latest(kafka, topic)
        assert latest[1] == {"id": 1, "a": 10, "b": "b"}  # no c
        assert latest[2] == {"id": 2, "a": 20, "b": None}  # b dropped: null
        assert latest[6] == {"id": 6, "a": 6, "b": None}
        assert latest[3] == {"id": 3, "a": 3, "b": "b"}  # unchanged since
        report = cli("verify", "--config", str(config))
        assert report.returncode == 0, report.stdout + report.stderr
    finally:
        assert stop(proc, timeout=60) == 0, log.read_text()[-3000:]


def test_a_dropped_columns_field_in_older_messages_is_not_a_difference_but_a_stray_one_is(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    """``DROP COLUMN``: messages written before it keep the column's field, which a consumer
    reading the table's current schema ignores (docs/output-contract.md, "Schema changes");
    verify agrees, and still reports a field that never was a column of the table."""
    db = fresh_source_db
    conn = pymysql.connect(**source.admin, database=db, autocommit=True)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT, old VARCHAR(10) DEFAULT 'o')")
        cur.executemany("INSERT INTO t (id, v) VALUES (%s, 0)", [(i,) for i in range(1, 11)])
    config = write_pipeline(
        tmp_path / "p.yaml", source, kafka, f"drop-{db}", f"{db}.t",
        source={"scan.startup.mode": "initial", "capture.transaction.max-interval": "200ms"},
        sink={"sink.delivery-guarantee": "exactly-once"},
    )
    topic = f"{db}.t"
    log = tmp_path / "start.log"
    proc = start_command("start", config, log)
    try:
        wait_for(lambda: len(_latest(kafka, topic)) == 10, timeout=180, what="the snapshot")
        with conn.cursor() as cur:
            cur.execute("ALTER TABLE t DROP COLUMN old")
            cur.execute("UPDATE t SET v = 1 WHERE id <= 3")
        wait_for(lambda: all((_latest(kafka, topic).get(i) or {}).get("v") == 1
                             for i in (1, 2, 3)), timeout=120, what="the updates")
        latest = _latest(kafka, topic)
        assert latest[1] == {"id": 1, "v": 1}
        assert latest[5] == {"id": 5, "v": 0, "old": "o"}  # written before the DROP COLUMN
        report = cli("verify", "--config", str(config))
        assert report.returncode == 0, report.stdout + report.stderr

        # a field no layout of the table ever had is a difference, dropped column or not
        producer = Producer({"bootstrap.servers": kafka.bootstrap})
        producer.produce(topic, orjson.dumps({"id": 7, "v": 0, "bogus": 1}),
                         orjson.dumps({"id": 7}))
        producer.flush(30)
        report = cli("verify", "--config", str(config))
        assert report.returncode == 8, report.stdout + report.stderr
        assert "differing 1" in report.stdout and "bogus" in report.stdout, report.stdout
    finally:
        assert stop(proc, timeout=60) == 0, log.read_text()[-3000:]
