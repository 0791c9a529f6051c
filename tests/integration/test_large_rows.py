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

from tests.conftest import admin_conn
from tests.integration.flavors import Source
from tests.integration.pipeline_helpers import (
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
