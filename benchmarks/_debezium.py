"""Debezium's MariaDB or MySQL connector in Kafka Connect standalone mode, for ``compare.py``.

What differs between the two is a :class:`Connector` (:data:`CONNECTORS`, by ``--server``):
the artifact and class, the grants Debezium documents for it, the spelling of "no TLS", and
the server kind (``_common.SqlServer``) whose GTID sets position it. The jars (Debezium's
connector and its dependencies, Kafka Connect's runtime and JSON converter, log4j2) come
from Maven Central: :func:`fetch_jars` writes a pom under ``.cache/debezium/`` and runs
``mvn dependency:copy-dependencies`` once per connector; later runs reuse the jars.
:class:`ConnectStandalone` writes the worker, connector and log4j2 files of one run into a
folder and runs ``org.apache.kafka.connect.cli.ConnectStandalone`` from there, its logs and
offsets beside them. Nothing here is copied from Debezium or Kafka: both run as downloaded.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import time
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from _common import MARIADB, MYSQL, SqlServer, log_tail, mysql_conn, stop_process

from cdc_ingest import maven
from cdc_ingest.services._process import free_port

log = logging.getLogger("benchmarks.debezium")

DEBEZIUM_VERSION = "3.5.0.Final"  # the newest 3.x Final of the MariaDB connector on Central;
CONNECT_VERSION = "4.1.1"  # built against Kafka 4.1.1 (its version.kafka), like our broker
# (the MySQL connector is taken at the same version, so that the two runs differ in the
# connector only)
SLF4J_VERSION = "2.0.16"  # as cdc_ingest/services/kafka.py
LOG4J_VERSION = "2.24.3"

SMT_CLASS = "io.debezium.transforms.ExtractNewRecordState"
CONNECT_MAIN = "org.apache.kafka.connect.cli.ConnectStandalone"

# A user of its own, with the grants Debezium documents for the connector (Connector.grants).
USER = "debezium"
PASSWORD = "debezium"


@dataclass(frozen=True)
class Connector:
    """One of Debezium's binlog connectors, as this benchmark runs it."""

    server: SqlServer  # the server kind it reads: GTID sets of the positioning
    artifact: str  # Maven coordinates without the version
    connector_class: str
    grants: str
    ssl_disabled: str  # database.ssl.mode for plain TCP (the two connectors spell it apart)
    jar_set: str  # the folder under .cache/ (MariaDB's keeps the name it always had)
    options: dict[str, str] = field(default_factory=dict)  # more connector properties

    @property
    def name(self) -> str:
        return self.server.name


# RELOAD for the FLUSH TABLES WITH READ LOCK of the (no-data) snapshot, SHOW DATABASES to list
# the schemas, BINLOG MONITOR (MariaDB 10.5+'s name of REPLICATION CLIENT) for SHOW MASTER
# STATUS and SHOW BINARY LOGS, REPLICATION SLAVE to read the binlog, SELECT for the schema
# snapshot.
MARIADB_CONNECTOR = Connector(
    MARIADB, "io.debezium:debezium-connector-mariadb",
    "io.debezium.connector.mariadb.MariaDbConnector",
    "SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, BINLOG MONITOR", "disable",
    f"debezium/{DEBEZIUM_VERSION}-connect-{CONNECT_VERSION}")
# The MySQL connector's documented grant: the same with REPLICATION CLIENT (SHOW BINARY LOG
# STATUS, SHOW BINARY LOGS) instead of BINLOG MONITOR. LOCK TABLES is only for hosts without
# a global read lock (RDS, Aurora); this server has one.
# MySQL 9 knows only caching_sha2_password: over plain TCP, a login the server has not cached
# yet needs the server's RSA key, which Connector/J fetches only when allowed (the `driver.`
# prefix passes a property to it); without it the connector fails validation with "Public Key
# Retrieval is not allowed". pymysql (cdc-ingest) fetches the key without being asked.
MYSQL_CONNECTOR = Connector(
    MYSQL, "io.debezium:debezium-connector-mysql",
    "io.debezium.connector.mysql.MySqlConnector",
    "SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT", "disabled",
    f"debezium/mysql-{DEBEZIUM_VERSION}-connect-{CONNECT_VERSION}",
    {"driver.allowPublicKeyRetrieval": "true"})
CONNECTORS = {c.name: c for c in (MARIADB_CONNECTOR, MYSQL_CONNECTOR)}

# As Kafka's bin/connect-standalone.sh starts it: its KAFKA_HEAP_OPTS default and
# kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS.
JVM_OPTIONS = ("-Xms256M", "-Xmx2G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
               "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
               "-Djava.awt.headless=true")

# Throughput settings (the rest are Debezium's and Connect's defaults). Debezium's own
# defaults are 2048 / 8192 events; 4x lets one poll() hand Connect a bigger batch. Connect's
# source producers default to linger.ms 0 and 16 KiB batches; these match what cdc-ingest's
# librdkafka producers use (linger.ms 5, ~1 MB batches). The rest stays as Connect sets it
# for source tasks: acks=all, max.in.flight.requests.per.connection=1 (so ordered),
# enable.idempotence=false, delivery.timeout.ms=MAX, no compression.
THROUGHPUT: dict[str, str] = {
    "max.batch.size": "8192",
    "max.queue.size": "32768",
}
PRODUCER: dict[str, str] = {
    "producer.linger.ms": "5",
    "producer.batch.size": "1048576",
}


class DebeziumError(RuntimeError):
    """The Debezium side could not be set up or did not do what the benchmark needs."""


# -- jars ------------------------------------------------------------------------------------

def fetch_jars(connector: Connector = MARIADB_CONNECTOR) -> Path:
    """Debezium + Kafka Connect jars in ``.cache/<connector.jar_set>/libs``
    (``debezium/[mysql-]<debezium>-connect-<connect>``), fetched with Maven on first use
    (under a lock; safe to run twice or concurrently)."""
    debezium, connect = DEBEZIUM_VERSION, CONNECT_VERSION
    try:
        return maven.fetch_jars(
            connector.jar_set,
            [
                f"org.apache.kafka:connect-runtime:{connect}",
                f"org.apache.kafka:connect-json:{connect}",
                f"{connector.artifact}:{debezium}",
                # slf4j-api 2.x wins over the 1.7 that connect-runtime brings; log4j2 writes
                # the file
                f"org.slf4j:slf4j-api:{SLF4J_VERSION}",
                f"org.apache.logging.log4j:log4j-slf4j2-impl:{LOG4J_VERSION}",
                f"org.apache.logging.log4j:log4j-core:{LOG4J_VERSION}",
            ],
            what=f"the Debezium {debezium} ({connector.server.label} connector) and Kafka "
                 f"Connect {connect} jars",
            folder="libs",
            required=[f"debezium-connect-plugins-{debezium}.jar"],  # ExtractNewRecordState
        )
    except maven.MavenError as exc:
        raise DebeziumError(str(exc)) from exc


def java_version() -> str | None:
    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30,
                             check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = out.stderr.strip().splitlines()
    return lines[0] if lines else None


# -- the MySQL user ------------------------------------------------------------------------


def create_user(admin: dict[str, Any],
                connector: Connector = MARIADB_CONNECTOR) -> dict[str, Any]:
    """Create (or re-grant) the ``debezium`` user with the connector's grants; its
    settings."""
    conn = mysql_conn(admin)
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE USER IF NOT EXISTS %s@'%%' IDENTIFIED BY %s", (USER, PASSWORD))
            cur.execute(f"GRANT {connector.grants} ON *.* TO %s@'%%'", (USER,))
    finally:
        conn.close()
    return {"host": admin["host"], "port": int(admin["port"]), "user": USER,
            "password": PASSWORD}


# -- one Connect standalone worker -----------------------------------------------------------


def _properties(values: dict[str, Any]) -> str:
    return "".join(f"{key}={value}\n" for key, value in values.items())


_ACKED = re.compile(r"Committing offsets for (\d+) acknowledged messages")

_LOG4J2 = """# written by benchmarks/_debezium.py
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {log_file}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p [%t] %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.reflections.name = org.reflections
logger.reflections.level = ERROR
"""


@dataclass
class ConnectStandalone:
    """One Kafka Connect standalone worker running one Debezium connector (MariaDB's, or
    MySQL's: ``connector``).

    Everything of it lives in ``home``: ``worker.properties``, ``connector.properties``,
    ``log4j2.properties``, ``connect.log`` (log4j2) and ``connect.out`` (the JVM's own
    output), ``offsets.dat`` (Connect's file offset store) and ``schema-history.dat``
    (Debezium's FileSchemaHistory). Start it as often as needed: it resumes from the offsets.
    """

    home: Path
    libs: Path
    bootstrap: str
    mysql: dict[str, Any]  # host, port, user, password of the Debezium user
    server_id: int
    prefix: str  # topic.prefix: the output topic is <prefix>.<db>.<table>
    database: str
    table: str
    offset_flush_ms: int | None = None  # None: Connect's default (60 s)
    proc: subprocess.Popen[bytes] | None = None
    started: float = 0.0  # perf_counter at the last start
    starts: int = 0
    log_start: int = 0  # size of connect.log at the last start: where this run's lines begin
    extra: dict[str, str] = field(default_factory=dict)
    connector: Connector = MARIADB_CONNECTOR

    @property
    def name(self) -> str:
        return f"{self.prefix}-connector"

    @property
    def topic(self) -> str:
        return f"{self.prefix}.{self.database}.{self.table}"

    @property
    def log_file(self) -> Path:
        return self.home / "connect.log"

    @property
    def offsets_file(self) -> Path:
        return self.home / "offsets.dat"

    def worker_config(self) -> dict[str, Any]:
        return {
            "bootstrap.servers": self.bootstrap,
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "key.converter.schemas.enable": "false",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
            "offset.storage.file.filename": str(self.offsets_file),
            **({"offset.flush.interval.ms": str(self.offset_flush_ms)}
               if self.offset_flush_ms else {}),
            "listeners": f"http://127.0.0.1:{free_port()}",  # the REST API, unused here
            # the jars are on the class path and all have ServiceLoader manifests; Connect's
            # default (hybrid_warn) also scans every class, and says to set this instead
            "plugin.discovery": "service_load",
            **PRODUCER,
        }

    def connector_config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "connector.class": self.connector.connector_class,
            "tasks.max": "1",
            "database.hostname": self.mysql["host"],
            "database.port": str(self.mysql["port"]),
            "database.user": self.mysql["user"],
            "database.password": self.mysql["password"],
            "database.server.id": str(self.server_id),
            # as cdc-ingest: plain TCP to a local server
            "database.ssl.mode": self.connector.ssl_disabled,
            **self.connector.options,
            "topic.prefix": self.prefix,
            "database.include.list": self.database,
            "table.include.list": f"{self.database}.{self.table}",
            # no data snapshot: the first start records the binlog position and streams
            "snapshot.mode": "no_data",
            "schema.history.internal": "io.debezium.storage.file.history.FileSchemaHistory",
            "schema.history.internal.file.filename": str(self.home / "schema-history.dat"),
            "include.schema.changes": "false",  # no schema-change topic: only the table's
            "decimal.handling.mode": "string",  # JSON "12.34", not base64 bytes
            **THROUGHPUT,
            # Flat upserts: value = the row after the change, a Kafka tombstone (null value)
            # for a delete. In 3.5 the mode `tombstone` turns a delete into its `after` field,
            # a null *with* a schema, which JsonConverter writes as the 4 bytes `null` (not a
            # tombstone), and drops the connector's own tombstone; `delete-to-tombstone`
            # turns the delete into a real tombstone (null schema and value). The connector's
            # own tombstones would be dropped by the SMT in either mode, so it makes none.
            "tombstones.on.delete": "false",
            "transforms": "unwrap",
            "transforms.unwrap.type": SMT_CLASS,
            "transforms.unwrap.delete.tombstone.handling.mode": "delete-to-tombstone",
            # the broker does not auto-create topics: Connect creates the output topic as
            # cdc-ingest's sink creates its topics: the broker's default partitions and
            # replication, compacted
            "topic.creation.default.partitions": "-1",
            "topic.creation.default.replication.factor": "-1",
            "topic.creation.default.cleanup.policy": "compact",
            **self.extra,
        }

    def command(self) -> list[str]:
        return ["java", *JVM_OPTIONS,
                f"-Dlog4j2.configurationFile={self.home / 'log4j2.properties'}",
                "-cp", f"{self.libs}/*", CONNECT_MAIN,
                str(self.home / "worker.properties"), str(self.home / "connector.properties")]

    def start(self) -> None:
        """Write the configuration files and start the JVM (output appended to its logs)."""
        if self.proc is not None and self.proc.poll() is None:
            raise DebeziumError(f"Connect in {self.home} is already running")
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "worker.properties").write_text(_properties(self.worker_config()))
        (self.home / "connector.properties").write_text(_properties(self.connector_config()))
        (self.home / "log4j2.properties").write_text(_LOG4J2.format(log_file=self.log_file))
        self.starts += 1
        self.log_start = self.log_file.stat().st_size if self.log_file.is_file() else 0
        with (self.home / "connect.out").open("ab") as out:
            out.write(f"--- start {self.starts}\n".encode())
            out.flush()
            self.started = time.perf_counter()
            self.proc = subprocess.Popen(self.command(), cwd=self.home, stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise DebeziumError("Connect is not running")
        return self.proc.pid

    def check(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            raise DebeziumError(f"Kafka Connect exited with {self.proc.returncode}:\n"
                                f"{self.log_errors()}\n{log_tail(self.log_file)}\n"
                                f"{log_tail(self.home / 'connect.out', 10)}")

    def stop(self, timeout: float = 60.0) -> int | None:
        """SIGTERM (Connect stops the task and commits its offsets), SIGKILL after
        ``timeout``. The exit code (a JVM ended by SIGTERM exits with 143, by SIGINT 130)."""
        if self.proc is None:
            return None
        if self.proc.returncode is not None:  # stopped (and reported) before
            return self.proc.returncode
        code = stop_process(self.proc, timeout)
        if code not in (0, 130, 143, -2, -15):  # SIGINT (Ctrl-C) or SIGTERM: a clean stop
            log.warning("Kafka Connect exited with %s after SIGTERM:\n%s", code,
                        log_tail(self.log_file))
        return code

    def log_lines(self, marker: str, this_run: bool = True) -> list[str]:
        """Lines of connect.log containing ``marker`` (by default: since the last start)."""
        if not self.log_file.is_file():
            return []
        with self.log_file.open("rb") as f:
            f.seek(self.log_start if this_run else 0)
            text = f.read().decode(errors="replace")
        return [line for line in text.splitlines() if marker in line]

    def acknowledged(self) -> int:
        """Records the task's producer had acknowledged at its offset commits since the last
        start (WorkerSourceTask's "Committing offsets for N acknowledged messages")."""
        return sum(int(m.group(1)) for line in self.log_lines("acknowledged messages")
                   if (m := _ACKED.search(line)))

    def log_errors(self, last: int = 8) -> str:
        return "\n".join(self.log_lines(" ERROR ")[-last:])

    def offsets(self) -> dict[str, Any]:
        """The offset Connect stored for this connector (its JSON value), or {}.

        The file is a Java-serialized map of byte arrays; the key and value of each entry are
        JSON texts stored as they are, so they are found by scanning for JSON objects/arrays.
        """
        try:
            raw = self.offsets_file.read_bytes()
        except FileNotFoundError:
            return {}
        text = raw.decode("latin-1")
        decoder = json.JSONDecoder()
        found: list[Any] = []
        i = 0
        while i < len(text):
            if text[i] in "[{":
                try:
                    value, end = decoder.raw_decode(text, i)
                except ValueError:
                    i += 1
                    continue
                found.append(value)
                i = end
            else:
                i += 1
        out: dict[str, Any] = {}
        for key, value in pairwise(found):
            if (isinstance(key, list) and key and key[0] == self.name
                    and isinstance(value, dict)):
                out = value
        return out

    def position(self, admin: dict[str, Any], marker_sql: str,
                 timeout_s: float = 180.0) -> dict[str, Any]:
        """Record the binlog head in the offset store, without reading any data: start with
        ``snapshot.mode=no_data`` and heartbeats every second, wait until it streams, then
        write ``marker_sql`` (a statement that leaves no trace the workload cares about, e.g.
        ``DROP DATABASE IF EXISTS bench``) every second until a heartbeat has carried the
        position after it into the flushed offsets; then stop.

        A no-data snapshot produces no records, and Connect stores no offset for a task that
        produced none: without the heartbeat, the next start would snapshot again and begin
        at the binlog head of that moment instead of here.
        """
        saved = dict(self.extra), self.offset_flush_ms
        server = self.connector.server
        self.extra = {**self.extra, "heartbeat.interval.ms": "1000"}
        self.offset_flush_ms = 1000
        began = time.perf_counter()
        self.start()
        try:
            deadline = began + timeout_s
            while not self.log_lines("Starting streaming"):
                self.check()
                if time.perf_counter() > deadline:
                    raise DebeziumError(f"Debezium did not start streaming in {timeout_s:.0f} "
                                        f"s:\n{self.log_errors()}\n{log_tail(self.log_file)}")
                time.sleep(0.2)
            streaming_s = time.perf_counter() - began
            conn = mysql_conn(admin)
            first_marker = ""
            try:
                while True:
                    time.sleep(1.0)
                    self.check()
                    with conn.cursor() as cur:
                        cur.execute(marker_sql)
                        first_marker = first_marker or server.gtid_state(cur)
                    stored = self.offsets()
                    if (stored and not stored.get("snapshot")
                            and server.gtid_reached(stored.get("gtids"), first_marker)):
                        break
                    if time.perf_counter() > deadline:
                        raise DebeziumError(
                            f"Debezium stored no streaming offset past {first_marker} in "
                            f"{timeout_s:.0f} s (offsets: {stored}):\n{self.log_errors()}")
            finally:
                conn.close()
        finally:
            code = self.stop()
            self.extra, self.offset_flush_ms = saved
        stored = self.offsets()
        if not stored or stored.get("snapshot") or not server.gtid_reached(
                stored.get("gtids"), first_marker):
            raise DebeziumError(f"after stopping, the stored offset is {stored}, want a "
                                f"streaming position at or past {first_marker}")
        return {"seconds": time.perf_counter() - began, "streaming_after_s": streaming_s,
                "first_marker_gtid": first_marker, "offset": stored, "exit_code": code}
