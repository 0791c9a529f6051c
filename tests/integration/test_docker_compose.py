"""The Docker Compose deployment, run for real: docker/compose.yaml with
docker/compose.test.yaml on a real Docker engine.

The images are built from the repository (tests/integration/docker_env.py: the cdc-ingest
image from docker/Dockerfile, stand-ins for the official mysql and apache/kafka images, which
this machine cannot pull). Everything else is compose.yaml as users get it: mysql-init.sh,
the cdc user's grants, pipeline.yaml, health checks, depends_on, volumes, restart policies.
What the test looks at is what a user sees: the messages read from the host through Kafka's
published port, `cdc-ingest verify` run in the container, the health status, exit codes.

When no engine can run here the fixture fails with the reason (never a skip).
"""

from __future__ import annotations

import decimal
import json
import random
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from cdc_ingest.kafka.partition import java_partition
from tests.integration.docker_env import DOCKER_DIR, DockerUnavailable, compose_cmd, ensure_all
from tests.integration.pipeline_helpers import wait_for

HOST_KAFKA = "127.0.0.1:29092"  # compose.yaml publishes Kafka's HOST listener here
TOPIC = "shop.orders"
PIPELINE = "/etc/cdc-ingest/pipeline.yaml"
WRITES_PER_S = 200
ROOT_PWD = 'MYSQL_PWD="$(cat /run/secrets/mysql_root_password)"'  # the Compose secret


# -- driving compose ---------------------------------------------------------------------


def compose(*args: str, timeout: float = 300, check: bool = True,
            stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(compose_cmd(*args), capture_output=True, text=True,
                            timeout=timeout, check=False, input=stdin,
                            stdin=None if stdin is not None else subprocess.DEVNULL)
    if check and result.returncode != 0:
        raise AssertionError(f"docker compose {' '.join(args)} exited {result.returncode}:\n"
                             f"{result.stdout}\n{result.stderr}")
    return result


def sql(statements: str) -> list[list[str]]:
    """Run SQL as root with the mysql client in the mysql container; rows as text fields."""
    out = compose("exec", "-T", "mysql", "sh", "-c",
                  f'{ROOT_PWD} exec mysql -uroot -N -B',
                  stdin=statements, timeout=60).stdout
    return [line.split("\t") for line in out.splitlines() if line]


def container_id(service: str) -> str:
    return compose("ps", "-q", "-a", service).stdout.strip()


def inspect(cid: str, template: str) -> str:
    return subprocess.run(["docker", "inspect", "-f", template, cid], capture_output=True,
                          text=True, check=False).stdout.strip()


def health() -> str:
    """cdc-ingest's health while its container runs, else the container's state."""
    cid = container_id("cdc-ingest")
    if not cid:
        return "absent"
    out = inspect(cid, "{{.State.Status}}/{{.State.Health.Status}}")
    return out.split("/")[-1] if out.startswith("running/") else out.split("/")[0]


def wait_health(status: str, timeout: float) -> None:
    try:
        wait_for(lambda: health() == status, timeout=timeout, what=f"cdc-ingest {status}")
    except AssertionError as exc:
        cid = container_id("cdc-ingest")
        raise AssertionError(
            f"{exc}; it is {health()}; health log:\n{inspect(cid, '{{json .State.Health}}')}"
            f"\ncdc-ingest log:\n{logs('cdc-ingest')}") from None


def logs(service: str) -> str:
    return compose("logs", "--no-color", "--tail", "60", service, check=False).stdout


def verify_in_container() -> subprocess.CompletedProcess[str]:
    return compose("exec", "-T", "cdc-ingest", "cdc-ingest", "verify", "--config", PIPELINE,
                   timeout=300, check=False)


# -- reading what users read -------------------------------------------------------------


@dataclass(frozen=True)
class Msg:
    partition: int
    offset: int
    key: dict[str, Any]
    value: dict[str, Any] | None
    headers: dict[str, bytes]
    raw_key: bytes


_RETRIABLE = (KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
              KafkaError.UNKNOWN_TOPIC_OR_PART)


def _watermarks(consumer: Consumer, tp: TopicPartition) -> tuple[int, int]:
    """A partition's watermarks, asked again for up to 30 s while the broker answers with a
    retriable error (a fresh broker's new topic has no leader for a moment after ``up``), as
    any client would; a lasting or fatal error fails."""
    deadline = time.monotonic() + 30
    while True:
        try:
            low, high = consumer.get_watermark_offsets(tp, timeout=30)
            return int(low), int(high)
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            retriable = isinstance(err, KafkaError) and (err.code() in _RETRIABLE
                                                         or err.retriable())
            if not retriable or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def topic(name: str = TOPIC) -> tuple[list[Msg], int]:
    """Every committed message of ``name`` read from the host (read_committed, a plain
    confluent-kafka consumer), per partition in offset order; and the partition count."""
    consumer = Consumer({"bootstrap.servers": HOST_KAFKA, "group.id": "docker-test-reader",
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    try:
        meta = consumer.list_topics(name, timeout=30).topics.get(name)
        if meta is None or meta.error is not None or not meta.partitions:
            return [], 0
        ends = {}
        for p in meta.partitions:
            low, high = _watermarks(consumer, TopicPartition(name, p))
            if high > low:
                ends[p] = high
        consumer.assign([TopicPartition(name, p, OFFSET_BEGINNING) for p in ends])
        found: list[Msg] = []
        deadline = time.monotonic() + 60
        # the end offsets are high watermarks: the last record of a partition may be a
        # transaction marker, which is never delivered but moves the position past it
        while ends and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and m.error() is None and m.offset() < ends.get(m.partition(), 0):
                raw = m.value()
                found.append(Msg(m.partition(), m.offset(), json.loads(m.key()),
                                 None if raw is None
                                 else json.loads(raw, parse_float=decimal.Decimal),
                                 dict(m.headers() or []), m.key()))
            for tp in consumer.position([TopicPartition(name, p) for p in list(ends)]):
                if tp.offset >= ends[tp.partition]:
                    del ends[tp.partition]
        assert not ends, f"could not read {name} to its end from the host: {ends} left"
        return sorted(found, key=lambda x: (x.partition, x.offset)), len(meta.partitions)
    finally:
        consumer.close()


def latest(messages: list[Msg]) -> dict[int, dict[str, Any] | None]:
    state: dict[int, dict[str, Any] | None] = {}
    for m in messages:
        state[m.key["id"]] = m.value
    return state


def database_rows() -> dict[int, dict[str, Any]]:
    rows = sql("SELECT id, customer, status, amount, "
               "DATE_FORMAT(created_at, '%Y-%m-%d %H:%i:%s.%f') FROM shop.orders ORDER BY id")
    return {int(r[0]): {"id": int(r[0]), "customer": r[1], "status": r[2],
                        "amount": decimal.Decimal(r[3]), "created_at": r[4][:-3]}
            for r in rows}


def live(messages: list[Msg]) -> dict[int, dict[str, Any]]:
    return {k: v for k, v in latest(messages).items() if v is not None}


def wait_until_equal(timeout: float = 120) -> list[Msg]:
    """The topic's live rows equal the table's; returns the messages."""
    seen: list[list[Msg]] = []

    def equal() -> bool:
        messages, _ = topic()
        seen[:] = [messages]
        return live(messages) == database_rows()

    try:
        wait_for(equal, timeout=timeout, what="the topic to equal shop.orders")
    except AssertionError:
        raise AssertionError(
            f"topic {TOPIC} never equalled the table: topic {live(seen[0]) if seen else {}}, "
            f"table {database_rows()}\ncdc-ingest log:\n{logs('cdc-ingest')}") from None
    return seen[0]


# -- the stack ---------------------------------------------------------------------------


def up(timeout: float = 600) -> float:
    """``up -d``, then wait until cdc-ingest is healthy; seconds from ``up`` to the first
    message of shop.orders read from the host."""
    began = time.monotonic()
    compose("up", "-d", timeout=timeout)
    wait_for(lambda: topic()[0], timeout=timeout, what=f"the first message of {TOPIC}")
    first = time.monotonic() - began
    wait_health("healthy", timeout)
    return first


@pytest.fixture(scope="module")
def stack() -> Iterator[dict[str, float]]:
    try:
        ensure_all()  # engine, Compose, bases and images: cached after scripts/setup.sh
    except DockerUnavailable as exc:
        pytest.fail(f"the Docker Compose test cannot run here: {exc}")
    compose("down", "-v", "--remove-orphans", timeout=300)
    facts: dict[str, float] = {}
    try:
        facts["up_to_first_message_s"] = up()
        yield facts
    finally:
        compose("down", "-v", "--remove-orphans", timeout=300, check=False)


# -- the tests ---------------------------------------------------------------------------


def test_snapshot_live_changes_and_verify(stack: dict[str, float]) -> None:
    """The demo rows and changes made with the mysql client reach the topic as keyed upserts
    (key, value, headers, Java partition, a tombstone on delete); verify in the container
    says the copy equals the table."""
    print(f"up to first message: {stack['up_to_first_message_s']:.1f} s")
    snapshot = wait_until_equal()
    assert {m.key["id"] for m in snapshot} == {1, 2, 3}
    sql("UPDATE shop.orders SET status = 'paid', amount = 21.50 WHERE id = 1;"
        "INSERT INTO shop.orders (id, customer, status, amount) VALUES (4, 'dave', 'new', 3.25);"
        "DELETE FROM shop.orders WHERE id = 2;")
    messages = wait_until_equal()
    _, partitions = topic()
    by_key: dict[int, list[Msg]] = {}
    for m in messages:
        by_key.setdefault(m.key["id"], []).append(m)
        assert m.raw_key == json.dumps({"id": m.key["id"]}, separators=(",", ":")).encode()
        assert m.partition == java_partition(m.raw_key, partitions), m
        assert m.headers == {"namespace": b"", "schemaName": b"shop", "tableName": b"orders"}
    assert [m.value and m.value["status"] for m in by_key[1]] == ["new", "paid"]
    assert by_key[1][-1].value is not None and by_key[1][-1].value["amount"] == decimal.Decimal("21.50")
    assert [m.value is None for m in by_key[2]] == [False, True]  # snapshot row, tombstone
    assert [m.value and m.value["customer"] for m in by_key[4]] == ["dave"]
    assert len(by_key[3]) == 1  # untouched: its snapshot row only
    result = verify_in_container()
    assert result.returncode == 0, result.stdout + result.stderr


@dataclass
class Writer:
    """~WRITES_PER_S single-row transactions through one mysql client in the mysql container;
    every write gives its key a new status, so a repeated or lost change is visible."""

    seed: int
    wrote: dict[int, list[str | None]] = field(default_factory=dict)
    count: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        self._proc = subprocess.Popen(
            compose_cmd("exec", "-T", "mysql", "sh", "-c",
                        f'{ROOT_PWD} exec mysql -uroot shop'),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        rng = random.Random(self.seed)
        began = time.monotonic()
        assert self._proc.stdin is not None
        while not self._stop.is_set():
            key = 1000 + rng.randrange(300)
            status = f"s{self.count}"
            history = self.wrote.setdefault(key, [])
            if not history or history[-1] is None:
                stmt = (f"INSERT INTO orders (id, customer, status, amount) "
                        f"VALUES ({key}, 'w{key}', '{status}', {self.count % 1000}.25);")
                history.append(status)
            elif rng.random() < 0.85:
                stmt = f"UPDATE orders SET status = '{status}' WHERE id = {key};"
                history.append(status)
            else:
                stmt = f"DELETE FROM orders WHERE id = {key};"
                history.append(None)
            self._proc.stdin.write(stmt + "\n")
            self._proc.stdin.flush()
            self.count += 1
            pause = began + self.count / WRITES_PER_S - time.monotonic()
            if pause > 0:
                time.sleep(pause)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        out = self._proc.stdout.read() if self._proc.stdout else ""
        assert self._proc.wait(60) == 0, f"the writer's mysql client failed: {out}"


def assert_exactly_once(writer: Writer) -> None:
    messages = wait_until_equal(timeout=180)
    got: dict[int, list[str | None]] = {}
    for m in messages:
        if m.key["id"] >= 1000:
            got.setdefault(m.key["id"], []).append(m.value and m.value["status"])
    for key, history in writer.wrote.items():
        assert got.get(key) == history, (
            f"key {key}: the database had {history}, the topic has {got.get(key)}")
    result = verify_in_container()
    assert result.returncode == 0, result.stdout + result.stderr


def test_restart_crash_and_kill_under_writes_exactly_once(stack: dict[str, float]) -> None:
    """Under ~200 changes/s: `docker compose restart cdc-ingest`; a crash of the container
    (its processes SIGKILLed from the host, as the kernel's OOM killer would), which the
    restart policy brings back; and `docker kill`, which Docker counts as a manual stop (no
    restart by policy) until `docker compose up -d`. Every change once, in order, per key."""
    writer = Writer(seed=32)
    writer.start()
    try:
        time.sleep(8)
        compose("restart", "cdc-ingest", timeout=180)
        wait_health("healthy", timeout=240)
        time.sleep(5)
        cid = container_id("cdc-ingest")
        restarts = int(inspect(cid, "{{.RestartCount}}"))
        subprocess.run(["kill", "-KILL", inspect(cid, "{{.State.Pid}}")], check=True)
        wait_for(lambda: int(inspect(cid, "{{.RestartCount}}") or 0) > restarts,
                 timeout=120, what="the restart policy to restart the crashed container")
        wait_health("healthy", timeout=240)
        time.sleep(5)
        subprocess.run(["docker", "kill", cid], check=True, capture_output=True)
        time.sleep(5)
        assert health() == "exited", "docker kill is a manual stop: no restart by policy"
        compose("up", "-d", timeout=180)
        wait_health("healthy", timeout=240)
        time.sleep(5)
    finally:
        writer.stop()
    assert writer.count > 2000
    assert_exactly_once(writer)


def test_down_up_resumes_and_down_v_snapshots_again(stack: dict[str, float]) -> None:
    """`down` then `up` (volumes kept) resumes where it stopped: nothing repeated. `down -v`
    then `up`: new volumes, the init script's rows snapshotted afresh."""
    before, _ = topic()
    compose("down", timeout=300)
    compose("up", "-d", timeout=600)
    wait_health("healthy", timeout=300)
    sql("UPDATE shop.orders SET status = 'after-down-up' WHERE id = 3;")
    after = wait_until_equal()
    old = {(m.partition, m.offset): m for m in before}
    assert [m for m in after if (m.partition, m.offset) in old] == before
    new = [m for m in after if (m.partition, m.offset) not in old]
    assert [(m.key["id"], m.value and m.value["status"]) for m in new] == [(3, "after-down-up")]

    compose("down", "-v", timeout=300)
    stack["down_v_up_to_first_message_s"] = up()
    messages = wait_until_equal()
    assert sorted(m.key["id"] for m in messages) == [1, 2, 3]
    assert [m.value and m.value["status"] for m in sorted(messages, key=lambda m: m.key["id"])] \
        == ["new", "paid", "shipped"]


def test_health_follows_the_database(stack: dict[str, float]) -> None:
    """cdc-ingest turns unhealthy when capture cannot reach MySQL, healthy again after, and
    a change made meanwhile arrives once."""
    wait_health("healthy", timeout=240)  # not failed by an earlier test's unfinished start
    compose("stop", "mysql", timeout=120)
    try:
        wait_health("unhealthy", timeout=120)
    finally:
        compose("start", "mysql", timeout=180)
    wait_health("healthy", timeout=300)
    before, _ = topic()
    sql("UPDATE shop.orders SET status = 'after-outage' WHERE id = 2;")
    after = wait_until_equal()
    assert len(after) == len(before) + 1


def _pems(text: str) -> set[str]:
    return {"".join(block.split()) for block in re.findall(
        r"-----BEGIN CERTIFICATE-----(.+?)-----END CERTIFICATE-----", text, re.S)}


def test_no_password_in_docker_inspect_and_no_build_ca_in_the_image(
        stack: dict[str, float]) -> None:
    """The passwords are Compose secrets: no `docker inspect` of the stack shows them. The CA
    the build trusted (a secret of the build) is in no image a user gets."""
    passwords = [line.split("=", 1)[1] for line in
                 (DOCKER_DIR / ".env").read_text().splitlines()
                 if "=" in line and not line.startswith("#")]
    assert passwords
    for service in ("mysql", "kafka", "cdc-ingest"):
        shown = subprocess.run(["docker", "inspect", container_id(service)], capture_output=True,
                               text=True, check=True).stdout
        for password in passwords:
            assert password not in shown, f"docker inspect of {service} shows a password"
    added = set()  # the CAs this machine added to its trust (Debian: update-ca-certificates)
    for path in Path("/usr/local/share/ca-certificates").rglob("*.crt"):
        added |= _pems(path.read_text(errors="replace"))
    image = subprocess.run(
        ["docker", "run", "--rm", "--entrypoint", "sh", "cdc-ingest:dev", "-c",
         "cat /etc/ssl/certs/ca-certificates.crt; for f in /etc/ssl/certs/java/cacerts; do "
         "keytool -list -rfc -storepass changeit -keystore $f 2>/dev/null; done"],
        capture_output=True, text=True, check=True, timeout=120).stdout
    trusted = _pems(image)
    # what the image brings: the connector jars and the CDS archive, found with no network,
    # for the non-root user it runs as
    offline = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "--entrypoint", "python3",
         "cdc-ingest:dev", "-c",
         "import os; from cdc_ingest.sink.runtime import class_data_sharing as cds, session as spark; "
         "jars = spark.fetch_spark_kafka_jars(); "
         "print(os.getuid(), len(jars), *cds.java_options(jars))"],
        capture_output=True, text=True, timeout=120, check=False)
    assert offline.returncode == 0, offline.stderr
    uid, jars, *options = offline.stdout.split()
    assert uid == "10001" and int(jars) >= 1, offline.stdout
    assert any(o.startswith("-XX:SharedArchiveFile=") for o in options), offline.stdout
    # the size docker/README.md states
    stated = re.search(r"Its size: about ([0-9.]+) GB", (DOCKER_DIR / "README.md").read_text())
    assert stated, "docker/README.md states no image size"
    size = int(subprocess.run(["docker", "image", "inspect", "-f", "{{.Size}}", "cdc-ingest:dev"],
                              capture_output=True, text=True, check=True).stdout) / 1e9
    assert abs(size - float(stated.group(1))) <= 0.15 * float(stated.group(1)), (
        f"the image is {size:.2f} GB; docker/README.md says about {stated.group(1)} GB")
    assert len(trusted) > 50, "the image's CA bundle could not be read"
    assert not added & trusted, "the image trusts a CA the build was given as a secret"
