"""The local services are what capture needs: binlog settings, grants, Kafka transactions.

The MariaDB tests run on the ``mariadb`` fixture; the ``test_mysql_*`` ones on the local
Oracle MySQL 9.7 (``mysql`` fixture, ``cdc_ingest.services.MySQL``); the Schema Registry test
on a ``cdc_ingest.services.SchemaRegistry`` of its own (it stops and starts it).
"""

from __future__ import annotations

import json
import socket
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pymysql
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import GtidEvent
from pymysqlreplication.row_event import WriteRowsEvent

from cdc_ingest.services import MySQL, SchemaRegistry
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


# -- the local Oracle MySQL 9.7 ---------------------------------------------------------------


def _mysql_variables(kwargs: dict[str, Any]) -> dict[str, str]:
    names = (
        "log_bin",
        "binlog_format",
        "binlog_row_image",
        "binlog_row_metadata",
        "gtid_mode",
        "enforce_gtid_consistency",
        "server_id",
        "secure_file_priv",
        "performance_schema",
    )
    rows = _query(
        kwargs,
        "SHOW GLOBAL VARIABLES WHERE Variable_name IN (" + ", ".join(f"'{n}'" for n in names) + ")",
    )
    return {name: value for name, value in rows}


def test_mysql_is_oracle_mysql_9_7_with_row_binlog_and_gtids(mysql: MySQL) -> None:
    version = _query(mysql.cdc, "SELECT VERSION()")[0][0]
    assert "MariaDB" not in version
    assert tuple(int(part) for part in version.split("-")[0].split(".")[:2]) >= (9, 7), version
    assert _mysql_variables(mysql.cdc) == {
        "log_bin": "ON",
        "binlog_format": "ROW",
        "binlog_row_image": "FULL",
        "binlog_row_metadata": "FULL",
        "gtid_mode": "ON",
        "enforce_gtid_consistency": "ON",
        "server_id": "1",
        "secure_file_priv": "",
        "performance_schema": "ON",
    }
    # What later work may read for a consistent binlog position + GTID set.
    (log_status,) = _query(mysql.admin, "SELECT local FROM performance_schema.log_status")[0]
    assert '"binary_log_file": "mysql-bin.' in log_status


def test_mysql_cdc_user_is_caching_sha2_and_least_privileged(mysql: MySQL) -> None:
    users = _query(mysql.admin, "SELECT user, host, plugin FROM mysql.user WHERE user = 'cdc'")
    assert users == [("cdc", "%", "caching_sha2_password")]
    assert _query(mysql.cdc, "SHOW GRANTS") == [
        ("GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `cdc`@`%`",)
    ]
    # Empty the server's caching_sha2 cache: the next login is a full authentication, and
    # without TLS it needs the RSA key exchange (pymysql[rsa]).
    _query(mysql.admin, "FLUSH PRIVILEGES")
    assert _query({**mysql.cdc, "ssl_disabled": True}, "SELECT CURRENT_USER()") == [("cdc@%",)]
    with pytest.raises(pymysql.err.OperationalError) as denied:
        _query({**mysql.cdc, "password": "wrong"}, "SELECT 1")
    assert denied.value.args[0] == 1045


def test_mysql_cdc_user_reads_binlog_status_and_tables(mysql: MySQL, fresh_mysql_db: str) -> None:
    with admin_conn(mysql, fresh_mysql_db) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE item (id INT PRIMARY KEY, name VARCHAR(20))")
        cur.execute("INSERT INTO item VALUES (1, 'ünïcode')")

    file, position, _, _, gtid_set = _query(mysql.cdc, "SHOW BINARY LOG STATUS")[0]
    server_uuid = _query(mysql.cdc, "SELECT @@server_uuid")[0][0]
    assert file.startswith("mysql-bin.")
    assert int(position) > 4
    assert gtid_set.startswith(f"{server_uuid}:1-")
    assert _query(mysql.cdc, "SHOW BINARY LOGS")
    assert _query(mysql.cdc, f"SELECT id, name FROM `{fresh_mysql_db}`.item") == [(1, "ünïcode")]


@pytest.mark.parametrize(
    ("sql", "error"),
    [
        ("INSERT INTO {db}.item VALUES (2, 'no')", TABLEACCESS_DENIED),
        ("CREATE TABLE {db}.other (id INT PRIMARY KEY)", TABLEACCESS_DENIED),
        ("CREATE DATABASE {db}_other", DBACCESS_DENIED),
    ],
)
def test_mysql_cdc_user_cannot_write(
    mysql: MySQL, fresh_mysql_db: str, sql: str, error: int
) -> None:
    with admin_conn(mysql, fresh_mysql_db) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE item (id INT PRIMARY KEY, name VARCHAR(20))")

    with pytest.raises(pymysql.err.OperationalError) as denied:
        _query(mysql.cdc, sql.format(db=fresh_mysql_db))
    assert denied.value.args[0] == error


def _stream_rows(mysql: MySQL, schema: str, **position: Any) -> tuple[list[Any], list[str]]:
    """Rows written in ``schema`` and the GTIDs seen, read as a replica with ``cdc``."""
    stream = BinLogStreamReader(
        connection_settings={**mysql.cdc, "passwd": mysql.cdc["password"]},
        server_id=4243,
        blocking=False,
        only_events=[GtidEvent, WriteRowsEvent],
        **position,
    )
    rows, gtids = [], []
    try:
        for event in stream:
            if isinstance(event, GtidEvent):
                gtids.append(event.gtid)
            elif event.schema == schema:
                rows += [row["values"] for row in event.rows]
    finally:
        stream.close()
    return rows, gtids


def test_mysql_cdc_user_streams_the_binlog_as_a_replica(mysql: MySQL, fresh_mysql_db: str) -> None:
    file, position, _, _, executed = _query(mysql.cdc, "SHOW BINARY LOG STATUS")[0]
    with admin_conn(mysql, fresh_mysql_db) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE item (id INT PRIMARY KEY, name VARCHAR(20))")
        cur.execute("INSERT INTO item VALUES (7, 'seven')")
    server_uuid = _query(mysql.cdc, "SELECT @@server_uuid")[0][0]

    by_position = _stream_rows(
        mysql, fresh_mysql_db, log_file=file, log_pos=int(position), resume_stream=True
    )
    by_gtid = _stream_rows(mysql, fresh_mysql_db, auto_position=executed)

    assert by_position == by_gtid
    rows, gtids = by_gtid
    assert rows == [{"id": 7, "name": "seven"}]
    assert len(gtids) == 2  # the CREATE TABLE and the INSERT, nothing already executed
    assert all(gtid.startswith(f"{server_uuid}:") for gtid in gtids)


def test_mysql_restart_with_other_settings_and_back(mysql: MySQL, fresh_mysql_db: str) -> None:
    port = mysql.port
    with admin_conn(mysql, fresh_mysql_db) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE kept (id INT PRIMARY KEY)")

    with mysql.reconfigured(binlog_row_metadata="MINIMAL", log_bin=None):
        changed = _mysql_variables(mysql.cdc)
        assert (changed["log_bin"], changed["binlog_row_metadata"]) == ("OFF", "MINIMAL")

    assert mysql.port == port
    assert _mysql_variables(mysql.cdc)["binlog_row_metadata"] == "FULL"
    assert _mysql_variables(mysql.cdc)["log_bin"] == "ON"
    assert _query(mysql.admin, f"SHOW TABLES FROM `{fresh_mysql_db}`") == [("kept",)]


def _mysqld_pids(server: MySQL) -> set[int]:
    """The pids of mysqld processes of ``server`` (its directory is in their command line)."""
    pids = set()
    for proc in Path("/proc").iterdir():
        try:
            if (
                proc.name.isdigit()
                and str(server.run_dir).encode() in (proc / "cmdline").read_bytes()
            ):
                pids.add(int(proc.name))
        except OSError:
            continue
    return pids


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_mysql_second_home_runs_beside_the_first_and_stops_cleanly(
    mysql: MySQL, tmp_path: Path
) -> None:
    session_pids = _mysqld_pids(mysql)
    other = MySQL(tmp_path / "other")
    try:
        other.start()
        port = other.port
        other.start()  # safe twice: same server, same port
        assert other.is_running()
        assert other.port == port != mysql.port
        assert other.server_dir != mysql.server_dir
        uuids = {_query(server.cdc, "SELECT @@server_uuid")[0] for server in (mysql, other)}
        assert len(uuids) == 2
        assert len(_mysqld_pids(other)) == 1
    finally:
        other.stop(wipe=True)

    assert not other.is_running()
    assert _mysqld_pids(other) == set()
    assert not _listening(port)
    assert not other.server_dir.exists()
    assert not other.home.exists()
    assert _mysqld_pids(mysql) == session_pids  # the session's server still runs
    assert _query(mysql.cdc, "SELECT 1") == [(1,)]


def _registry_call(url: str, body: Any = None, method: str = "GET") -> Any:
    request = urllib.request.Request(
        url,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Content-Type": "application/vnd.schemaregistry.v1+json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
        return json.loads(response.read())


def test_schema_registry_registers_reads_back_and_restarts(tmp_path: Path) -> None:
    registry = SchemaRegistry(tmp_path / "registry")
    schema = json.dumps({
        "type": "record", "name": "record", "namespace": "org.apache.flink.avro.generated",
        "fields": [{"name": "id", "type": "int"},
                   {"name": "name", "type": ["null", "string"], "default": None}],
    })
    try:
        registry.start()
        url = registry.url
        registry.start()  # safe twice: same process, same URL
        assert registry.url == url and url.endswith("/apis/ccompat/v7")

        registered = _registry_call(f"{url}/subjects/shop.orders-value/versions",
                                    {"schema": schema}, "POST")
        read = _registry_call(f"{url}/schemas/ids/{registered['id']}")
        assert json.loads(read["schema"]) == json.loads(schema)
        assert _registry_call(f"{url}/subjects/shop.orders-value/versions") == [1]
        # Confluent's default, not Apicurio's NONE
        assert _registry_call(f"{url}/config") == {"compatibilityLevel": "BACKWARD"}

        registry.stop()
        assert not registry.is_running()
        registry.start()  # in-memory: a new start is empty
        assert registry.url == url
        assert _registry_call(f"{url}/subjects") == []
        assert _registry_call(f"{url}/config") == {"compatibilityLevel": "BACKWARD"}
    finally:
        registry.stop()
