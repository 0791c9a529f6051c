"""A pipeline against Kafka as production runs it (tests/conftest.py ``secured_kafka``: TLS,
SCRAM logins, client certificates, the StandardAuthorizer with no ACL meaning no access),
configured the way a Flink user writes it: Java client settings only (``sasl.jaas.config``, a
JKS trust store), no librdkafka spelling anywhere. The principal holds exactly the ACLs
`cdc-ingest acls` prints for the pipeline: prefixed ones on its names and its sink topics.

`start` snapshots and streams (capture and the sink's tasks through librdkafka, Spark's Kafka
source through the Java client), `verify` and `status` read back through the same login, and
`verify` also runs with a client certificate from a JKS key store whose key has a password of
its own (mutual TLS, the certificate's CN the principal).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pymysql
import yaml

from cdc_ingest.services.kafka_secured import KEY_PASS, STORE_PASS, TRUST_PASS
from tests.integration.pipeline_helpers import cli, sink_topic, start_command, stop, wait_for

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


_OPERATION = re.compile(r"--operation (\w+)")
_RESOURCE = re.compile(r"--(topic|group|transactional-id) '([^']+)' --resource-pattern-type "
                       r"(literal|prefixed)")


def _grants(printed: str) -> list[tuple[str, str, str, str]]:
    """The ACLs `cdc-ingest acls` printed as kafka-acls.sh commands, as the broker's admin
    API takes them: (resource type, pattern type, name, operation)."""
    out = []
    for line in printed.splitlines():
        if not line.startswith("kafka-acls.sh"):
            continue
        found = _RESOURCE.search(line)
        assert found is not None, line
        kind, name, pattern = found.groups()
        for op in _OPERATION.findall(line):
            out.append((kind.upper().replace("-", "_"), pattern.upper(), name,
                        re.sub(r"(?<!^)(?=[A-Z])", "_", op).upper()))
    return out


def _pipeline(path: Path, mariadb: Any, db: str, name: str, kafka: dict[str, str]) -> Path:
    doc = {
        "source": {"type": "mysql", "hostname": "127.0.0.1", "port": mariadb.port,
                   "username": mariadb.cdc["user"], "password": mariadb.cdc["password"],
                   "tables": f"{db}.t", "server-id": "5900-5904",
                   "scan.startup.mode": "initial", "heartbeat.interval": "1s"},
        "sink": {"type": "upsert-kafka", "sink.delivery-guarantee": "exactly-once",
                 **{f"properties.{k}": v for k, v in kafka.items()}},
        "pipeline": {"name": name, "parallelism": 2, "state.dir": str(path.parent / name),
                     "trigger.interval": "500ms"},
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_a_pipeline_with_java_client_settings_against_tls_scram_and_acls(
        mariadb: Any, secured_kafka: Any, fresh_db: str, tmp_path: Path) -> None:
    db, name = fresh_db, "secured"
    broker = secured_kafka
    broker.add_scram_user("cdc", "cdc-scram-secret")
    truststore = {"ssl.truststore.location": str(broker.tls / "truststore.jks"),
                  "ssl.truststore.password": TRUST_PASS}
    config = _pipeline(tmp_path / "p.yaml", mariadb, db, name, {
        "bootstrap.servers": broker.sasl_bootstrap, "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": f'{SCRAM} required username="cdc" password="cdc-scram-secret";',
        **truststore})
    conn = pymysql.connect(**mariadb.admin, database=db, autocommit=True)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))")
        cur.executemany("INSERT INTO t VALUES (%s, %s)", [(i, f"v{i}") for i in range(1, 51)])

    # exactly the ACLs `cdc-ingest acls` prints, for the principal it reads from the JAAS line
    printed = cli("acls", "--config", str(config))
    assert printed.returncode == 0, printed.stdout + printed.stderr
    assert "--allow-principal 'User:cdc'" in printed.stdout
    assert f"--topic '{db}.' --resource-pattern-type prefixed" in printed.stdout
    broker.allow("User:cdc", _grants(printed.stdout))
    check = cli("validate", "--config", str(config))
    assert check.returncode == 0, check.stdout + check.stderr
    log = tmp_path / "start.log"
    proc = start_command("start", config, log)
    try:
        def rows() -> dict[int, Any]:
            assert proc.poll() is None, log.read_text()[-3000:]
            out: dict[int, Any] = {}
            for m in sink_topic(broker, f"{db}.t"):  # read back through the harness's door
                out[orjson.loads(m.key)["id"]] = None if m.value is None else orjson.loads(
                    m.value)["v"]
            return out
        wait_for(lambda: len(rows()) == 50, timeout=180, what="the snapshot in the sink topic")
        with conn.cursor() as cur:
            cur.execute("UPDATE t SET v = 'changed' WHERE id <= 5")
            cur.execute("DELETE FROM t WHERE id = 50")
        wait_for(lambda: rows().get(1) == "changed" and rows().get(50, 0) is None,
                 timeout=120, what="the live changes in the sink topic")
        report = cli("verify", "--config", str(config))
        assert report.returncode == 0, report.stdout + report.stderr
        status = cli("status", "--config", str(config))
        assert status.returncode == 0, status.stdout + status.stderr
    finally:
        code = stop(proc, timeout=90)
    text = log.read_text()
    assert code == 0, text[-3000:]
    assert "cdc-scram-secret" not in text + check.stdout + check.stderr + report.stdout

    # mutual TLS: the client certificate's CN is the principal; a JKS key store whose key
    # has a password of its own
    identity = broker.client_identity("cdc")
    mtls = _pipeline(tmp_path / "mtls.yaml", mariadb, db, name, {
        "bootstrap.servers": broker.ssl_bootstrap, "security.protocol": "SSL",
        "ssl.keystore.location": str(identity["jks"]), "ssl.keystore.password": STORE_PASS,
        "ssl.key.password": KEY_PASS, **truststore})
    report = cli("verify", "--config", str(mtls))
    assert report.returncode == 0, report.stdout + report.stderr
    assert "equal" in report.stdout

    # a principal without one of the ACLs: validate names it, with the line that grants it;
    # at run time the refusal is a named error (exit 14)
    lines = [line for line in printed.stdout.splitlines() if line.startswith("kafka-acls.sh")]
    assert len(lines) == 4, printed.stdout  # own topics, ids, groups, the sink topics' prefix
    for i, line in enumerate(lines):
        user = f"cdc-without-{i}"
        broker.add_scram_user(user, "other-secret")
        others = "\n".join(lines[:i] + lines[i + 1:])
        broker.allow(f"User:{user}", _grants(others))
        denied = _pipeline(tmp_path / f"{user}.yaml", mariadb, db, name, {
            "bootstrap.servers": broker.sasl_bootstrap, "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512", **truststore,
            "sasl.jaas.config": f'{SCRAM} required username="{user}" password="other-secret";'})
        done = cli("validate", "--config", str(denied))
        said = done.stdout + done.stderr
        assert done.returncode == 4, said
        failed = [row for row in said.splitlines() if row.startswith("[FAIL]")]
        assert len(failed) == 1, said
        assert line.replace("'User:cdc'", f"'User:{user}'") in failed[0], (line, said)
        assert "other-secret" not in said
        if "--group" in line:
            done = cli("verify", "--config", str(denied))
            assert done.returncode == 14, done.stdout + done.stderr
            assert "cdc-ingest acls --config" in done.stdout + done.stderr
