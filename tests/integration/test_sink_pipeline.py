"""`cdc-ingest start`: routes to keyed upserts with tombstones and headers, checked by message."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cdc_ingest.kafka import TopicAdmin
from cdc_ingest.kafka.partition import java_partition
from tests.conftest import admin_conn
from tests.integration.pipeline_helpers import (
    cli,
    sink_topic,
    start_command,
    stop,
    wait_for,
    write_pipeline,
)


def _latest(messages: list[Any]) -> dict[bytes, bytes | None]:
    state: dict[bytes, bytes | None] = {}
    for m in messages:
        state[m.key] = m.value
    return state


def test_routes_keys_values_headers_partitions_and_tombstones(
    mariadb: Any, kafka: Any, fresh_db: str, tmp_path: Path
) -> None:
    db = fresh_db
    conn = admin_conn(mariadb, db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE order_1 (id INT PRIMARY KEY, amount DECIMAL(10,2), note TEXT)")
        cur.execute("CREATE TABLE order_2 (id INT PRIMARY KEY, amount DECIMAL(10,2), note TEXT)")
        cur.execute("CREATE TABLE customers (cid VARCHAR(10), region INT, name VARCHAR(50),"
                    " PRIMARY KEY (region, cid))")
        cur.execute("CREATE TABLE audit (id INT PRIMARY KEY, what VARCHAR(20))")
    name = f"route-{db}"
    config = write_pipeline(
        tmp_path / "p.yaml", mariadb, kafka, name, rf"{db}.\.*",
        sink={"sink.delivery-guarantee": "exactly-once",
              "sink.add-tableId-to-header-enabled": True, "topic.partitions": 3},
        routes=[
            {"source-table": rf"{db}.order_[0-9]+", "sink-table": f"{db}-orders",
             "description": "merge the shards"},
            {"source-table": rf"{db}.order_1", "sink-table": f"{db}-first-shard"},
            {"source-table": rf"{db}.customers", "sink-table": f"{db}-<>-v1",
             "replace-symbol": "<>"},
        ],
    )
    log = tmp_path / "start.log"
    proc = start_command("start", config, log)
    try:
        wait_for(lambda: "starts at" in log.read_text(), timeout=120, what="capture running")
        with conn.cursor() as cur:
            cur.execute("INSERT INTO order_1 VALUES (1, 10.50, 'a'), (2, 0.01, 'b')")
            cur.execute("INSERT INTO order_2 VALUES (101, 99.90, 'c')")
            cur.execute("INSERT INTO customers VALUES ('c1', 7, 'Ann'), ('c2', 8, 'Bö')")
            cur.execute("INSERT INTO audit VALUES (1, 'x')")
            cur.execute("UPDATE order_1 SET amount = 11.00 WHERE id = 1")
            cur.execute("DELETE FROM order_1 WHERE id = 2")
            cur.execute("UPDATE order_2 SET id = 102 WHERE id = 101")
            cur.execute("UPDATE customers SET name = 'Bea' WHERE cid = 'c2'")
        orders = wait_for(lambda: (m := sink_topic(kafka, f"{db}-orders")) and len(m) >= 7
                          and m, timeout=120, what="7 messages in the orders topic")
        verify = cli("verify", "--config", str(config))
    finally:
        code = stop(proc)
    assert code == 0, log.read_text()[-3000:]
    assert verify.returncode == 0, verify.stdout + verify.stderr

    # keys, values (exact decimals), tombstones, in binlog order per key
    by_key: dict[bytes, list[Any]] = {}
    for m in orders:
        by_key.setdefault(m.key, []).append(None if m.value is None else json.loads(m.value))
    assert by_key == {
        b'{"id":1}': [{"id": 1, "amount": 10.5, "note": "a"}, {"id": 1, "amount": 11, "note": "a"}],
        b'{"id":2}': [{"id": 2, "amount": 0.01, "note": "b"}, None],
        b'{"id":101}': [{"id": 101, "amount": 99.9, "note": "c"}, None],
        b'{"id":102}': [{"id": 102, "amount": 99.9, "note": "c"}],
    }
    assert b'"amount":11.00' in next(m.value for m in orders if m.value and b'11.00' in m.value)
    # headers name the source table; namespace is empty for MySQL
    shard2 = next(m for m in orders if m.key == b'{"id":102}')
    assert dict(shard2.headers) == {"namespace": b"", "schemaName": db.encode(),
                                    "tableName": b"order_2"}
    # partitions follow Kafka's Java default partitioner over the topic's 3 partitions
    admin = TopicAdmin({"bootstrap.servers": kafka.bootstrap})
    assert admin.partitions(f"{db}-orders") == 3
    assert admin.topic_config(f"{db}-orders")["cleanup.policy"] == "compact"
    for m in orders:
        assert m.partition == java_partition(m.key, 3), m.key
    # fan-out: order_1 also goes to its own route; other shards do not
    first = _latest(sink_topic(kafka, f"{db}-first-shard"))
    assert set(first) == {b'{"id":1}', b'{"id":2}'} and first[b'{"id":2}'] is None
    # replace-symbol, composite key in key order
    customers = _latest(sink_topic(kafka, f"{db}-customers-v1"))
    assert json.loads(customers[b'{"region":8,"cid":"c2"}'] or b"") == {
        "cid": "c2", "region": 8, "name": "Bea"}
    # a table no route matches goes to <db>.<table>
    assert _latest(sink_topic(kafka, f"{db}.audit")) == {b'{"id":1}': b'{"id":1,"what":"x"}'}
    # a message's timestamp is the binlog event time (seconds resolution)
    assert all(m.timestamp_ms % 1000 == 0 for m in orders)


def test_first_match_sends_a_table_only_to_its_first_route(
    mariadb: Any, kafka: Any, fresh_db: str, tmp_path: Path
) -> None:
    db = fresh_db
    conn = admin_conn(mariadb, db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY)")
    config = write_pipeline(
        tmp_path / "p.yaml", mariadb, kafka, f"first-{db}", rf"{db}.t",
        pipeline={"route-mode": "FIRST_MATCH", "parallelism": 1},
        routes=[{"source-table": rf"{db}.t", "sink-table": f"{db}-one"},
                {"source-table": rf"{db}.\.*", "sink-table": f"{db}-two"}],
    )
    log = tmp_path / "start.log"
    proc = start_command("start", config, log)
    try:
        wait_for(lambda: "starts at" in log.read_text(), timeout=120, what="capture running")
        with conn.cursor() as cur:
            cur.execute("INSERT INTO t VALUES (1)")
        wait_for(lambda: sink_topic(kafka, f"{db}-one"), timeout=120, what="row in first route")
    finally:
        assert stop(proc) == 0, log.read_text()[-3000:]
    assert sink_topic(kafka, f"{db}-two") == []
