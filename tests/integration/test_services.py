"""The local services are what capture needs: binlog settings, grants, Kafka transactions."""

from __future__ import annotations

import uuid
from typing import Any

import pymysql
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import WriteRowsEvent

from tests.conftest import admin_conn

TABLEACCESS_DENIED = 1142  # INSERT/CREATE command denied to user for table
DBACCESS_DENIED = 1044  # access denied for user to database


def _query(kwargs: dict[str, Any], sql: str) -> list[tuple[Any, ...]]:
    with pymysql.connect(**kwargs, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def _variables(kwargs: dict[str, Any]) -> dict[str, str]:
    rows = _query(
        kwargs,
        "SHOW GLOBAL VARIABLES WHERE Variable_name IN "
        "('log_bin', 'binlog_format', 'binlog_row_image', 'binlog_row_metadata')",
    )
    return {name: value for name, value in rows}


def _binlog_status(kwargs: dict[str, Any]) -> tuple[str, int]:
    is_mariadb = "MariaDB" in _query(kwargs, "SELECT VERSION()")[0][0]
    # MySQL 8.4 renamed SHOW MASTER STATUS; MariaDB 10.11 only knows the old name.
    row = _query(kwargs, "SHOW MASTER STATUS" if is_mariadb else "SHOW BINARY LOG STATUS")[0]
    return row[0], int(row[1])


def test_binlog_is_on_with_full_row_images(mariadb: Any) -> None:
    assert _variables(mariadb.cdc) == {
        "log_bin": "ON",
        "binlog_format": "ROW",
        "binlog_row_image": "FULL",
        "binlog_row_metadata": "FULL",
    }


def test_cdc_user_reads_binlog_status_and_tables(mariadb: Any, fresh_db: str) -> None:
    with admin_conn(mariadb, fresh_db) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE item (id INT PRIMARY KEY, name VARCHAR(20))")
        cur.execute("INSERT INTO item VALUES (1, 'ünïcode')")

    file, position = _binlog_status(mariadb.cdc)
    assert file.startswith("mysql-bin.")
    assert position > 4
    assert _query(mariadb.cdc, "SHOW BINARY LOGS")
    assert _query(mariadb.cdc, f"SELECT id, name FROM `{fresh_db}`.item") == [(1, "ünïcode")]


@pytest.mark.parametrize(
    ("sql", "error"),
    [
        ("INSERT INTO {db}.item VALUES (2, 'no')", TABLEACCESS_DENIED),
        ("CREATE TABLE {db}.other (id INT PRIMARY KEY)", TABLEACCESS_DENIED),
        ("CREATE DATABASE {db}_other", DBACCESS_DENIED),
    ],
)
def test_cdc_user_cannot_write(mariadb: Any, fresh_db: str, sql: str, error: int) -> None:
    with admin_conn(mariadb, fresh_db) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE item (id INT PRIMARY KEY, name VARCHAR(20))")

    with pytest.raises(pymysql.err.OperationalError) as denied:
        _query(mariadb.cdc, sql.format(db=fresh_db))
    assert denied.value.args[0] == error


def test_cdc_user_streams_the_binlog_as_a_replica(mariadb: Any, fresh_db: str) -> None:
    file, position = _binlog_status(mariadb.cdc)
    with admin_conn(mariadb, fresh_db) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE item (id INT PRIMARY KEY, name VARCHAR(20))")
        cur.execute("INSERT INTO item VALUES (7, 'seven')")

    stream = BinLogStreamReader(
        connection_settings={**mariadb.cdc, "passwd": mariadb.cdc["password"]},
        server_id=4242,
        log_file=file,
        log_pos=position,
        resume_stream=True,
        blocking=False,
        only_schemas=[fresh_db],
        only_events=[WriteRowsEvent],
    )
    try:
        rows = [row["values"] for event in stream for row in event.rows]
    finally:
        stream.close()
    assert rows == [{"id": 7, "name": "seven"}]


def test_restart_with_other_settings_and_back(mariadb: Any, fresh_db: str) -> None:
    with admin_conn(mariadb, fresh_db) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE kept (id INT PRIMARY KEY)")

    with mariadb.reconfigured(binlog_format="STATEMENT", log_bin=None):
        changed = _variables(mariadb.cdc)
        assert (changed["log_bin"], changed["binlog_format"]) == ("OFF", "STATEMENT")

    assert _variables(mariadb.cdc)["binlog_format"] == "ROW"
    assert _variables(mariadb.cdc)["log_bin"] == "ON"
    assert _query(mariadb.admin, f"SHOW TABLES FROM `{fresh_db}`") == [("kept",)]


def test_start_twice_is_safe(mariadb: Any, kafka: Any) -> None:
    port, bootstrap = mariadb.port, kafka.bootstrap

    mariadb.start()
    kafka.start()

    assert (mariadb.port, kafka.bootstrap) == (port, bootstrap)
    assert _query(mariadb.cdc, "SELECT 1") == [(1,)]
    assert AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics is not None


def test_kafka_transactions_are_read_committed(kafka: Any) -> None:
    topic = f"services-test-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(30)

    producer = Producer(
        {"bootstrap.servers": kafka.bootstrap, "transactional.id": f"{topic}-producer"}
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    for n in range(3):
        producer.produce(topic, key=f"k{n}".encode(), value=f"committed {n}".encode())
    producer.commit_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, key=b"k9", value=b"aborted")
    producer.flush(30)
    producer.abort_transaction(30)

    consumer = Consumer(
        {
            "bootstrap.servers": kafka.bootstrap,
            "group.id": f"{topic}-reader",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    try:
        values = []
        for _ in range(60):
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
            if len(values) == 3:
                break
        assert consumer.poll(1) is None  # nothing after the committed rows: the abort is hidden
    finally:
        consumer.close()
    assert values == [b"committed 0", b"committed 1", b"committed 2"]
