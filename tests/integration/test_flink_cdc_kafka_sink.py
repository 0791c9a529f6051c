"""Flink CDC's own mysql-to-kafka quickstart, run by `cdc-ingest start` (both servers).

The pipeline file is the quickstart's YAML as Flink CDC documents it (`type: kafka`,
`topic:`, a pipeline name with spaces, `server-time-zone`), with only the host, port, user
and password changed, and the name and topic given a per-run suffix so that the two servers'
runs in one Kafka stay apart. The quickstart's tables, rows and statements are run as the
quickstart runs them, and the topic must then hold exactly the records Flink CDC's sink writes
for them (its docs' example records; DECIMAL keeps its scale, `4.00`, see
docs/flink-cdc-compatibility.md), every one in partition 0 with Flink's key; `verify` must
find the topic equal to MySQL. A second pipeline writes canal-json with csv keys, hash-by-key
partitions, a topic mapping and null fields left out, and a TRUNCATE must end every row with a
DELETE event.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient

from cdc_ingest.kafka.partition import java_partition
from tests.conftest import admin_conn
from tests.integration.flavors import Source
from tests.integration.pipeline_helpers import sink_topic, stop, wait_for

QUICKSTART = r"""################################################################################
# Description: Sync MySQL all tables to Kafka
################################################################################
source:
  type: mysql
  hostname: {host}
  port: {port}
  username: {user}
  password: {password}
  tables: app_db.\.*
  server-id: 5400-5404
  server-time-zone: UTC

sink:
  type: kafka
  name: Kafka Sink
  properties.bootstrap.servers: {bootstrap}
  topic: yaml-mysql-kafka-{suffix}

pipeline:
  name: MySQL to Kafka Pipeline {suffix}
  parallelism: 1
"""

SETUP = [
    "CREATE TABLE `orders` (`id` INT NOT NULL, `price` DECIMAL(10,2) NOT NULL, "
    "PRIMARY KEY (`id`))",
    "INSERT INTO `orders` (`id`, `price`) VALUES (1, 4.00)",
    "INSERT INTO `orders` (`id`, `price`) VALUES (2, 100.00)",
    "CREATE TABLE `shipments` (`id` INT NOT NULL, `city` VARCHAR(255) NOT NULL, "
    "PRIMARY KEY (`id`))",
    "INSERT INTO `shipments` (`id`, `city`) VALUES (1, 'beijing')",
    "INSERT INTO `shipments` (`id`, `city`) VALUES (2, 'xian')",
    "CREATE TABLE `products` (`id` INT NOT NULL, `product` VARCHAR(255) NOT NULL, "
    "PRIMARY KEY (`id`))",
    "INSERT INTO `products` (`id`, `product`) VALUES (1, 'Beer')",
    "INSERT INTO `products` (`id`, `product`) VALUES (2, 'Cap')",
    "INSERT INTO `products` (`id`, `product`) VALUES (3, 'Peanut')",
]
CHANGES = [
    "INSERT INTO app_db.orders (id, price) VALUES (3, 100.00)",
    "ALTER TABLE app_db.orders ADD amount varchar(100) NULL",
    "UPDATE app_db.orders SET price=100.00, amount=100.00 WHERE id=1",
    "DELETE FROM app_db.orders WHERE id=2",
]


def _source(table: str) -> str:
    return f'"source":{{"db":"app_db","table":"{table}"}}}}'


# What Flink CDC's sink writes for the quickstart (its docs' records), compact as written
SNAPSHOT = [
    '{"before":null,"after":{"id":1,"price":4.00},"op":"c",' + _source("orders"),
    '{"before":null,"after":{"id":2,"price":100.00},"op":"c",' + _source("orders"),
    '{"before":null,"after":{"id":1,"city":"beijing"},"op":"c",' + _source("shipments"),
    '{"before":null,"after":{"id":2,"city":"xian"},"op":"c",' + _source("shipments"),
    '{"before":null,"after":{"id":1,"product":"Beer"},"op":"c",' + _source("products"),
    '{"before":null,"after":{"id":2,"product":"Cap"},"op":"c",' + _source("products"),
    '{"before":null,"after":{"id":3,"product":"Peanut"},"op":"c",' + _source("products"),
]
LIVE = [
    '{"before":null,"after":{"id":3,"price":100.00},"op":"c",' + _source("orders"),
    '{"before":{"id":1,"price":4.00,"amount":null},"after":{"id":1,"price":100.00,'
    '"amount":"100.00"},"op":"u",' + _source("orders"),
    '{"before":{"id":2,"price":100.00,"amount":null},"after":null,"op":"d",'
    + _source("orders"),
]


def _run(source: Any, sql: list[str], database: str | None = "app_db") -> None:
    with admin_conn(source, database) as conn, conn.cursor() as cur:
        for statement in sql:
            cur.execute(statement)


def _app_db(source: Source) -> None:
    _run(source, ["DROP DATABASE IF EXISTS app_db", "CREATE DATABASE app_db"], None)
    _run(source, SETUP)


def _cli(cwd: Path, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cdc_ingest.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, check=False)


def _start(cwd: Path, config: Path) -> subprocess.Popen[bytes]:
    log = (cwd / "start.log").open("ab")
    return subprocess.Popen([sys.executable, "-m", "cdc_ingest.cli", "start", "--config",
                             str(config)], cwd=cwd, stdout=log, stderr=subprocess.STDOUT)


def _pipeline(source: Source, kafka: Any, tmp_path: Path, text: str) -> tuple[Path, str]:
    suffix = f"{source.name}-{uuid.uuid4().hex[:6]}"
    config = tmp_path / "mysql-to-kafka.yaml"
    config.write_text(text.format(host="127.0.0.1", port=source.port,
                                  user=source.admin["user"],
                                  password=source.admin["password"],
                                  bootstrap=kafka.bootstrap, suffix=suffix))
    checked = _cli(tmp_path, "validate", "--config", str(config))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    return config, suffix


def test_flink_cdc_quickstart_runs_unchanged(source: Source, kafka: Any,
                                             tmp_path: Path) -> None:
    _app_db(source)
    config, suffix = _pipeline(source, kafka, tmp_path, QUICKSTART)
    topic = f"yaml-mysql-kafka-{suffix}"
    proc = _start(tmp_path, config)
    try:
        wait_for(lambda: len(sink_topic(kafka, topic)) >= len(SNAPSHOT), 240,
                 f"the quickstart's snapshot in {topic}")
        _run(source, CHANGES)
        messages = wait_for(lambda: (m := sink_topic(kafka, topic))
                            and len(m) >= len(SNAPSHOT) + len(LIVE) and m, 120,
                            "the quickstart's changes")
        values = [m.value.decode() for m in messages]
        assert sorted(values[:len(SNAPSHOT)]) == sorted(SNAPSHOT)
        assert values[len(SNAPSHOT):] == LIVE  # one key's changes, in binlog order
        for message in messages:
            assert message.partition == 0  # partition.strategy: all-to-zero (the default)
            body = json.loads(message.value)
            row = body["after"] or body["before"]
            table = body["source"]["table"]
            assert message.key == b'{"TableId":"app_db.%s","id":%d}' % (table.encode(),
                                                                        row["id"])
        verified = _cli(tmp_path, "verify", "--config", str(config))
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert "equal" in verified.stdout
        assert stop(proc, 60) == 0
    finally:
        stop(proc, 60)
        _run(source, ["DROP DATABASE IF EXISTS app_db"], None)


CANAL = QUICKSTART.replace("  topic: yaml-mysql-kafka-{suffix}\n", """\
  value.format: canal-json
  key.format: csv
  partition.strategy: hash-by-key
  topic.partitions: 3
  sink.add-tableId-to-header-enabled: true
  sink.custom-header: team:data;origin:cdc
  sink.tableId-to-topic.mapping: app_db.orders:orders-{suffix};app_db.\\.*:rest-{suffix}
  canal-json.encode.ignore-null-fields: true
""")


def test_canal_json_csv_keys_hash_by_key_and_truncate(source: Source, kafka: Any,
                                                      tmp_path: Path) -> None:
    _app_db(source)
    config, suffix = _pipeline(source, kafka, tmp_path, CANAL)
    orders, rest = f"orders-{suffix}", f"rest-{suffix}"
    proc = _start(tmp_path, config)
    try:
        wait_for(lambda: len(sink_topic(kafka, orders)) >= 2
                 and len(sink_topic(kafka, rest)) >= 5, 240, "the snapshot")
        # note is NULL in every row: ignore-null-fields leaves it out of `data` and `old`
        _run(source, ["ALTER TABLE shipments ADD note VARCHAR(20) NULL",
                      "UPDATE shipments SET city='shanghai' WHERE id=1",
                      "TRUNCATE TABLE products"])
        # every product row ends with a DELETE event carrying its last row
        wait_for(lambda: sum(b'"DELETE"' in (m.value or b"")
                             for m in sink_topic(kafka, rest)) >= 3, 120, "the deletes")
        for message in sink_topic(kafka, rest):
            body = json.loads(message.value)
            table, row = body["table"], body["data"][0]
            key = f"app_db.{table},{row['id']}".encode()
            assert message.key == key
            assert message.partition == java_partition(key, 3)
            assert message.headers[:3] == (("namespace", b""), ("schemaName", b"app_db"),
                                           ("tableName", table.encode()))
            assert message.headers[3:] == (("team", b"data"), ("origin", b"cdc"))
            assert body["database"] == "app_db" and body["pkNames"] == ["id"]
        deleted = [json.loads(m.value)["data"][0] for m in sink_topic(kafka, rest)
                   if b'"DELETE"' in m.value]
        assert sorted(r["product"] for r in deleted) == ["Beer", "Cap", "Peanut"]
        shipments = [json.loads(m.value) for m in sink_topic(kafka, rest)
                     if b'"shipments"' in m.value]
        assert shipments[-1]["type"] == "UPDATE"
        assert shipments[-1]["old"] == [{"id": 1, "city": "beijing"}]
        assert shipments[-1]["data"] == [{"id": 1, "city": "shanghai"}]
        verified = _cli(tmp_path, "verify", "--config", str(config))
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert stop(proc, 60) == 0
    finally:
        stop(proc, 60)
        _run(source, ["DROP DATABASE IF EXISTS app_db"], None)


# Flink CDC's Kafka pipeline connector page (and, for its source block, the MySQL pipeline
# connector page, whose example differs only in its Doris sink), host, port, user, password
# and the broker changed. The page's `[app|web].order_\.*` is a regex: its database part is a
# character class, so it takes one-letter databases such as `w`, not `app` or `web`: Flink
# CDC reads it so, and so does cdc-ingest.
CONNECTOR_PAGE = r"""
source:
   type: mysql
   name: MySQL Source
   hostname: {host}
   port: {port}
   username: {user}
   password: {password}
   tables: adb.\.*, bdb.user_table_[0-9]+, [app|web].order_\.*
   server-id: 5401-5404

sink:
  type: kafka
  name: Kafka Sink
  properties.bootstrap.servers: PLAINTEXT://{bootstrap}

pipeline:
  name: MySQL to Kafka Pipeline
  parallelism: 2
"""
PAGE_DBS = ("adb", "bdb", "w", "app")
PAGE_TABLES = {"adb.items": True, "bdb.user_table_1": True, "bdb.user_table_x": False,
               "w.order_1": True, "app.order_1": False}


def test_the_kafka_connector_pages_example_runs_unchanged(mysql: Any, kafka: Any,
                                                          tmp_path: Path) -> None:
    drop = [f"DROP DATABASE IF EXISTS {db}" for db in PAGE_DBS]
    setup = drop + [f"CREATE DATABASE {db}" for db in PAGE_DBS]
    for table in PAGE_TABLES:
        setup += [f"CREATE TABLE {table} (id INT PRIMARY KEY, note VARCHAR(20))",
                  f"INSERT INTO {table} VALUES (1, 'snapshot'), (2, 'snapshot')"]
    src = mysql
    _run(src, setup, None)
    config = tmp_path / "kafka-page.yaml"
    config.write_text(CONNECTOR_PAGE.format(
        host="127.0.0.1", port=mysql.port, user=mysql.admin["user"],
        password=mysql.admin["password"], bootstrap=kafka.bootstrap))
    checked = _cli(tmp_path, "validate", "--config", str(config))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    captured = [t for t, taken in PAGE_TABLES.items() if taken]
    proc = _start(tmp_path, config)
    try:
        wait_for(lambda: all(len(sink_topic(kafka, t)) >= 2 for t in captured), 240,
                 "the snapshot of every selected table")
        _run(src, [f"UPDATE {t} SET note = 'live' WHERE id = 1" for t in PAGE_TABLES]
             + [f"DELETE FROM {t} WHERE id = 2" for t in PAGE_TABLES], None)
        wait_for(lambda: all(len(sink_topic(kafka, t)) >= 4 for t in captured), 120,
                 "the live changes")
        for table in captured:
            db, name = table.split(".")
            events = [(m.key, json.loads(m.value), m.partition) for m in sink_topic(kafka, table)]
            assert [e["op"] for _, e, _ in events] == ["c", "c", "u", "d"], events
            assert all(e["source"] == {"db": db, "table": name} for _, e, _ in events)
            assert all(p == 0 for _, _, p in events)  # partition.strategy: all-to-zero
            assert events[2][1]["after"] == {"id": 1, "note": "live"}
            assert events[3][0] == b'{"TableId":"%b","id":2}' % table.encode()
        topics = AdminClient({"bootstrap.servers": kafka.bootstrap}).list_topics(
            timeout=10).topics
        assert not [t for t, taken in PAGE_TABLES.items() if not taken and t in topics]
        verified = _cli(tmp_path, "verify", "--config", str(config))
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert stop(proc, 60) == 0
    finally:
        stop(proc, 60)
        _run(src, drop, None)
