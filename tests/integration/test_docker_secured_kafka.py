"""docker/compose.secured-kafka.yaml run for real: the cdc-ingest container of the Compose
stack against a Kafka outside it with TLS, SCRAM logins and the StandardAuthorizer (the
suite's ``secured_kafka``), its login and trust-store passwords and its trust store given
as Compose secrets, its pipeline docker/pipeline.secured-kafka.yaml as shipped.

The container runs with the host's network (an override the test writes), because the
suite's broker and MariaDB listen on 127.0.0.1; MYSQL_HOST / MYSQL_PORT / CDC_TABLES point
the pipeline at the test's table, as the override documents for a MySQL of one's own. The
user's steps are the test's: `acls` in the container prints the grants, `validate` passes,
`up` streams the snapshot and live changes, `verify` in the container finds them equal, and
`docker inspect` shows no secret.
"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path
from typing import Any

import pymysql
import pytest

from cdc_ingest.services.kafka_secured import TRUST_PASS
from tests.integration.docker_env import DOCKER_DIR, DockerUnavailable, ensure_all
from tests.integration.test_secured_kafka import _grants, _snapshot_then_live, _values

PROJECT = "cdc-ingest-secured-test"
PIPELINE = "/etc/cdc-ingest/pipeline.yaml"
LOGIN_PASSWORD = "dock-scram-Secret-7"
METRICS_PORT = 9249  # pipeline.secured-kafka.yaml's metrics.port, on the host's network
HOST_NETWORK = """\
services:
  cdc-ingest:
    network_mode: host
    ports: !reset []
"""


def _compose(files: list[Path], env: dict[str, str], *args: str,
             timeout: float = 300) -> subprocess.CompletedProcess[str]:
    cmd = ["docker", "compose", *[x for f in files for x in ("-f", str(f))], "-p", PROJECT,
           *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                          stdin=subprocess.DEVNULL, check=False)


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def test_compose_override_for_a_secured_kafka(mariadb: Any, secured_kafka: Any, fresh_db: str,
                                              tmp_path: Path) -> None:
    try:
        ensure_all()
    except DockerUnavailable as exc:
        pytest.fail(f"no Docker engine for the Compose test: {exc}")
    assert _port_free(METRICS_PORT), f"port {METRICS_PORT} is taken; the container needs it"
    broker, db = secured_kafka, fresh_db
    broker.add_scram_user("dock", LOGIN_PASSWORD)
    truststore = tmp_path / "truststore.jks"
    truststore.write_bytes((broker.tls / "truststore.jks").read_bytes())
    truststore.chmod(0o644)  # the container's user (uid 10001) reads the secret's file
    override = tmp_path / "host-network.yaml"
    override.write_text(HOST_NETWORK)
    files = [DOCKER_DIR / "compose.yaml", DOCKER_DIR / "compose.test.yaml",
             DOCKER_DIR / "compose.secured-kafka.yaml", override]
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": broker.sasl_bootstrap,
           "KAFKA_USERNAME": "dock", "KAFKA_PASSWORD": LOGIN_PASSWORD,
           "KAFKA_TRUSTSTORE": str(truststore), "KAFKA_TRUSTSTORE_PASSWORD": TRUST_PASS,
           "MYSQL_ROOT_PASSWORD": "unused-root", "CDC_PASSWORD": mariadb.cdc["password"],
           "MYSQL_HOST": "127.0.0.1", "MYSQL_PORT": str(mariadb.port),
           "CDC_TABLES": f"{db}.t", "PIPELINE_NAME": "dock"}
    conn = pymysql.connect(**mariadb.admin, database=db, autocommit=True)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))")
        cur.executemany("INSERT INTO t VALUES (%s, %s)", [(i, f"v{i}") for i in range(1, 21)])

    def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return _compose(files, env, *args, timeout=timeout)

    try:
        services = run("config", "--services")
        assert services.returncode == 0, services.stderr
        assert services.stdout.split() == ["mysql", "cdc-ingest"], services.stdout

        printed = run("run", "--rm", "--no-deps", "-T", "cdc-ingest", "acls", "--config",
                      PIPELINE)
        assert printed.returncode == 0, printed.stdout + printed.stderr
        assert "--allow-principal 'User:dock'" in printed.stdout, printed.stdout
        broker.allow("User:dock", _grants(printed.stdout))
        check = run("run", "--rm", "--no-deps", "-T", "cdc-ingest", "validate", "--config",
                    PIPELINE)
        assert check.returncode == 0, check.stdout + check.stderr
        assert LOGIN_PASSWORD not in check.stdout + check.stderr

        up = run("up", "-d", "--no-deps", "cdc-ingest")
        assert up.returncode == 0, up.stdout + up.stderr

        def rows() -> dict[int, Any]:
            return _values(broker, f"{db}.t")

        def logs() -> str:
            return run("logs", "--no-color", "--tail", "60", "cdc-ingest").stdout

        try:
            _snapshot_then_live(conn, rows, 20)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\ncdc-ingest log:\n{logs()}") from None
        report = run("exec", "-T", "cdc-ingest", "cdc-ingest", "verify", "--config", PIPELINE)
        assert report.returncode == 0, report.stdout + report.stderr
        cid = run("ps", "-q", "cdc-ingest").stdout.strip()
        inspected = subprocess.run(["docker", "inspect", cid], capture_output=True, text=True,
                                   check=True).stdout
        text = logs()
        for secret in (LOGIN_PASSWORD, TRUST_PASS):
            assert secret not in inspected
            assert secret not in text
    finally:
        run("down", "-v", "--timeout", "90", timeout=200)
