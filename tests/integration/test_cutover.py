"""``cdc-ingest cutover``: the gate a migration switches over through.

One pipeline per server, a writer changing the captured table, then each answer the gate
gives, in the order a migration meets them: refused while MySQL takes writes; refused when a
captured table changed after the last write the user named (the writer went on); a
difference a stray producer made in the sink topic, named, at the final position of a last
write named by its GTID, while a table the pipeline does not capture keeps changing; and,
once the topic is right and MySQL read-only, exit 0 with MySQL's binlog head as the final
position.
"""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
from confluent_kafka import Producer

from tests.integration.flavors import Source, binlog_head
from tests.integration.pipeline_helpers import (
    cli,
    sink_topic,
    start_command,
    stop,
    wait_for,
)
from tests.integration.test_verify_under_writes import ROWS, Writer, _live, busy_pipeline


def _last_write(cur: Any, source: Source) -> str:
    """One more update of row 5, as the last write; its GTID."""
    if source.flavor.mariadb:
        cur.execute("UPDATE t SET v = -5 WHERE id = 5")
        cur.execute("SELECT @@last_gtid")
        return str(cur.fetchone()[0])
    tag = f"cut{uuid.uuid4().hex[:8]}"  # a tag of its own: the GTID is <uuid>:<tag>:1
    cur.execute(f"SET gtid_next = 'AUTOMATIC:{tag}'")
    cur.execute("UPDATE t SET v = -5 WHERE id = 5")
    cur.execute("SET gtid_next = 'AUTOMATIC'")
    cur.execute("SELECT @@server_uuid")
    return f"{cur.fetchone()[0]}:{tag}:1"


def _cutover(config: Path, *args: str) -> Any:
    done = cli("cutover", "--config", str(config), "--timeout", "120", *args, timeout=300)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_cutover_refuses_while_writes_go_on_and_passes_once_they_stop(
        source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path) -> None:
    db = fresh_source_db
    # capture commits its position past changes it does not capture every heartbeat
    conn, config = busy_pipeline(source, kafka, db, tmp_path, "cut",
                                 source_options={"heartbeat.interval": "2s"})
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE other (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
    topic = f"{db}.t"
    log = tmp_path / "start.log"
    proc = start_command("start", config, log)
    writer = Writer(source, db)
    try:
        wait_for(lambda: len(_live(kafka, topic)) == ROWS, timeout=180, what="the snapshot")
        writer.start()
        time.sleep(1)
        # MySQL takes writes and no last write is named: refused at once, nothing waited for
        done = _cutover(config)
        assert done.returncode == 13, done.stdout + done.stderr
        assert "MySQL takes writes (read_only is OFF; its binlog is at " in done.stderr
        assert "SET GLOBAL read_only = ON" in done.stderr

        # a last write named by position, and the writer goes on after it: the pipeline
        # reaches it, but the check is not one of that position, so refused, naming a change
        file, pos = binlog_head(source)
        done = _cutover(config, "--last-write", f"{file}:{pos}")
        assert done.returncode == 13, done.stdout + done.stderr
        assert f"cutover: final binlog position {file}:{pos}" in done.stdout, done.stdout
        moved = re.search(rf"MySQL changed after the final position {re.escape(file)}:{pos}: "
                          rf"a row change of {db}\.t at binlog (\S+):(\d+)", done.stderr)
        assert moved, done.stderr
        assert (moved[1], int(moved[2])) >= (file, pos)

        assert writer.finish() > 100
        with conn.cursor() as cur:
            gtid = _last_write(cur, source)
            final = binlog_head(source)
            # a table the pipeline does not capture changes after the last write: no matter
            cur.executemany("INSERT INTO other (v) VALUES (%s)", [(i,) for i in range(20)])
        # a stray producer damages key 1 in the sink topic
        right = {orjson.loads(m.key)["id"]: m for m in sink_topic(kafka, topic)}[1]
        producer = Producer({"bootstrap.servers": kafka.bootstrap})
        producer.produce(topic, orjson.dumps({"id": 1, "v": 666, "note": "stray"}), right.key)
        producer.flush(30)
        done = _cutover(config, "--last-write", gtid)
        assert done.returncode == 8, done.stdout + done.stderr
        assert f"cutover: final binlog position {final[0]}:{final[1]} (the end of the last " \
               f"write named ({gtid}))" in done.stdout, done.stdout
        assert "missing 0, extra 0, differing 1, conflicts 0" in done.stdout, done.stdout
        assert 'differing  {"id":1}' in done.stdout and "topic 666" in done.stdout
        assert "differ from MySQL at the final position" in done.stderr, done.stderr

        # the topic put right, MySQL read-only: the gate opens at MySQL's head
        producer.produce(topic, right.value, right.key)
        producer.flush(30)
        with conn.cursor() as cur:
            cur.execute("SET GLOBAL read_only = ON")
        try:
            head = binlog_head(source)
            done = _cutover(config)
        finally:
            with conn.cursor() as cur:
                cur.execute("SET GLOBAL read_only = OFF")
        assert done.returncode == 0, done.stdout + done.stderr
        assert (f"cutover: final binlog position {head[0]}:{head[1]} (MySQL is read-only: "
                "its binlog head)") in done.stdout, done.stdout
        assert re.search(rf"cutover: every table equal to MySQL at the final position "
                         rf"{re.escape(head[0])}:{head[1]} \(GTID set \S", done.stdout), \
            done.stdout
        assert re.search(r"MySQL rows \d+, topic keys \d+: equal", done.stdout), done.stdout
    finally:
        if writer.is_alive():
            writer.finish()
        assert stop(proc, timeout=60) == 0, log.read_text()[-3000:]
