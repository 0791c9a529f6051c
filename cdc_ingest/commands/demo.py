"""``cdc-ingest demo``: the quick start on local services, end to end, until Ctrl-C.

Starts the project's local MariaDB and Kafka (unless already running), creates a sample
``shop`` schema and puts its rows back as at the first run (so every run's live changes
change something), runs ``cdc-ingest start`` with ``routes/shop-demo.yaml`` (snapshot, then
the binlog; ``--format avro-confluent``: ``routes/shop-demo-avro.yaml`` and a local Schema
Registry, Avro keys and values), waits with ``status --wait-caught-up``, makes a few live
changes, runs ``verify --wait`` and shows what this run's changes wrote to Kafka (keys, values,
headers, a tombstone), then keeps the pipeline running until Ctrl-C, which stops everything the demo
started, printing the commands to look at it meanwhile.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Any

import click
import pymysql

from cdc_ingest.config import load_pipeline
from cdc_ingest.errors import CdcIngestError
from cdc_ingest.kafka import read_topic
from cdc_ingest.registry.avro_reader import AvroReader, shown
from cdc_ingest.services import KafkaBroker, MariaDB, SchemaRegistry, cache_dir
from cdc_ingest.verify.mysql import TableShape
from cdc_ingest.verify.run import avro_reader


def _route(name: str) -> Path:
    """``routes/<name>`` of a source checkout, else the copy a wheel ships as package data
    (``cdc_ingest/routes/``, put there by setup.py)."""
    checkout = Path(__file__).resolve().parents[2] / "routes" / name
    if checkout.is_file():
        return checkout
    return Path(str(resources.files("cdc_ingest").joinpath("routes", name)))


ROUTE = _route("shop-demo.yaml")
TOPICS = ("shop.orders.v1", "shop.customers")
# --format avro-confluent: Avro keys and values, a local Schema Registry, topics of their own
AVRO_ROUTE = _route("shop-demo-avro.yaml")
AVRO_TOPICS = ("shop-avro.orders.v1", "shop-avro.customers")
FORMATS = ("json", "avro-confluent")
# what routes/shop-demo*.yaml read from the environment
DEMO_ENV = ("MYSQL_PORT", "MYSQL_USER", "MYSQL_PASSWORD", "KAFKA_BOOTSTRAP",
            "CDC_INGEST_DEMO_STATE")

SCHEMA = (
    "CREATE DATABASE IF NOT EXISTS shop",
    "CREATE TABLE IF NOT EXISTS shop.customers (id INT PRIMARY KEY, name VARCHAR(50), "
    "country CHAR(2))",
    "CREATE TABLE IF NOT EXISTS shop.orders (id BIGINT PRIMARY KEY, customer_id INT, "
    "status VARCHAR(20), amount DECIMAL(12,2), created_at DATETIME(3))",
)
# The seed state, restored at every run (captured as changes when the pipeline resumes), so
# the live changes below change something each time.
ROWS = (
    "DELETE FROM shop.orders",
    "DELETE FROM shop.customers",
    "INSERT INTO shop.customers VALUES (1, 'Ada', 'GB'), (2, 'Bo', 'SE'), (3, 'Chidi', 'NG')",
    "INSERT INTO shop.orders VALUES (1001, 1, 'new', 19.90, NOW(3)), "
    "(1002, 2, 'paid', 5.00, NOW(3)), (1003, 3, 'new', 120.50, NOW(3))",
)
LIVE = (
    "INSERT INTO shop.orders VALUES (2001, 1, 'new', 42.00, NOW(3))",
    "UPDATE shop.orders SET status = 'shipped' WHERE id = 1001",
    "DELETE FROM shop.orders WHERE id = 1003",
    "UPDATE shop.customers SET name = 'Bo Ek' WHERE id = 2",
)


def _say(text: str) -> None:
    click.echo(f"\n== {text}")


def _sql(server: MariaDB, statements: tuple[str, ...]) -> None:
    conn = pymysql.connect(**server.admin, autocommit=True)
    try:
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
    finally:
        conn.close()


def _ends(kafka: KafkaBroker, topic: str) -> dict[int, int]:
    """The next offset of each partition of ``topic`` (what is there now)."""
    ends: dict[int, int] = {}
    for m in read_topic({"bootstrap.servers": kafka.bootstrap}, topic):
        ends[m.partition] = max(ends.get(m.partition, 0), m.offset + 1)
    return ends


def _show(kafka: KafkaBroker, topic: str, after: dict[int, int],
          avro: AvroReader | None) -> None:
    """The messages of ``topic`` past ``after`` (this run's); Avro ones decoded."""
    for m in read_topic({"bootstrap.servers": kafka.bootstrap}, topic):
        if m.offset < after.get(m.partition, 0):
            continue
        key, value = shown(avro, "key", m.key), shown(avro, "value", m.value)
        text = "null  <- tombstone (a delete)" if value is None else value.decode()
        headers = {k: v.decode() for k, v in m.headers}
        framed = "  (Avro, shown decoded)" if avro is not None else ""
        click.echo(f"  {topic} p{m.partition} key={key.decode() if key else None} "
                   f"value={text} headers={headers}{framed}")


def _cli(env: dict[str, str], route: Path, *args: str) -> int:
    return subprocess.run([sys.executable, "-m", "cdc_ingest.cli", *args, "--config",
                           str(route)], env=env, check=False).returncode


def _avro_reader(route: Path, env: dict[str, str], kafka: KafkaBroker) -> AvroReader | None:
    os.environ.update({k: env[k] for k in (*DEMO_ENV, "SCHEMA_REGISTRY_URL")})
    defn = load_pipeline(route)
    return avro_reader(defn, {"bootstrap.servers": kafka.bootstrap},
                       [TableShape("shop", t, (), ()) for t in ("orders", "customers")])


def run_demo(wait: bool = True, fmt: str = "json") -> None:
    home = cache_dir() / "demo"
    avro = fmt == "avro-confluent"
    route, topics = (AVRO_ROUTE, AVRO_TOPICS) if avro else (ROUTE, TOPICS)
    mysql, kafka = MariaDB(home / "mariadb"), KafkaBroker(home / "kafka")
    servers: list[Any] = [mysql, kafka]
    registry = SchemaRegistry(home / "registry") if avro else None
    if registry is not None:
        servers.append(registry)
    started = [s for s in servers if not s.is_running()]
    _say("starting local MariaDB and Kafka" + (" and a Schema Registry" if avro else "")
         + " (first run also downloads their jars)")
    for server in servers:
        server.start()
    env = {**os.environ, "MYSQL_PORT": str(mysql.port), "MYSQL_USER": mysql.cdc["user"],
           "MYSQL_PASSWORD": mysql.cdc["password"], "KAFKA_BOOTSTRAP": kafka.bootstrap,
           "CDC_INGEST_DEMO_STATE": str(home / "state")}
    if registry is not None:
        env["SCHEMA_REGISTRY_URL"] = registry.url
    proc: subprocess.Popen[bytes] | None = None
    try:
        _say("sample schema `shop`, its rows as at the first run")
        _sql(mysql, SCHEMA + ROWS)
        _say(f"cdc-ingest start --config {route}")
        proc = subprocess.Popen(
            [sys.executable, "-m", "cdc_ingest.cli", "start", "--config", str(route)],
            env=env, stdout=(home / "pipeline.log").open("ab"), stderr=subprocess.STDOUT,
        )
        click.echo(f"  (its log: {home / 'pipeline.log'})")
        _say("cdc-ingest status --wait-caught-up: until the rows are in Kafka (the sink "
             "writes before Spark's first batch: decision 0017)")
        if _cli(env, route, "status", "--wait-caught-up", "300") != 0:
            raise CdcIngestError(f"demo: the pipeline did not catch up; see {home}/pipeline.log")
        before = {t: _ends(kafka, t) for t in topics}
        _say("live changes: insert order 2001, ship 1001, delete 1003, rename customer 2")
        _sql(mysql, LIVE)
        _say("cdc-ingest verify --wait: the topics against MySQL, once the changes are in")
        code = _cli(env, route, "verify", "--wait", "180")
        _say("what this run's changes wrote (read_committed): keys, values, headers")
        reader = _avro_reader(route, env, kafka) if avro else None
        for topic in topics:
            _show(kafka, topic, before[topic], reader)
        if code != 0:
            raise CdcIngestError(f"demo: verify found differences; see {home}/pipeline.log")
        if wait:
            _say("the pipeline keeps running; Ctrl-C stops everything the demo started. In "
                 "another shell:")
            exports = " ".join(f"{k}={env[k]}" for k in DEMO_ENV
                               + (("SCHEMA_REGISTRY_URL",) if avro else ()))
            click.echo(f"  export {exports}\n"
                       f"  mariadb -h127.0.0.1 -P{mysql.port} -uroot -proot shop  "
                       "# change rows\n"
                       f"  cdc-ingest watch --config {route}   # follow the topics\n"
                       f"  cdc-ingest status --config {route}  # positions and lag\n"
                       f"  cdc-ingest verify --config {route}  # topics against MySQL\n"
                       f"  python -m cdc_ingest.services status all --home {home}")
            while True:
                time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(90)
        for server in reversed(started):
            server.stop()
        _say("stopped")


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> Any:
    args = sys.argv[1:] if argv is None else argv
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)  # also when started with SIGINT ignored
    fmt = args[args.index("--format") + 1] if "--format" in args else "json"
    run_demo(wait="--no-wait" not in args, fmt=fmt)


if __name__ == "__main__":
    main()
