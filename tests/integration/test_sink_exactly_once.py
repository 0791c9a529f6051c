"""SIGKILL capture and two sinks (exactly-once, at-least-once) at random moments, with the
sinks' keys and values in each format: ``json``, and ``avro-confluent`` with a real Schema
Registry (read back through the registry by confluent-kafka's own ``AvroDeserializer``, every
message's framing and schema ids checked)."""

from __future__ import annotations

import os
import random
import shutil
import signal
import threading
import time
import urllib.error
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.integration.flavors import Source
from tests.integration.pipeline_helpers import (
    child_pids,
    gtid_now,
    process_alive,
    sink_topic,
    start_command,
    stop,
    wait_for,
    wait_quietly,
    write_pipeline,
    written_batches,
)
from tests.integration.test_avro_sink import avro_sink, registry_get
from tests.integration.workload import Workload

# a message's (key as the workload writes it, e.g. '{"id":7}'; its v, None for a tombstone)
Decoded = tuple[str, int | None]


def _json_message(topic: str, m: Any) -> Decoded:
    del topic
    return m.key.decode(), (None if m.value is None
                            else int(m.value.split(b'"v":')[1].split(b",")[0]))


class _AvroMessages:
    """Decodes avro-confluent messages through the registry with confluent-kafka's own
    ``AvroDeserializer`` (not cdc-ingest's code), first checking each key's and value's
    framing: magic byte 0 and a schema id the registry knows (``GET /schemas/ids/{id}``)
    that is a registered version of the message's subject (``<topic>-key`` /
    ``<topic>-value``)."""

    def __init__(self, registry: Any) -> None:
        self.registry = registry
        self.deserialize = AvroDeserializer(SchemaRegistryClient({"url": registry.url}))
        self.known: dict[int, bool] = {}  # schema id -> the registry knows it
        self.subject_ids: dict[str, set[int]] = {}

    def _check_framing(self, subject: str, data: bytes, where: str) -> None:
        assert data[:1] == b"\x00" and len(data) > 5, f"{where}: not framed: {data[:8]!r}"
        schema_id = int.from_bytes(data[1:5], "big")
        if schema_id not in self.known:
            try:
                found = registry_get(self.registry, f"/schemas/ids/{schema_id}")
            except urllib.error.HTTPError as exc:
                found = {"error": exc.code}
            self.known[schema_id] = "schema" in found
        assert self.known[schema_id], f"{where}: schema id {schema_id} unknown to the registry"
        if schema_id not in self.subject_ids.get(subject, set()):
            self.subject_ids[subject] = {
                registry_get(self.registry, f"/subjects/{subject}/versions/{version}")["id"]
                for version in registry_get(self.registry, f"/subjects/{subject}/versions")}
        assert schema_id in self.subject_ids[subject], (
            f"{where}: schema id {schema_id} is none of {subject}'s "
            f"{sorted(self.subject_ids[subject])}")

    def __call__(self, topic: str, m: Any) -> Decoded:
        where = f"{topic} partition {m.partition} offset {m.offset}"
        self._check_framing(f"{topic}-key", m.key, where + " key")
        key = self.deserialize(m.key, SerializationContext(topic, MessageField.KEY))
        if m.value is None:
            return orjson.dumps(key).decode(), None
        self._check_framing(f"{topic}-value", m.value, where + " value")
        value = self.deserialize(m.value, SerializationContext(topic, MessageField.VALUE))
        assert isinstance(value, dict) and isinstance(value["v"], int), (where, value)
        return orjson.dumps(key).decode(), value["v"]


class _Reader:
    """Sink topics as (table, key) -> the v of each message in offset order (None for a
    tombstone). Each message is decoded once, when first read (the waits poll the topics):
    a committed message at an offset never changes."""

    def __init__(self, kafka: Any, decode: Callable[[str, Any], Decoded]) -> None:
        self.kafka = kafka
        self.decode = decode
        self.seen: dict[tuple[str, int, int], Decoded] = {}

    def sequences(self, topics: dict[str, str]) -> dict[tuple[str, str], list[int | None]]:
        out: dict[tuple[str, str], list[int | None]] = {}
        for table, topic in topics.items():
            for m in sink_topic(self.kafka, topic):
                at = (topic, m.partition, m.offset)
                if at not in self.seen:
                    self.seen[at] = self.decode(topic, m)
                key, v = self.seen[at]
                out.setdefault((table, key), []).append(v)
        return out

    def offsets(self, topics: dict[str, str], table: str, key: str) -> list[str]:
        """Where the messages of a key are (topic/partition@offset), for a failure."""
        return [f"{topic}/{partition}@{offset}"
                for (topic, partition, offset), (k, _) in self.seen.items()
                if topic == topics[table] and k == key]


def _expected(workload: Workload) -> dict[tuple[str, str], list[int | None]]:
    return {key: [v if op != "-D" else None for op, v in changes]
            for key, changes in workload.expected.items()}


def _running(procs: dict[str, Any], logs: dict[str, Path]) -> bool:
    """True, or fail at once with its log when a process exited without the test's kill."""
    for name, proc in procs.items():
        if proc.poll() is not None:
            raise AssertionError(f"{name} exited by itself with code {proc.returncode}; its "
                                 f"log ends:\n{logs[name].read_text()[-3000:]}")
    return True


def _is_subsequence(needle: list[Any], haystack: list[Any]) -> bool:
    it = iter(haystack)
    return all(any(x == y for y in it) for x in needle)


@pytest.mark.parametrize(("source", "fmt"), [
    # kills of capture on both servers and of the sinks in both formats; the sinks read the
    # same changelog whichever server wrote it, so one server per format keeps the suite's
    # time (each run takes 3-5 min, mostly the six kills' Spark restarts)
    ("mariadb", "json"), ("mysql", "avro-confluent"),
], indirect=["source"])
def test_kills_lose_nothing_and_exactly_once_duplicates_nothing(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path, fmt: str,
    request: pytest.FixtureRequest,
) -> None:
    seed = int(os.environ.get("CDC_INGEST_TEST_SEED", random.randrange(1 << 30)))
    print(f"workload seed {seed}, {fmt}")
    if fmt == "json":
        formats: dict[str, Any] = {}
        reader = _Reader(kafka, _json_message)
    else:  # both sinks write avro keys and values; the registry starts only for these
        registry = request.getfixturevalue("registry")
        formats = avro_sink(registry)
        reader = _Reader(kafka, _AvroMessages(registry))
    rng = random.Random(seed)
    db = fresh_source_db
    # paced so that writes go on across the kills and sink restarts (Spark takes ~20 s)
    workload = Workload(source.admin, db, seed, target_rows=50_000, pause_s=0.1)
    workload.create_tables()
    eos_topics = {"ka": f"{db}-ka", "kb": f"{db}.kb"}  # kb: no route, default topic
    alo_topics = {"ka": f"{db}-ka-alo", "kb": f"{db}-kb-alo"}
    eos = write_pipeline(
        tmp_path / "eos.yaml", source, kafka, f"eos-{db}", rf"{db}.k[ab]",
        source={"scan.startup.mode": "specific-offset",
                "scan.startup.specific-offset.gtid-set": gtid_now(source),
                "capture.transaction.max-rows": 500,
                "capture.transaction.max-interval": "300ms"},
        sink={"sink.delivery-guarantee": "exactly-once", **formats},
        routes=[{"source-table": rf"{db}.ka", "sink-table": eos_topics["ka"]}],
    )
    # a second sink on the same changelog, at-least-once (and the same schema topic: an
    # avro-confluent sink derives its schemas from the typed layouts capture writes there)
    alo = write_pipeline(
        tmp_path / "alo.yaml", source, kafka, f"alo-{db}", rf"{db}.k[ab]",
        sink={"sink.delivery-guarantee": "at-least-once", **formats},
        pipeline={"changelog.topic": f"cdc-ingest.eos-{db}.changelog",
                  "schema.topic": f"cdc-ingest.eos-{db}.schema"},
        routes=[{"source-table": rf"{db}.ka", "sink-table": alo_topics["ka"]},
                {"source-table": rf"{db}.kb", "sink-table": alo_topics["kb"]}],
    )
    logs = {n: tmp_path / f"{n}.log" for n in ("capture", "eos", "alo")}
    configs = {"capture": eos, "eos": eos, "alo": alo}
    commands = {"capture": "capture", "eos": "sink", "alo": "sink"}
    procs = {n: start_command(commands[n], configs[n], logs[n]) for n in logs}
    wait_for(lambda: all("batch" in logs[n].read_text() for n in ("eos", "alo")),
             timeout=180, what="both sinks running")
    writer = threading.Thread(target=workload.run, daemon=True)
    writer.start()
    victims = ["capture", "eos", "alo", "capture", "eos", "alo"]
    rng.shuffle(victims)
    checkpoint = tmp_path / f"eos-{db}" / "checkpoint"
    last_eos_kill = max(i for i, v in enumerate(victims) if v == "eos")
    try:
        for i, victim in enumerate(victims):
            if victim != "capture":
                # kill a sink only once it has written something since its (re)start, so
                # each kill interrupts real work, and the later restarts resume from the
                # sink group's committed offsets rather than from nothing
                seen = written_batches(logs[victim])
                wait_quietly(lambda v=victim, n=seen: _running(procs, logs)
                              and written_batches(logs[v]) > n, 90)
            time.sleep(rng.uniform(0.2, 3.0))
            jvms = child_pids(procs[victim].pid)
            procs[victim].send_signal(signal.SIGKILL)  # the driver only: its JVM sees it go
            procs[victim].wait(30)
            if i == last_eos_kill:
                # once, at the last kill of the exactly-once sink whatever the shuffle:
                # losing the checkpoint must cost time, not duplicates. It is lost once the
                # killed sink is gone: its JVM outlives the driver by a moment (~0.4 s),
                # meanwhile writing the next batch's offsets, which would make a new
                # checkpoint of that one entry (a damaged checkpoint: the next start stops
                # and says so, see test_spark_job)
                wait_for(lambda j=jvms: not any(process_alive(p) for p in j), timeout=60,
                         what=f"the killed sink's JVM {jvms} to exit")
                assert checkpoint.exists(), checkpoint
                shutil.rmtree(checkpoint)
            procs[victim] = start_command(commands[victim], configs[victim], logs[victim])
        writer.join(600)
        assert workload.error is None, workload.error
        expected = _expected(workload)
        total = workload.rows

        def eos_complete() -> bool:
            return sum(len(v) for v in reader.sequences(eos_topics).values()) >= total

        def alo_complete() -> bool:
            got = reader.sequences(alo_topics)
            return all(_is_subsequence(expected[k], got.get(k, [])) for k in expected)

        wait_for(lambda: _running(procs, logs) and eos_complete(), timeout=300,
                 what=f"{total} messages in the exactly-once topics")
        wait_for(lambda: _running(procs, logs) and alo_complete(), timeout=300,
                 what="every change in the at-least-once topics")
    finally:
        codes = {n: stop(p, timeout=60) for n, p in procs.items()}
    assert codes == {"capture": 0, "eos": 0, "alo": 0}, {
        n: logs[n].read_text()[-2000:] for n in logs}
    got = reader.sequences(eos_topics)
    different = [k for k in expected if got.get(k) != expected[k]]
    if different:
        first = different[0]
        raise AssertionError(
            f"seed {seed}, {fmt}: {len(different)} keys differ, e.g. {first}: expected "
            f"{expected[first]}, got {got.get(first)} at {reader.offsets(eos_topics, *first)}")
    assert set(got) == set(expected)
