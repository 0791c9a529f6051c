"""Flink CDC's mysql-to-kafka end-to-end test with ``debezium-json.include-schema.enabled``,
run by `cdc-ingest start` on MySQL, plus ISO-8601 timestamps.

The tables, rows and statements are those of Flink CDC's ``MysqlToKafkaE2eITCase``
(``mysql_inventory.sql``: ``products`` with a NOT NULL column with a default, ENUM, JSON and
POINT columns; ``customers``; then updates, ``ALTER TABLE products ADD COLUMN new_col INT``,
inserts, updates and a delete). Every message must equal, byte for byte, the line Flink CDC's
``debezium-json-with-schema.txt`` expects for it: the Kafka Connect schema of the table as it
was when the row was written (``new_col`` only from the ALTER on), then the payload.

The same pipeline writes timestamps in ISO-8601 (``debezium-json.timestamp-format.standard``
and, for the json key, ``json.timestamp-format.standard``) for a table keyed by a DATETIME(3);
its TRUNCATE must end each row with a delete event that carries the row's schema, and
`verify` must find both topics equal to MySQL.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.integration.flavors import Source
from tests.integration.pipeline_helpers import sink_topic, stop, wait_for
from tests.integration.test_flink_cdc_kafka_sink import _cli, _pipeline, _run, _start

PIPELINE = r"""
source:
  type: mysql
  hostname: {host}
  port: {port}
  username: {user}
  password: {password}
  tables: inventory.\.*
  server-id: 5400-5404
  server-time-zone: UTC

sink:
  type: kafka
  properties.bootstrap.servers: {bootstrap}
  topic: inventory-{suffix}
  debezium-json.include-schema.enabled: true
  debezium-json.timestamp-format.standard: ISO-8601
  json.timestamp-format.standard: ISO-8601

pipeline:
  name: with schema {suffix}
  parallelism: 1
"""

# mysql_inventory.sql
SETUP = [
    "CREATE TABLE products (id INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY, "
    "name VARCHAR(255) NOT NULL DEFAULT 'flink', description VARCHAR(512), weight FLOAT, "
    "enum_c enum('red', 'white') default 'red', json_c JSON, point_c POINT)",
    "ALTER TABLE products AUTO_INCREMENT = 101",
    """INSERT INTO products VALUES
       (default,"scooter","Small 2-wheel scooter",3.14, 'red', '{"key1": "value1"}',
        ST_GeomFromText('POINT(1 1)')),
       (default,"car battery","12V car battery",8.1, 'white', '{"key2": "value2"}',
        ST_GeomFromText('POINT(2 2)')),
       (default,"12-pack drill bits","12-pack of drill bits with sizes ranging from #40 to #3",
        0.8, 'red', '{"key3": "value3"}', ST_GeomFromText('POINT(3 3)')),
       (default,"hammer","12oz carpenter's hammer",0.75, 'white', '{"key4": "value4"}',
        ST_GeomFromText('POINT(4 4)')),
       (default,"hammer","14oz carpenter's hammer",0.875, 'red', '{"k1": "v1", "k2": "v2"}',
        ST_GeomFromText('POINT(5 5)')),
       (default,"hammer","16oz carpenter's hammer",1.0, null, null, null),
       (default,"rocks","box of assorted rocks",5.3, null, null, null),
       (default,"jacket","water resistent black wind breaker",0.1, null, null, null),
       (default,"spare tire","24 inch spare tire",22.2, null, null, null)""",
    "CREATE TABLE customers (id INTEGER NOT NULL PRIMARY KEY, "
    "name VARCHAR(255) NOT NULL DEFAULT 'flink', address VARCHAR(1024), "
    "phone_number VARCHAR(512))",
    """INSERT INTO customers VALUES (101,"user_1","Shanghai","123567891234"),
       (102,"user_2","Shanghai","123567891234"), (103,"user_3","Shanghai","123567891234"),
       (104,"user_4","Shanghai","123567891234")""",
    # not Flink CDC's: timestamps, one of them the key
    "CREATE TABLE readings (at DATETIME(3) NOT NULL PRIMARY KEY, "
    "seen TIMESTAMP(6) NULL COMMENT 'when it was seen', day DATE, "
    "amount DECIMAL(6,2) NOT NULL DEFAULT 1.50)",
    "INSERT INTO readings VALUES ('2024-01-31 12:34:56.125', '2024-02-01 00:00:01.5', "
    "'2024-01-31', 2.25), ('2024-02-01 08:00:00', NULL, NULL, 3.00)",
]
CHANGES = [  # MysqlToKafkaE2eITCase's
    "UPDATE products SET description='18oz carpenter hammer' WHERE id=106",
    "UPDATE products SET weight='5.1' WHERE id=107",
    "ALTER TABLE products ADD COLUMN new_col INT",
    "INSERT INTO products VALUES (default,'jacket','water resistent white wind breaker',0.2, "
    "null, null, null, 1)",
    "INSERT INTO products VALUES (default,'scooter','Big 2-wheel scooter ',5.18, null, null, "
    "null, 1)",
    "UPDATE products SET description='new water resistent white wind breaker', weight='0.5' "
    "WHERE id=110",
    "UPDATE products SET weight='5.17' WHERE id=111",
    "DELETE FROM products WHERE id=111",
]


def _struct(fields: str) -> str:
    return ('{"type":"struct","fields":[{"type":"struct","fields":[%s],"optional":true,'
            '"field":"before"},{"type":"struct","fields":[%s],"optional":true,'
            '"field":"after"}],"optional":false}') % (fields, fields)


# The schema blocks of Flink CDC's debezium-json-with-schema.txt
CUSTOMERS = _struct(
    '{"type":"int32","optional":false,"field":"id"},{"type":"string","optional":false,'
    '"default":"flink","field":"name"},{"type":"string","optional":true,"field":"address"},'
    '{"type":"string","optional":true,"field":"phone_number"}')
PRODUCT_FIELDS = (
    '{"type":"int32","optional":false,"field":"id"},{"type":"string","optional":false,'
    '"default":"flink","field":"name"},{"type":"string","optional":true,'
    '"field":"description"},{"type":"float","optional":true,"field":"weight"},'
    '{"type":"string","optional":true,"default":"red","field":"enum_c"},'
    '{"type":"string","optional":true,"field":"json_c"},{"type":"string","optional":true,'
    '"field":"point_c"}')
PRODUCTS = _struct(PRODUCT_FIELDS)
PRODUCTS_NEW = _struct(PRODUCT_FIELDS + ',{"type":"int32","optional":true,"field":"new_col"}')


def _event(schema: str, before: str, after: str, op: str, table: str) -> str:
    return ('{"schema":%s,"payload":{"before":%s,"after":%s,"op":"%s","source":'
            '{"db":"inventory","table":"%s"}}}') % (schema, before, after, op, table)


def _product(id_: int, name: str, description: str, weight: str, rest: str = "null,null,null",
             new_col: str | None = None) -> str:
    enum_c, json_c, point_c = rest.split("|") if "|" in rest else ("null", "null", "null")
    row = ('{"id":%d,"name":"%s","description":"%s","weight":%s,"enum_c":%s,"json_c":%s,'
           '"point_c":%s') % (id_, name, description, weight, enum_c, json_c, point_c)
    return row + (',"new_col":%s}' % new_col if new_col is not None else "}")


def _point(n: int) -> str:
    return r'"{\"coordinates\":[%d,%d],\"type\":\"Point\",\"srid\":0}"' % (n, n)


SNAPSHOT = [_event(CUSTOMERS, "null", '{"id":%d,"name":"user_%d","address":"Shanghai",'
                   '"phone_number":"123567891234"}' % (i, i - 100), "c", "customers")
            for i in (101, 102, 103, 104)] + [
    _event(PRODUCTS, "null", _product(101, "scooter", "Small 2-wheel scooter", "3.14",
                                      r'"red"|"{\"key1\": \"value1\"}"|' + _point(1)),
           "c", "products"),
    _event(PRODUCTS, "null", _product(102, "car battery", "12V car battery", "8.1",
                                      r'"white"|"{\"key2\": \"value2\"}"|' + _point(2)),
           "c", "products"),
    _event(PRODUCTS, "null", _product(
        103, "12-pack drill bits", "12-pack of drill bits with sizes ranging from #40 to #3",
        "0.8", r'"red"|"{\"key3\": \"value3\"}"|' + _point(3)), "c", "products"),
    _event(PRODUCTS, "null", _product(104, "hammer", "12oz carpenter's hammer", "0.75",
                                      r'"white"|"{\"key4\": \"value4\"}"|' + _point(4)),
           "c", "products"),
    _event(PRODUCTS, "null", _product(105, "hammer", "14oz carpenter's hammer", "0.875",
                                      r'"red"|"{\"k1\": \"v1\", \"k2\": \"v2\"}"|' + _point(5)),
           "c", "products"),
    _event(PRODUCTS, "null", _product(106, "hammer", "16oz carpenter's hammer", "1.0"), "c",
           "products"),
    _event(PRODUCTS, "null", _product(107, "rocks", "box of assorted rocks", "5.3"), "c",
           "products"),
    _event(PRODUCTS, "null", _product(108, "jacket", "water resistent black wind breaker",
                                      "0.1"), "c", "products"),
    _event(PRODUCTS, "null", _product(109, "spare tire", "24 inch spare tire", "22.2"), "c",
           "products"),
]
JACKET = ("water resistent white wind breaker", "new water resistent white wind breaker")
LIVE = [
    _event(PRODUCTS, _product(106, "hammer", "16oz carpenter's hammer", "1.0"),
           _product(106, "hammer", "18oz carpenter hammer", "1.0"), "u", "products"),
    _event(PRODUCTS, _product(107, "rocks", "box of assorted rocks", "5.3"),
           _product(107, "rocks", "box of assorted rocks", "5.1"), "u", "products"),
    _event(PRODUCTS_NEW, "null", _product(110, "jacket", JACKET[0], "0.2", new_col="1"), "c",
           "products"),
    _event(PRODUCTS_NEW, "null", _product(111, "scooter", "Big 2-wheel scooter ", "5.18",
                                          new_col="1"), "c", "products"),
    _event(PRODUCTS_NEW, _product(110, "jacket", JACKET[0], "0.2", new_col="1"),
           _product(110, "jacket", JACKET[1], "0.5", new_col="1"), "u", "products"),
    _event(PRODUCTS_NEW, _product(111, "scooter", "Big 2-wheel scooter ", "5.18", new_col="1"),
           _product(111, "scooter", "Big 2-wheel scooter ", "5.17", new_col="1"), "u",
           "products"),
    _event(PRODUCTS_NEW, _product(111, "scooter", "Big 2-wheel scooter ", "5.17", new_col="1"),
           "null", "d", "products"),
]
# readings: DATETIME(3) -> TIMESTAMP(3) (io.debezium.time.Timestamp), TIMESTAMP(6) ->
# TIMESTAMP_LTZ(6) (ZonedTimestamp, with its comment as doc), the DECIMAL default as base64
# of its unscaled value (150 = 0x0096: "AJY=")
READINGS = _struct(
    '{"type":"int64","optional":false,"name":"io.debezium.time.Timestamp","version":1,'
    '"field":"at"},{"type":"string","optional":true,"name":"io.debezium.time.ZonedTimestamp",'
    '"version":1,"doc":"when it was seen","field":"seen"},{"type":"int32","optional":true,'
    '"name":"io.debezium.time.Date","version":1,"field":"day"},{"type":"bytes",'
    '"optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,'
    '"parameters":{"scale":"2","connect.decimal.precision":"6"},"default":"AJY=",'
    '"field":"amount"}')
READING_ROWS = [
    '{"at":"2024-01-31T12:34:56.125","seen":"2024-02-01T00:00:01.500000Z","day":"2024-01-31",'
    '"amount":2.25}',
    '{"at":"2024-02-01T08:00:00.000","seen":null,"day":null,"amount":3.00}',
]


def _same(actual: list[str], expected: list[str]) -> None:
    """Equal byte for byte; on a difference, the payload and the schema are told apart."""
    assert len(actual) == len(expected), actual
    for got, wanted in zip(actual, expected, strict=True):
        if got != wanted:
            mine, theirs = json.loads(got), json.loads(wanted)
            assert mine["payload"] == theirs["payload"], f"\n{got}\n!=\n{wanted}"
            assert mine["schema"] == theirs["schema"], f"\n{got}\n!=\n{wanted}"
            assert got == wanted


def test_include_schema_matches_flink_cdcs_e2e_expectations(mysql: Any, kafka: Any,
                                                           tmp_path: Path) -> None:
    _run(mysql, ["DROP DATABASE IF EXISTS inventory", "CREATE DATABASE inventory"], None)
    _run(mysql, SETUP, "inventory")
    config, suffix = _pipeline(Source(mysql), kafka, tmp_path, PIPELINE)
    topic = f"inventory-{suffix}"
    proc = _start(tmp_path, config)
    try:
        wanted = len(SNAPSHOT) + len(READING_ROWS)
        wait_for(lambda: len(sink_topic(kafka, topic)) >= wanted, 240, "the snapshot")
        _run(mysql, CHANGES, "inventory")
        _run(mysql, ["TRUNCATE TABLE readings"], "inventory")
        messages = wait_for(lambda: (m := sink_topic(kafka, topic))
                            and len(m) >= wanted + len(LIVE) + 2 and m, 120, "the changes")
        values = [m.value.decode() for m in messages]
        inventory = [v for v in values if '"table":"readings"' not in v]
        _same(sorted(inventory[:len(SNAPSHOT)]), sorted(SNAPSHOT))
        _same(inventory[len(SNAPSHOT):], LIVE)
        readings = [m for m in messages if b'"table":"readings"' in m.value]
        created = [_event(READINGS, "null", row, "c", "readings") for row in READING_ROWS]
        deleted = [_event(READINGS, row, "null", "d", "readings") for row in READING_ROWS]
        assert sorted(m.value.decode() for m in readings[:2]) == sorted(created)
        assert sorted(m.value.decode() for m in readings[2:]) == sorted(deleted)
        assert {m.key for m in readings} == {
            b'{"TableId":"inventory.readings","at":"2024-01-31T12:34:56.125"}',
            b'{"TableId":"inventory.readings","at":"2024-02-01T08:00:00.000"}'}
        assert all(json.loads(m.value)["payload"]["source"]["table"] for m in messages)
        _run(mysql, ["INSERT INTO readings (at) VALUES ('2025-05-05 05:05:05.5')"],
             "inventory")
        wait_for(lambda: len(sink_topic(kafka, topic)) > len(messages), 60, "the insert")
        verified = _cli(tmp_path, "verify", "--config", str(config))
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert stop(proc, 60) == 0
    finally:
        stop(proc, 60)
        _run(mysql, ["DROP DATABASE IF EXISTS inventory"], None)
