"""``verify --repair`` under writes, with capture killed while the request waits and the sink
killed once capture has carried it out: each damaged key written again exactly once,
nothing else touched.

A stray producer damages three keys the writer leaves alone (a wrong value, a tombstone, a
key MySQL never had). ``verify --repair`` finds them, and capture reads those keys again:
the two rows MySQL has are written again, the extra key is tombstoned. The repair must not
touch any other key (keys 3..10, which nobody writes, get no message), must write each
repaired key once across the kills, and the next verify is equal.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path
from typing import Any

import orjson
import pymysql
from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from cdc_ingest.kafka import read_topic
from cdc_ingest.kafka.consumer import stable_ends
from tests.integration.flavors import Source
from tests.integration.pipeline_helpers import (
    cli,
    start_command,
    stop,
    wait_for,
    write_pipeline,
)
from tests.integration.test_verify_under_writes import ROWS, Writer, _live, busy_pipeline

EXTRA = ROWS + 500


def test_repair_writes_each_damaged_key_once_under_writes_and_kills(
        source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path) -> None:
    db = fresh_source_db
    conn, config = busy_pipeline(source, kafka, db, tmp_path, "rep",
                                 source_options={"heartbeat.interval": "2s"})
    topic = f"{db}.t"
    logs = {name: tmp_path / f"{name}.log" for name in ("capture", "sink", "verify")}
    procs = {name: start_command(name, config, logs[name]) for name in ("capture", "sink")}
    writer = Writer(source, db)
    kafka_config = {"bootstrap.servers": kafka.bootstrap}
    try:
        wait_for(lambda: len(_live(kafka, topic)) == ROWS, timeout=180, what="the snapshot")
        writer.start()
        producer = Producer(kafka_config)
        producer.produce(topic, orjson.dumps({"id": 1, "v": 666, "note": "stray"}),
                         orjson.dumps({"id": 1}))
        producer.produce(topic, None, orjson.dumps({"id": 2}))
        producer.produce(topic, orjson.dumps({"id": EXTRA, "v": 0, "note": "stray"}),
                         orjson.dumps({"id": EXTRA}))
        producer.flush(30)
        damaged_at = stable_ends(kafka_config, topic)

        repair = start_command("verify", config, logs["verify"], "--repair")
        wait_for(lambda: "key(s) to read again" in logs["verify"].read_text(), 180,
                 "the repair request")
        # the sink stops before capture can have taken the request (its watch looks every
        # 2 s), and capture is killed while the request waits: the next start takes it
        procs["sink"].send_signal(signal.SIGSTOP)
        procs["capture"].send_signal(signal.SIGKILL)
        procs["capture"].wait(30)
        killed_at = len(logs["capture"].read_text())
        procs["capture"] = start_command("capture", config, logs["capture"])
        wait_for(lambda: re.search(rf"repair of {re.escape(db)}\.t: 2 key\(s\) written "
                                   r"again, 1 deleted", logs["capture"].read_text()),
                 120, "capture to carry the repair out")
        # the repair's rows are in the changelog; the sink dies before it wrote them
        procs["sink"].send_signal(signal.SIGKILL)
        procs["sink"].wait(30)
        procs["sink"] = start_command("sink", config, logs["sink"])
        assert repair.wait(300) == 0, logs["verify"].read_text()[-4000:]
        out = logs["verify"].read_text()
        assert f"key(s) to read again: 3 of {db}.t" in out, out
        taken = logs["capture"].read_text()
        # carried out once, by the capture started after the kill. It takes the request; so
        # may the killed one have, when its watch looked in the moment before the kill (a
        # loaded machine), but without carrying it out: nothing of it committed
        read_again = f"3 key(s) of {db}.t read again"
        assert taken.count(f"repair of {db}.t: ") == 1, taken[-4000:]
        assert taken.index(f"repair of {db}.t: ") > killed_at, taken[-4000:]
        assert taken[killed_at:].count(read_again) == 1, taken[-4000:]
        assert taken[:killed_at].count(read_again) <= 1, taken[-4000:]
        assert "verify: 1 topic(s) from 1 table(s) equal to MySQL" in out, out

        since: dict[int, list[tuple[int, Any]]] = {}
        for msg in read_topic(kafka_config, topic, since=damaged_at):
            key = orjson.loads(msg.key)["id"]
            since.setdefault(key, []).append(
                None if msg.value is None else orjson.loads(msg.value))
        with conn.cursor() as cur:
            cur.execute("SELECT id, v, note FROM t WHERE id IN (1, 2)")
            rows = {i: {"id": i, "v": v, "note": n} for i, v, n in cur.fetchall()}
        # each damaged key once: its MySQL row, or a tombstone for the one MySQL never had
        assert since.get(1) == [rows[1]] and since.get(2) == [rows[2]], since
        assert since.get(EXTRA) == [None], since.get(EXTRA)
        assert not set(since) & set(range(3, 11)), "the repair touched other keys"
        assert writer.finish() > 100
        done = cli("verify", "--config", str(config), timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
    finally:
        if writer.is_alive():
            writer.finish()
        for name, proc in procs.items():
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
            assert stop(proc, timeout=60) == 0, logs[name].read_text()[-3000:]


def test_repair_of_an_avro_confluent_topic(mariadb: Any, kafka: Any, registry: Any,
                                           fresh_db: str, tmp_path: Path) -> None:
    """The same repair where keys and values are Avro through the registry: verify reads
    the keys back as JSON, capture spells them as the changelog does, the sink writes them
    as Avro again; the extra key is tombstoned under its Avro key."""
    db = fresh_db
    conn = pymysql.connect(**mariadb.admin, database=db, autocommit=True)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT, note VARCHAR(20))")
        cur.executemany("INSERT INTO t VALUES (%s, 0, 'first')", [(i,) for i in range(1, 201)])
    config = write_pipeline(
        tmp_path / "p.yaml", mariadb, kafka, f"repa-{db}", f"{db}.t",
        source={"scan.startup.mode": "initial", "heartbeat.interval": "2s"},
        sink={"sink.delivery-guarantee": "exactly-once", "key.format": "avro-confluent",
              "value.format": "avro-confluent", "avro-confluent.url": registry.url})
    topic = f"{db}.t"
    log = tmp_path / "start.log"
    proc = start_command("start", config, log)
    kafka_config = {"bootstrap.servers": kafka.bootstrap}
    client = SchemaRegistryClient({"url": registry.url})
    try:
        wait_for(lambda: cli("verify", "--config", str(config)).returncode == 0, 180,
                 "the snapshot, verified")
        key_ctx = SerializationContext(topic, MessageField.KEY)
        value_ctx = SerializationContext(topic, MessageField.VALUE)
        schema = {f: client.get_latest_version(f"{topic}-{f}").schema.schema_str
                  for f in ("key", "value")}
        conf = {"auto.register.schemas": False, "use.latest.version": True}
        key_of = AvroSerializer(client, schema["key"], conf=conf)
        value_of = AvroSerializer(client, schema["value"], conf=conf)
        producer = Producer(kafka_config)
        producer.produce(topic, value_of({"id": 1, "v": 666, "note": "stray"}, value_ctx),
                         key_of({"id": 1}, key_ctx))
        producer.produce(topic, None, key_of({"id": 2}, key_ctx))
        producer.produce(topic, value_of({"id": 999, "v": 0, "note": "stray"}, value_ctx),
                         key_of({"id": 999}, key_ctx))
        producer.flush(30)
        damaged_at = stable_ends(kafka_config, topic)
        done = cli("verify", "--config", str(config), "--repair", timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"key(s) to read again: 3 of {db}.t" in done.stdout, done.stdout
        decode = AvroDeserializer(client)
        since: dict[int, list[Any]] = {}
        for msg in read_topic(kafka_config, topic, since=damaged_at):
            key = decode(msg.key, key_ctx)["id"]
            since.setdefault(key, []).append(
                None if msg.value is None else decode(msg.value, value_ctx))
        assert since == {1: [{"id": 1, "v": 0, "note": "first"}],
                         2: [{"id": 2, "v": 0, "note": "first"}], 999: [None]}, since
    finally:
        assert stop(proc, timeout=90) == 0, log.read_text()[-3000:]
