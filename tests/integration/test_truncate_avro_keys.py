"""TRUNCATE with Avro keys (``key.format: avro-confluent``): each key is tombstoned by the
sink task that owns it, the one its changelog key hashes to, in order with its changes.

An Avro key's bytes are not its changelog key's, so a task that chose its keys by hashing
the Avro bytes tombstoned about half of them out of their owners' order: a re-insert another
task had already written could be deleted (a missing row), or a change still to come from
the owner could follow the tombstone (a phantom row). The owner is found by reading each Avro
key back into the changelog's spelling; this test holds that spelling to capture's own keys
for a key of every kind whose spelling differs between the two (a DECIMAL's scale, a DECIMAL
beyond 38 digits Avro holds as text, non-BMP and control characters, DATETIME and TIMESTAMP
fractions), then checks every key's change sequence and ``verify`` after a TRUNCATE followed
at once by re-inserts of the same keys, over three changelog partitions.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from cdc_ingest.config.loader import load_pipeline
from cdc_ingest.kafka import read_topic
from cdc_ingest.model.changelog import decode_ddl, decode_record
from cdc_ingest.sink.driver.task_settings import sink_settings
from cdc_ingest.sink.task.table_resets import changelog_spelling
from tests.integration.flavors import Source
from tests.integration.pipeline_helpers import (
    cli,
    sink_topic,
    start_command,
    stop,
    wait_for,
    write_pipeline,
)
from tests.integration.test_schema_changes import KEYS, Writer

ROWS = 40  # rows of the typed-key table, re-inserted after its TRUNCATE


def _typed_row(rng: random.Random, i: int) -> tuple[Any, ...]:
    """A row of ``t``: a key of every spelling kind, and ``v``."""
    text = rng.choice(["k", "é", "\U0001F511", "\x1f", "\\u00", '"'])
    return (f"{rng.randint(0, 999)}.{rng.choice(['00', '50', '05'])}",
            f"{text}-{i}",
            f"2024-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} 12:34:5{rng.randint(0, 9)}"
            f".{rng.randint(0, 999):03d}",
            f"2023-05-0{rng.randint(1, 9)} 01:02:03.{rng.randint(0, 999999):06d}",
            str(rng.randint(10**44, 10**45)),
            i)


def _avro_keys(registry: Any, kafka: Any, topic: str) -> list[tuple[Any, Any, Any]]:
    """(raw key, key as confluent-kafka reads it, value text) of each message."""
    deserialize = AvroDeserializer(SchemaRegistryClient({"url": registry.url}))
    context = SerializationContext(topic, MessageField.KEY)
    return [(m.key, deserialize(m.key, context), m.value) for m in sink_topic(kafka, topic)]


def test_truncate_with_avro_keys_tombstones_each_key_from_its_owner(
    source: Source, kafka: Any, registry: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    db = fresh_source_db
    writer = Writer(source, db, seed=29)
    writer.execute("CREATE TABLE a (id INT PRIMARY KEY, v INT NOT NULL)")
    writer.execute("CREATE TABLE t (d DECIMAL(10,2) NOT NULL, s VARCHAR(20) CHARACTER SET "
                   "utf8mb4 NOT NULL, dt DATETIME(3) NOT NULL, ts TIMESTAMP(6) NOT NULL, "
                   "big DECIMAL(50,0) NOT NULL, v INT NOT NULL, PRIMARY KEY (d, s, dt, ts, big))")
    writer.execute("SET time_zone = '+00:00'")
    rng = random.Random(7)
    rows = [_typed_row(rng, i) for i in range(ROWS)]
    insert = "INSERT INTO t (d, s, dt, ts, big, v) VALUES (%s, %s, %s, %s, %s, %s)"
    for row in rows:
        writer.execute(insert, row)
    writer.random_changes(80, ("a",))
    writer.expected = {slot: [v] for slot, v in writer.live.items()}
    config = write_pipeline(
        tmp_path / "p.yaml", source, kafka, f"avro-reset-{db}", f"{db}.[at]",
        source={"scan.startup.mode": "initial", "capture.transaction.max-interval": "200ms"},
        sink={"sink.delivery-guarantee": "exactly-once",
              "sink.add-tableId-to-header-enabled": True,
              "key.format": "avro-confluent", "key.avro-confluent.url": registry.url},
        pipeline={"parallelism": 3},
    )
    topic_a, topic_t = f"{db}.a", f"{db}.t"

    def sequences() -> dict[tuple[str, int], list[int | None]]:
        assert proc.poll() is None, log.read_text()[-3000:]
        out: dict[tuple[str, int], list[int | None]] = {}
        for _, key, value in _avro_keys(registry, kafka, topic_a):
            out.setdefault(("a", key["id"]), []).append(
                None if value is None else int(value.split(b'"v":')[1].rstrip(b"}")))
        return out

    log = tmp_path / "start.log"
    proc = start_command("start", config, log)
    try:
        wait_for(lambda: sequences() == writer.expected and len(sink_topic(kafka, topic_t))
                 == ROWS, timeout=240, what="the snapshot in the sink topics")
        writer.random_changes(60, ("a",))
        writer.emptied("a", "TRUNCATE TABLE a")
        for key in range(1, KEYS // 2):  # the same keys again, at once
            writer.put("a", key)
        writer.execute("TRUNCATE TABLE t")
        for row in rows[: ROWS // 2]:
            writer.execute(insert, row)
        writer.random_changes(60, ("a",))
        try:
            wait_for(lambda: sequences() == writer.expected, timeout=120,
                     what="every key's change sequence in the sink topic of a")
        except AssertionError:
            got = sequences()
            wrong = sorted(k for k in set(got) | set(writer.expected)
                           if got.get(k) != writer.expected.get(k))
            raise AssertionError(f"{len(wrong)} keys of a out of order, e.g. " + "; ".join(
                f"{k}: expected {writer.expected.get(k)}, got {got.get(k)}"
                for k in wrong[:5])) from None
        # t: 40 snapshot rows, 40 tombstones, then the 20 re-inserted rows live
        wait_for(lambda: len(sink_topic(kafka, topic_t)) == 2 * ROWS + ROWS // 2,
                 timeout=240, what="t's tombstones and re-inserts")
        report = cli("verify", "--config", str(config))
        assert report.returncode == 0, report.stdout + report.stderr
    finally:
        code = stop(proc, timeout=60)
    assert code == 0, log.read_text()[-3000:]

    messages = _avro_keys(registry, kafka, topic_t)
    live: dict[Any, Any] = {}
    for raw, key, value in messages:
        live[raw] = (key, value)
    assert sorted(k["s"] for k, v in live.values() if v is not None) == sorted(
        r[1] for r in rows[: ROWS // 2])
    # one tombstone per key, between its snapshot row and its re-insert
    per_key: dict[bytes, list[bool]] = {}
    for raw, _, value in messages:
        per_key.setdefault(raw, []).append(value is None)
    assert sorted(per_key.values()) == sorted(
        [[False, True, False]] * (ROWS // 2) + [[False, True]] * (ROWS - ROWS // 2))

    # the reset's spelling of each Avro key is capture's own changelog key, byte for byte
    defn = load_pipeline(config)
    settings = sink_settings(defn)
    changelog_keys, ddl = set(), None
    for msg in read_topic({"bootstrap.servers": kafka.bootstrap}, settings.changelog_topic):
        record = decode_record(msg.value)
        if (record.db, record.table) != (db, "t"):
            continue
        if msg.key is None:
            if ddl is None and b'"truncate"' in msg.value:
                ddl = decode_ddl(msg.value)
        else:
            changelog_keys.add(msg.key)
    assert ddl is not None and ddl.key == ["d", "s", "dt", "ts", "big"], ddl
    assert ddl.classes is not None and ddl.classes[0] == "decimal:2", ddl
    spelled = changelog_spelling(settings, ddl)
    assert {spelled(raw) for raw in per_key} == changelog_keys
    assert len(changelog_keys) == ROWS
