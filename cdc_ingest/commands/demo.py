"""``cdc-ingest demo``: the quick start on local services, end to end, until Ctrl-C.

Starts the project's local MariaDB and Kafka (unless already running), creates a sample
``shop`` schema with existing rows, runs ``cdc-ingest start`` with ``routes/shop-demo.yaml``
(snapshot, then the binlog), makes a few live changes, shows what landed in Kafka (keys,
values, headers, a tombstone) and the result of ``cdc-ingest verify``, then keeps the
pipeline running until Ctrl-C, which stops everything the demo started.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pymysql

from cdc_ingest.errors import CdcIngestError
from cdc_ingest.kafka import read_topic
from cdc_ingest.services import KafkaBroker, MariaDB, cache_dir

ROUTE = Path(__file__).resolve().parents[2] / "routes" / "shop-demo.yaml"

SCHEMA = (
    "CREATE DATABASE IF NOT EXISTS shop",
    "CREATE TABLE IF NOT EXISTS shop.customers (id INT PRIMARY KEY, name VARCHAR(50), "
    "country CHAR(2))",
    "CREATE TABLE IF NOT EXISTS shop.orders (id BIGINT PRIMARY KEY, customer_id INT, "
    "status VARCHAR(20), amount DECIMAL(12,2), created_at DATETIME(3))",
)
ROWS = (
    "INSERT IGNORE INTO shop.customers VALUES (1, 'Ada', 'GB'), (2, 'Bo', 'SE'), "
    "(3, 'Chidi', 'NG')",
    "INSERT IGNORE INTO shop.orders VALUES (1001, 1, 'new', 19.90, NOW(3)), "
    "(1002, 2, 'paid', 5.00, NOW(3)), (1003, 3, 'new', 120.50, NOW(3))",
)
LIVE = (
    "INSERT INTO shop.orders VALUES (2001, 1, 'new', 42.00, NOW(3)) "
    "ON DUPLICATE KEY UPDATE status = 'new'",
    "UPDATE shop.orders SET status = 'shipped' WHERE id = 1001",
    "DELETE FROM shop.orders WHERE id = 1003",
    "UPDATE shop.customers SET name = 'Bo Ek' WHERE id = 2",
)


def _say(text: str) -> None:
    click.echo(f"\n== {text}")


def _wait(predicate: Callable[[], bool], what: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise CdcIngestError(f"demo: timed out waiting for {what}")
        time.sleep(1)


def _sql(server: MariaDB, statements: tuple[str, ...]) -> None:
    conn = pymysql.connect(**server.admin, autocommit=True)
    try:
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
    finally:
        conn.close()


def _show(kafka: KafkaBroker, topic: str) -> None:
    for m in read_topic({"bootstrap.servers": kafka.bootstrap}, topic):
        value = "null  <- tombstone (a delete)" if m.value is None else m.value.decode()
        headers = {k: v.decode() for k, v in m.headers}
        click.echo(f"  {topic} p{m.partition} key={m.key.decode() if m.key else None} "
                   f"value={value} headers={headers}")


def _committed(kafka: KafkaBroker, topic: str, count: int) -> bool:
    return sum(1 for _ in read_topic({"bootstrap.servers": kafka.bootstrap}, topic)) >= count


def run_demo(wait: bool = True) -> None:
    home = cache_dir() / "demo"
    mysql, kafka = MariaDB(home / "mariadb"), KafkaBroker(home / "kafka")
    started = [s for s in (mysql, kafka) if not s.is_running()]
    _say("starting local MariaDB and Kafka (first run also downloads Kafka's jars)")
    for server in (mysql, kafka):
        server.start()
    env = {**os.environ, "MYSQL_PORT": str(mysql.port), "MYSQL_USER": mysql.cdc["user"],
           "MYSQL_PASSWORD": mysql.cdc["password"], "KAFKA_BOOTSTRAP": kafka.bootstrap,
           "CDC_INGEST_DEMO_STATE": str(home / "state")}
    proc: subprocess.Popen[bytes] | None = None
    try:
        _say("sample schema `shop` with existing rows")
        _sql(mysql, SCHEMA + ROWS)
        _say("cdc-ingest start --config routes/shop-demo.yaml")
        proc = subprocess.Popen(
            [sys.executable, "-m", "cdc_ingest.cli", "start", "--config", str(ROUTE)],
            env=env, stdout=(home / "pipeline.log").open("ab"), stderr=subprocess.STDOUT,
        )
        click.echo(f"  (its log: {home / 'pipeline.log'})")
        _wait(lambda: _committed(kafka, "shop.orders.v1", 3), "the snapshot in Kafka")
        _say("live changes: insert order 2001, ship 1001, delete 1003, rename customer 2")
        _sql(mysql, LIVE)
        _wait(lambda: _committed(kafka, "shop.orders.v1", 6), "the live changes in Kafka")
        _say("what landed (read_committed): keys, values, headers")
        _show(kafka, "shop.orders.v1")
        _show(kafka, "shop.customers")
        _say("cdc-ingest verify: the topics against MySQL")
        subprocess.run([sys.executable, "-m", "cdc_ingest.cli", "verify", "--config",
                        str(ROUTE)], env=env, check=False)
        if wait:
            _say("the pipeline keeps running: change rows in `shop` "
                 f"(mariadb -h127.0.0.1 -P{mysql.port} -uroot -proot shop) and watch the "
                 "topics; Ctrl-C stops everything the demo started")
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
    run_demo(wait="--no-wait" not in args)


if __name__ == "__main__":
    main()
