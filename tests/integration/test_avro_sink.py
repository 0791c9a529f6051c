"""`key.format` / `value.format: avro-confluent` with a real Schema Registry (Apicurio,
Confluent API): schema versions under ADD COLUMN, a refused change, a re-key, `validate`.

The all-types table written with Avro keys and values, read back by confluent-kafka's own
`AvroDeserializer` and compared, value by value, with what the server says each value is
(server_oracle: the server's own text, not cdc-ingest's code), turned into the Python value
the documented Avro type gives (docs/output-contract.md, "avro-confluent") by this module's
own rules (:func:`assert_read_back_by_confluent_kafka_and_verify`), runs in
test_flink_avro_sink_readback.py, on the same pipeline run as Flink's read.
"""

from __future__ import annotations

import base64
import datetime
import io
import json
import signal
import struct
import urllib.request
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pymysql
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.integration import server_oracle
from tests.integration.flavors import MYSQL, Source
from tests.integration.pipeline_helpers import (
    cli,
    sink_topic,
    start_command,
    stop,
    wait_for,
    write_pipeline,
)
from tests.integration.test_capture_types import fill_all_types

UTC = datetime.UTC


def avro_sink(registry: Any, **more: Any) -> dict[str, Any]:
    return {"key.format": "avro-confluent", "value.format": "avro-confluent",
            "avro-confluent.url": registry.url, **more}


def _micros(text: str) -> int:
    sign = -1 if text.startswith("-") else 1
    h, m, s = text.lstrip("-").split(":")
    whole, _, fraction = s.partition(".")
    return sign * (((int(h) * 60 + int(m)) * 60 + int(whole)) * 1_000_000
                   + int((fraction + "000000")[:6]))


def _stamp(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.rstrip("Z")).replace(tzinfo=UTC)


def _f32(value: Any) -> float:
    return float(struct.unpack("<f", struct.pack("<f", float(value)))[0])


_BYTES = ("bit", "binary", "varbinary", "blob", "tinyblob", "mediumblob", "longblob")


def expected_avro(column: server_oracle.Column, value: Any) -> Any:
    """The value confluent-kafka's AvroDeserializer must give for a column whose JSON-form
    value is ``value`` (canonical, as the server oracle states it: ``(kind, value)``), by
    the mapping docs/output-contract.md gives."""
    if value is None:
        return None
    kind, inner = value
    data_type = column.data_type
    if kind in ("bool", "double"):
        return inner
    if kind == "float32":
        return _f32(inner)
    if kind == "array":
        return [expected_avro(column, item) if data_type == "set" else _f32(item[1])
                for item in inner] if data_type != "set" else [item[1] for item in inner]
    if kind == "number":
        if data_type == "decimal":
            return inner if (column.precision or 0) > 38 else Decimal(inner)
        if data_type == "bigint" and "unsigned" in column.column_type:
            return Decimal(inner)
        return int(inner)
    assert kind == "string", value
    if data_type in _BYTES:
        return base64.b64decode(inner)
    if data_type == "date":
        return datetime.date.fromisoformat(inner)
    if data_type == "time":
        return _micros(inner)
    if data_type in ("datetime", "timestamp"):
        return _stamp(inner)
    return inner  # text, json, enum, geometry (its text)


def _same(want: Any, got: Any) -> bool:
    if isinstance(want, float) and isinstance(got, float):
        return struct.pack("<d", want) == struct.pack("<d", got)
    return type(want) is type(got) and want == got


def read_avro(kafka: Any, registry: Any, topic: str) -> tuple[list[Any], dict[Any, Any]]:
    """The topic's messages, and each key's last value decoded by confluent-kafka (None:
    a tombstone)."""
    client = SchemaRegistryClient({"url": registry.url})
    deserialize = AvroDeserializer(client)
    messages = sink_topic(kafka, topic)
    rows: dict[Any, Any] = {}
    for m in messages:
        key = deserialize(m.key, SerializationContext(topic, MessageField.KEY))
        value = None if m.value is None else deserialize(
            m.value, SerializationContext(topic, MessageField.VALUE))
        rows[json.dumps(key, sort_keys=True, default=str)] = (key, value)
    return messages, rows


def registry_get(registry: Any, path: str) -> Any:
    with urllib.request.urlopen(registry.url + path, timeout=10) as answer:
        return json.loads(answer.read())


def schema_ids(registry: Any, subject: str) -> list[int]:
    """The schema ids of the subject's versions, oldest first, a repeat of the one before
    left out: Apicurio makes two versions of one schema (one id, so the same message bytes)
    when two sink tasks register it at the same moment; Confluent's registry makes one."""
    ids: list[int] = []
    for version in registry_get(registry, f"/subjects/{subject}/versions"):
        found = registry_get(registry, f"/subjects/{subject}/versions/{version}")["id"]
        if not ids or ids[-1] != found:
            ids.append(found)
    return ids


def run_all_types(source: Source, kafka: Any, registry: Any, db: str, tmp_path: Path,
                  name: str) -> tuple[str, Path]:
    """The all-types table written by `cdc-ingest start` with Avro keys and values (ids 1-4
    inserted, 3 updated, 2 deleted); returns its sink topic and the pipeline's config."""
    start = fill_all_types(source, db)
    config = write_pipeline(
        tmp_path / "avro.yaml", source, kafka, f"{name}-{db}", f"{db}.all_types",
        source={"scan.startup.mode": "specific-offset",
                "scan.startup.specific-offset.gtid-set": start},
        sink={"sink.delivery-guarantee": "exactly-once",
              "sink.add-tableId-to-header-enabled": True, "topic.partitions": 2,
              **avro_sink(registry)},
        pipeline={"parallelism": 1})
    log = tmp_path / "start.log"
    topic = f"{db}.all_types"
    proc = start_command("start", config, log)
    try:
        wait_for(lambda: len(sink_topic(kafka, topic)) >= 6, timeout=120,
                 what="6 messages in the sink topic")
    finally:
        code = stop(proc, timeout=90)
    assert code == 0, log.read_text()[-3000:]
    return topic, config


def assert_read_back_by_confluent_kafka_and_verify(source: Source, kafka: Any, registry: Any,
                                                   db: str, topic: str, config: Path) -> None:
    """The all-types topic (:func:`run_all_types`) read by confluent-kafka's deserializer
    equals the server, value by value, and `verify` (through the registry) says equal.
    tests/integration/test_flink_avro_sink_readback.py runs it, then Flink's read, on one
    pipeline run per server."""
    messages, rows = read_avro(kafka, registry, topic)
    # Confluent's wire format: magic byte 0 and the id of the subject's one version
    key_id = registry_get(registry, f"/subjects/{topic}-key/versions/latest")["id"]
    value_id = registry_get(registry, f"/subjects/{topic}-value/versions/latest")["id"]
    assert schema_ids(registry, f"{topic}-value") == [value_id]
    for m in messages:
        assert m.key[:1] == b"\x00" and int.from_bytes(m.key[1:5], "big") == key_id
        assert m.value is None or (m.value[:1] == b"\x00"
                                   and int.from_bytes(m.value[1:5], "big") == value_id)
        assert dict(m.headers)["tableName"] == b"all_types"

    server = server_oracle.read_server(source.admin, db)
    hand = server_oracle.hand_written(source.facts is MYSQL)
    live = {key["id"]: value for key, value in rows.values() if value is not None}
    assert sorted(live) == sorted(server.expected), "keys differ from the server's"
    wrong = []
    for key, want_row in server.expected.items():
        got_row = live[key]
        assert list(got_row) == [c.name for c in server.columns]
        for column in server.columns:
            want = expected_avro(column, want_row[column.name])
            if not _same(want, got_row[column.name]):
                wrong.append(f"id {key} {column.name} ({column.column_type}): server "
                             f"{want!r} | avro {got_row[column.name]!r}")
        for name, text in hand.get(key, {}).items():  # the values whose text needs reading
            column = next(c for c in server.columns if c.name == name)
            want = expected_avro(column, server_oracle.observe(
                name, server_oracle.parse(text)))
            if not _same(want, got_row[name]):
                wrong.append(f"id {key} {name}: hand-written {want!r} | avro {got_row[name]!r}")
    assert not wrong, "\n".join(wrong)
    # the deleted row's key is a tombstone, after its insert
    assert any(m.value is None for m in messages)
    report = cli("verify", "--config", str(config))  # verify reads avro through the registry
    assert report.returncode == 0, report.stdout + report.stderr
    assert "equal" in report.stdout, report.stdout


def _values(kafka: Any, topic: str) -> list[tuple[int, bytes]]:
    """(value schema id, Avro payload) of every non-tombstone message, in offset order."""
    return [(int.from_bytes(m.value[1:5], "big"), m.value[5:])
            for m in sink_topic(kafka, topic) if m.value is not None]


@pytest.mark.parametrize("source", ["mariadb"], indirect=True)
def test_add_column_registers_a_version_both_read_and_a_narrowed_type_stops_clearly(
        source: Source, kafka: Any, registry: Any, fresh_source_db: str,
        tmp_path: Path) -> None:
    db = fresh_source_db
    conn = pymysql.connect(**source.admin, database=db, autocommit=True)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v BIGINT, amount DECIMAL(8,2))")
        cur.executemany("INSERT INTO t VALUES (%s, 0, 1.25)", [(i,) for i in range(1, 11)])
    config = write_pipeline(
        tmp_path / "p.yaml", source, kafka, f"avro-add-{db}", f"{db}.t",
        source={"scan.startup.mode": "initial", "capture.transaction.max-interval": "200ms"},
        sink={"sink.delivery-guarantee": "exactly-once", **avro_sink(registry)})
    topic, subject = f"{db}.t", f"{db}.t-value"
    log = tmp_path / "start.log"
    proc = start_command("start", config, log)
    try:
        wait_for(lambda: len(read_avro(kafka, registry, topic)[1]) == 10, timeout=180,
                 what="the snapshot")
        with conn.cursor() as cur:
            cur.execute("ALTER TABLE t ADD COLUMN note VARCHAR(20) NOT NULL DEFAULT 'none', "
                        "ADD COLUMN n INT NULL")
            cur.execute("UPDATE t SET v = 1, note = 'changed' WHERE id <= 3")
            cur.execute("INSERT INTO t (id, v) VALUES (11, 7)")
        wait_for(lambda: len(read_avro(kafka, registry, topic)[1]) == 11, timeout=120,
                 what="the rows after ADD COLUMN")
        # a second version of the value subject; the key's stays one
        ids = schema_ids(registry, subject)
        assert len(ids) == 2, ids
        assert len(schema_ids(registry, f"{topic}-key")) == 1
        one, two = (fastavro.parse_schema(json.loads(registry_get(
            registry, f"/schemas/ids/{i}")["schema"])) for i in ids)
        by_id = {ids[0]: one, ids[1]: two}
        latest: dict[int, Any] = {}
        for schema_id, payload in _values(kafka, topic):
            # readers of either version read every message (Avro schema resolution)
            for reader in (one, two):
                record = fastavro.schemaless_reader(io.BytesIO(payload), by_id[schema_id],
                                                    reader)
                if reader is two:
                    latest[record["id"]] = record
                else:
                    assert set(record) == {"id", "v", "amount"}
        assert latest[4] == {"id": 4, "v": 0, "amount": Decimal("1.25"), "note": "none",
                             "n": None}  # written before the ALTER: the column's default
        assert latest[1]["note"] == "changed" and latest[11]["v"] == 7
        report = cli("verify", "--config", str(config))
        assert report.returncode == 0, report.stdout + report.stderr
        assert "equal" in report.stdout, report.stdout
        # watch shows the Avro messages decoded, as a json topic holds them
        watch_log = tmp_path / "watch.log"
        watcher = start_command("watch", config, watch_log)
        try:
            wait_for(lambda: "following" in watch_log.read_text(), 60, "watch to start")
            with conn.cursor() as cur:
                cur.execute("UPDATE t SET note = 'watched' WHERE id = 7")
            wait_for(lambda: '"watched"' in watch_log.read_text(), 60, "the update in watch")
        finally:
            watcher.send_signal(signal.SIGINT)
            assert watcher.wait(30) in (0, 130), watch_log.read_text()
        seen = watch_log.read_text()
        assert ('key={"id":7} value={"id":7,"v":0,"amount":1.25,"note":"watched","n":null}'
                in seen), seen
        assert "Traceback" not in seen and "undecodable" not in seen, seen

        # BIGINT -> INT narrows v (long -> int): BACKWARD refuses it; the sink stops at the
        # first row under it and writes nothing under a refused schema
        before = len(_values(kafka, topic))
        with conn.cursor() as cur:
            cur.execute("ALTER TABLE t MODIFY v INT")
            cur.execute("UPDATE t SET v = 2 WHERE id = 5")
        code = proc.wait(timeout=180)
    finally:
        if proc.poll() is None:
            stop(proc, timeout=60)
    text = log.read_text()
    assert code != 0, text[-3000:]
    assert (f"the schema registry refused the new value schema of {db}.t" in text
            and f"subject {subject} has compatibility level BACKWARD" in text
            and "ALTER TABLE t MODIFY v INT" in text and "Nothing was written" in text
            and "Fix:" in text), text[-5000:]
    assert schema_ids(registry, subject) == ids
    assert len(_values(kafka, topic)) == before


def _put(registry: Any, path: str, body: dict[str, Any]) -> None:
    request = urllib.request.Request(
        registry.url + path, data=json.dumps(body).encode(), method="PUT",
        headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200


@pytest.mark.parametrize("source", ["mariadb"], indirect=True)
def test_a_re_key_registers_the_new_key_schema_before_its_cut_over(
        source: Source, kafka: Any, registry: Any, fresh_source_db: str,
        tmp_path: Path) -> None:
    """A primary-key change re-keys the table in place (output-contract.md): the new key
    schema adds a field without a default, which BACKWARD refuses. The sink stops before
    anything of the cut-over is written (old keys live, no tombstone, even at-least-once),
    naming the fix; with the key subject's level set to one that takes it, it goes on:
    the old keys tombstoned, the rows under a second key version, verify equal."""
    db = fresh_source_db
    conn = pymysql.connect(**source.admin, database=db, autocommit=True)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE k (id INT PRIMARY KEY, k2 INT NOT NULL DEFAULT 0, v INT)")
        cur.executemany("INSERT INTO k VALUES (%s, 0, %s)", [(i, i) for i in range(1, 7)])
    config = write_pipeline(
        tmp_path / "p.yaml", source, kafka, f"avro-rekey-{db}", f"{db}.k",
        source={"scan.startup.mode": "initial", "capture.transaction.max-interval": "200ms"},
        sink={"sink.delivery-guarantee": "at-least-once", **avro_sink(registry)},
        pipeline={"schema.change.behavior": "evolve"})
    topic, subject = f"{db}.k", f"{db}.k-key"
    log = tmp_path / "start.log"
    proc = start_command("start", config, log)
    try:
        wait_for(lambda: len(read_avro(kafka, registry, topic)[1]) == 6, timeout=180,
                 what="the snapshot")
        with conn.cursor() as cur:
            cur.execute("ALTER TABLE k DROP PRIMARY KEY, ADD PRIMARY KEY (id, k2)")
            cur.execute("UPDATE k SET v = 10 WHERE id = 1")
        code = proc.wait(timeout=240)
    finally:
        if proc.poll() is None:
            stop(proc, timeout=60)
    text = log.read_text()
    assert code != 0, text[-3000:]
    assert (f"the schema registry refused the new key schema of {db}.k" in text
            and "compatibility level BACKWARD" in text and f"PUT /config/{subject}" in text
            ), text[-5000:]
    messages, rows = read_avro(kafka, registry, topic)
    assert all(m.value is not None for m in messages), "a tombstone of the refused cut-over"
    assert sorted(k["id"] for k, v in rows.values() if v is not None) == [1, 2, 3, 4, 5, 6]

    # a level that takes a key gaining a field (Apicurio reads NONE on a subject as "the
    # registry's rule", BACKWARD here; FORWARD is the subject's own)
    _put(registry, f"/config/{subject}", {"compatibility": "FORWARD"})
    proc = start_command("start", config, tmp_path / "again.log")
    try:
        def re_keyed() -> bool:
            live = [k for k, v in read_avro(kafka, registry, topic)[1].values()
                    if v is not None]
            return sorted(live, key=lambda k: k["id"]) == [
                {"id": i, "k2": 0} for i in range(1, 7)]
        wait_for(re_keyed, timeout=240, what="the table under its new key")
        assert len(schema_ids(registry, subject)) == 2
        messages, rows = read_avro(kafka, registry, topic)
        assert {json.dumps(k, sort_keys=True) for k, v in rows.values() if v is None} == {
            json.dumps({"id": i}) for i in range(1, 7)}  # every old key tombstoned
        assert rows[json.dumps({"id": 1, "k2": 0}, sort_keys=True)][1]["v"] == 10
        report = cli("verify", "--config", str(config))
        assert report.returncode == 0, report.stdout + report.stderr
    finally:
        assert stop(proc, timeout=60) == 0


@pytest.mark.parametrize("source", ["mariadb"], indirect=True)
def test_validate_reaches_the_registry_and_names_what_is_wrong(
        source: Source, kafka: Any, registry: Any, fresh_source_db: str,
        tmp_path: Path) -> None:
    db = fresh_source_db
    with pymysql.connect(**source.admin, database=db, autocommit=True) as conn, \
            conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    good = write_pipeline(tmp_path / "good.yaml", source, kafka, f"avro-ok-{db}", f"{db}.t",
                          sink=avro_sink(registry))
    result = cli("validate", "--config", str(good))
    assert result.returncode == 0, result.stdout + result.stderr
    for side in ("key", "value"):
        assert (f"[ok  ] schema registry ({side}): {registry.url} reachable, compatibility "
                "level BACKWARD") in result.stdout, result.stdout
    # nothing listens there; the user info must not be shown
    down = registry.url.replace(f":{registry.port}/", ":9/")
    bad = write_pipeline(tmp_path / "bad.yaml", source, kafka, f"avro-bad-{db}", f"{db}.t",
                         sink={**avro_sink(registry), "value.avro-confluent.url":
                               down.replace("http://", "http://bob:s3cret@")})
    result = cli("validate", "--config", str(bad))
    out = result.stdout + result.stderr
    assert result.returncode == 4, out
    assert "[ok  ] schema registry (key)" in out, out
    assert f"[FAIL] schema registry (value): schema registry {down}: GET /config failed" \
        in out, out
    assert "s3cret" not in out and "bob" not in out
