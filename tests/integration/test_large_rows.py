"""Rows as large as the server accepts reach the sink topics intact (issue 13).

The server's ``max_allowed_packet`` is raised for the test, and capture sizes its producer
and the changelog topic from it (cdc_ingest.kafka.limits); the sink takes the changelog
topic's limit. A 5 MB text full of characters JSON must escape is inserted and updated (the
update's record holds it twice), and a 60 MB one inserted, exactly-once end to end.
"""

from __future__ import annotations

import random
import string
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pymysql
from confluent_kafka.admin import AdminClient, NewTopic

from tests.conftest import admin_conn
from tests.integration.flavors import Source
from tests.integration.pipeline_helpers import (
    cli,
    gtid_now,
    sink_topic,
    start_command,
    stop,
    wait_for,
    write_pipeline,
)

PACKET = 256 << 20


@contextmanager
def packet_limit(source: Source, size: int) -> Iterator[None]:
    with admin_conn(source) as conn, conn.cursor() as cur:
        cur.execute("SELECT @@GLOBAL.max_allowed_packet")
        old = cur.fetchone()[0]
        cur.execute(f"SET GLOBAL max_allowed_packet = {size}")
    try:
        yield
    finally:
        with admin_conn(source) as conn, conn.cursor() as cur:
            cur.execute(f"SET GLOBAL max_allowed_packet = {old}")


def test_rows_of_5_and_60_megabytes_arrive_intact(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    db = fresh_source_db
    rng = random.Random(60)
    escaped = "".join(rng.choice('ab"\\\n\té€\u0001') for _ in range(5 << 20))
    plain = "".join(rng.choices(string.ascii_letters, k=1 << 16)) * (60 << 4)
    with packet_limit(source, PACKET):
        conn = pymysql.connect(**source.admin, database=db, autocommit=True,
                               max_allowed_packet=PACKET)
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE big (id INT PRIMARY KEY, tag VARCHAR(8), body LONGTEXT)"
                        " DEFAULT CHARSET=utf8mb4")
        config = write_pipeline(
            tmp_path / "p.yaml", source, kafka, f"big-{db}", f"{db}.big",
            source={"scan.startup.mode": "specific-offset",
                    "scan.startup.specific-offset.gtid-set": gtid_now(source)},
            sink={"sink.delivery-guarantee": "exactly-once"},
        )
        with conn.cursor() as cur:
            cur.execute("INSERT INTO big VALUES (1, 'first', %s)", (escaped,))
            cur.execute("UPDATE big SET tag = 'second' WHERE id = 1")
            cur.execute("INSERT INTO big VALUES (2, 'large', %s)", (plain,))
        conn.close()
        log = tmp_path / "start.log"
        proc = start_command("start", config, log)
        try:
            messages = wait_for(lambda: [m for m in sink_topic(kafka, f"{db}.big")
                                         if m.key == b'{"id":2}'] or None,
                                timeout=300, what="the 60 MB row in the sink topic")
        finally:
            code = stop(proc, timeout=90)
    assert code == 0, log.read_text()[-3000:]
    rows = [(m.key, orjson.loads(m.value)) for m in sink_topic(kafka, f"{db}.big")]
    assert [(k, v["tag"]) for k, v in rows] == [
        (b'{"id":1}', "first"), (b'{"id":1}', "second"), (b'{"id":2}', "large")]
    assert rows[0][1]["body"] == escaped and rows[1][1]["body"] == escaped
    assert rows[2][1]["body"] == plain, len(rows[2][1]["body"])
    assert len(messages[0].value) > 60 << 20


def test_rows_too_large_for_a_smaller_existing_topic_go_to_the_dead_letter_topic(
    mariadb: Any, kafka: Any, fresh_db: str, tmp_path: Path
) -> None:
    """A sink topic created earlier with a 200 kB ``max.message.bytes``, and
    ``sink.dead-letter.topic`` set: 500 kB rows (one from the snapshot, one an update) go to
    the dead-letter topic whole, their keys are tombstoned in the sink topic (the update's
    older value does not stay live), everything else flows, `start` keeps running, and
    ``verify`` reports the two rows missing."""
    db = fresh_db
    big = "".join(random.Random(5).choices(string.ascii_letters, k=500_000))
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    admin.create_topics([NewTopic(f"{db}.big", 2, 1, config={
        "cleanup.policy": "compact", "max.message.bytes": "200000"})])[f"{db}.big"].result(30)
    with admin_conn(mariadb, db) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE big (id INT PRIMARY KEY, body LONGTEXT)")
        cur.execute("INSERT INTO big VALUES (1, 'small'), (2, %s)", (big,))
    dead = f"dlq-{db}"
    config = write_pipeline(
        tmp_path / "p.yaml", mariadb, kafka, f"dlq-{db}", f"{db}.big",
        source={"scan.startup.mode": "initial"},
        sink={"sink.delivery-guarantee": "exactly-once", "sink.dead-letter.topic": dead},
    )
    log = tmp_path / "start.log"
    proc = start_command("start", config, log)
    try:
        wait_for(lambda: sink_topic(kafka, f"{db}.big"), 180, "the snapshot in the topic")
        with admin_conn(mariadb, db) as conn, conn.cursor() as cur:
            cur.execute("INSERT INTO big VALUES (3, 'small')")
            cur.execute("UPDATE big SET body = %s WHERE id = 1", (big + "!",))
            cur.execute("INSERT INTO big VALUES (4, 'after')")

        def topic() -> dict[bytes, list[Any]]:
            out: dict[bytes, list[Any]] = {}
            for m in sink_topic(kafka, f"{db}.big"):
                out.setdefault(m.key, []).append(
                    None if m.value is None else orjson.loads(m.value)["body"])
            return out

        expected = {b'{"id":1}': ["small", None], b'{"id":2}': [None],
                    b'{"id":3}': ["small"], b'{"id":4}': ["after"]}
        wait_for(lambda: topic() == expected, 120, "tombstones for the oversized rows")
        letters = sink_topic(kafka, dead)
        assert [m.key for m in letters] == [b'{"id":2}', b'{"id":1}'], letters
        assert [orjson.loads(m.value)["body"] for m in letters] == [big, big + "!"]
        headers = dict(letters[0].headers or [])
        assert headers["dead-letter.topic"] == f"{db}.big".encode()
        assert b"above the max.message.bytes" in headers["dead-letter.reason"]
        report = cli("verify", "--config", str(config))
        assert report.returncode == 8, report.stdout + report.stderr
        assert proc.poll() is None
    finally:
        code = stop(proc, timeout=90)
    text = log.read_text()
    assert code == 0, text[-3000:]
    assert f"went to dead-letter topic {dead} instead of {db}.big" in text, text[-3000:]
