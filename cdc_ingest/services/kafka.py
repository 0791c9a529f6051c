"""A single-node Apache Kafka (KRaft) for dev, demo and tests, run from Maven Central jars."""

from __future__ import annotations

import base64
import logging
import shutil
import uuid
from importlib.resources import files
from pathlib import Path
from string import Template

from cdc_ingest import maven
from cdc_ingest.services._kafka_probe import wait_until_ready
from cdc_ingest.services._process import (
    LOCALHOST,
    ServiceError,
    free_port,
    load_state,
    log_tail,
    pid_alive,
    read_pid,
    run_checked,
    save_state,
    spawn_detached,
    stop_pid,
)

log = logging.getLogger(__name__)

DEFAULT_VERSION = "4.1.1"
SLF4J_VERSION = "2.0.16"
LOG4J_VERSION = "2.24.3"


def _template(name: str) -> Template:
    return Template(files("cdc_ingest.services").joinpath(name).read_text())


def _require(tool: str, package: str) -> None:
    if shutil.which(tool) is None:
        raise ServiceError(
            f"`{tool}` is not on PATH: install it (Debian: apt-get install {package})"
        )


def fetch_jars(version: str = DEFAULT_VERSION) -> Path:
    """Download Kafka and its logging jars once into the cache; return the ``libs`` folder."""
    try:
        return maven.fetch_jars(
            f"kafka-{version}",
            [
                f"org.apache.kafka:kafka_2.13:{version}",
                # Kafka logs through SLF4J; route it to a log4j2 file appender. slf4j-api 2.x
                # is listed so that it wins over an older one that Kafka may bring.
                f"org.slf4j:slf4j-api:{SLF4J_VERSION}",
                f"org.apache.logging.log4j:log4j-slf4j2-impl:{LOG4J_VERSION}",
                f"org.apache.logging.log4j:log4j-core:{LOG4J_VERSION}",
            ],
            what=f"the Kafka {version} jars",
            folder="libs",
        )
    except maven.MavenError as exc:
        raise ServiceError(str(exc)) from exc


def _lines(path: Path) -> list[str]:
    return path.read_text(errors="replace").splitlines() if path.is_file() else []


def _random_cluster_id() -> str:
    """Kafka's Uuid text form: URL-safe base64 of 16 random bytes, not starting with '-'."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


def _server_properties(home: Path, port: int, controller_port: int) -> str:
    lines = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@{LOCALHOST}:{controller_port}",
        "controller.listener.names": "CONTROLLER",
        "listeners": f"PLAINTEXT://{LOCALHOST}:{port},CONTROLLER://{LOCALHOST}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{LOCALHOST}:{port}",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        "num.partitions": "1",
        "auto.create.topics.enable": "false",
        "log.dirs": str(home / "data"),
    }
    header = "# written by cdc_ingest.services.kafka; rewritten on every start\n"
    return header + "".join(f"{key}={value}\n" for key, value in lines.items())


class KafkaBroker:
    """One KRaft broker+controller with its data, config and logs under ``home``.

    ``start()`` and ``stop()`` are idempotent; ports and cluster id are kept in
    ``home/state.json`` so later starts reuse them.
    """

    host = LOCALHOST

    def __init__(self, home: Path, port: int | None = None, version: str = DEFAULT_VERSION):
        self.home = Path(home).resolve()
        self._pid: int | None = None
        self.version = version
        state = load_state(self.state_file)
        self._port: int | None = port or state.get("port")
        self._controller_port: int | None = state.get("controller_port")
        self._cluster_id: str = state.get("cluster_id") or _random_cluster_id()

    @property
    def state_file(self) -> Path:
        return self.home / "state.json"

    @property
    def config_file(self) -> Path:
        return self.home / "server.properties"

    @property
    def pid_file(self) -> Path:
        return self.home / "kafka.pid"

    @property
    def log_file(self) -> Path:
        """The broker's log4j2 log; the JVM's own output goes to ``kafka.out`` beside it."""
        return self.home / "logs" / "server.log"

    @property
    def port(self) -> int:
        if self._port is None:
            raise ServiceError(f"Kafka in {self.home} has no port yet: call start() first")
        return int(self._port)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def is_running(self) -> bool:
        pid = read_pid(self.pid_file)
        return pid is not None and pid_alive(pid, str(self.config_file))

    def start(self) -> None:
        """Start the broker (formatting its storage on first use) and wait until it is ready."""
        if self.is_running():
            self._wait_ready(read_pid(self.pid_file) or 0)
            return
        _require("java", "default-jdk-headless")
        libs = fetch_jars(self.version)
        self._port = self._port or free_port()
        while self._controller_port in (None, self._port):
            self._controller_port = free_port()
        self.home.mkdir(parents=True, exist_ok=True)
        save_state(
            self.state_file,
            {
                "port": self._port,
                "controller_port": self._controller_port,
                "cluster_id": self._cluster_id,
            },
        )
        self._write_config()
        self._format_storage(libs)
        cmd = self._java(libs, "kafka.Kafka", str(self.config_file))
        pid = self._pid = spawn_detached(cmd, self.home / "kafka.out", self.home)
        self.pid_file.write_text(f"{pid}\n")
        self._wait_ready(pid)
        log.info("Kafka ready at %s (home %s)", self.bootstrap, self.home)

    def stop(self, wipe: bool = False) -> None:
        """Stop the broker; with ``wipe`` also delete its data and config."""
        pid = read_pid(self.pid_file) or self._pid  # _pid: if stopped before it was written
        if pid is not None:
            stop_pid(pid, str(self.config_file))
        self.pid_file.unlink(missing_ok=True)
        if wipe:
            shutil.rmtree(self.home, ignore_errors=True)
            self._port = self._controller_port = None

    def _write_config(self) -> None:
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        self.config_file.write_text(
            _server_properties(self.home, self.port, int(self._controller_port or 0))
        )
        log4j = _template("kafka-log4j2.properties").substitute(log_file=self.log_file)
        (self.home / "log4j2.properties").write_text(log4j)

    def _java(self, libs: Path, main: str, *args: str) -> list[str]:
        return [
            "java", "-Xms256m", "-Xmx768m", "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self.home / 'log4j2.properties'}",
            "-cp", f"{libs}/*", main, *args,
        ]  # fmt: skip

    def _format_storage(self, libs: Path) -> None:
        if (self.home / "data" / "meta.properties").exists():
            return
        args = ("format", "-t", self._cluster_id, "-c", str(self.config_file))
        run_checked(
            self._java(libs, "kafka.tools.StorageTool", *args),
            "formatting the Kafka storage",
            timeout=120,
        )

    def _wait_ready(self, pid: int) -> None:
        def details() -> str:
            errors = [line for line in _lines(self.log_file) if " ERROR " in line][-5:]
            return "\n".join(
                [*errors, log_tail(self.log_file), log_tail(self.home / "kafka.out", 10)]
            )

        wait_until_ready(
            self.bootstrap,
            details=details,
            alive=lambda: pid_alive(pid, str(self.config_file)),
        )
