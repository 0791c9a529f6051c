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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pymysql
import pytest
import yaml
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from cdc_ingest.services.https_front import HttpsFront
from cdc_ingest.services.kafka_secured import KEY_PASS, STORE_PASS, TRUST_PASS
from tests.integration.pipeline_helpers import cli, sink_topic, start_command, stop, wait_for

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTH = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"


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


def _pipeline(path: Path, mariadb: Any, db: str, name: str, kafka: dict[str, str],
              sink: dict[str, Any] | None = None, pipeline: dict[str, Any] | None = None
              ) -> Path:
    doc: dict[str, Any] = {
        "source": {"type": "mysql", "hostname": "127.0.0.1", "port": mariadb.port,
                   "username": mariadb.cdc["user"], "password": mariadb.cdc["password"],
                   "tables": f"{db}.t", "server-id": "5900-5904",
                   "scan.startup.mode": "initial", "heartbeat.interval": "1s"},
        "sink": {"type": "upsert-kafka", "sink.delivery-guarantee": "exactly-once",
                 **{f"properties.{k}": v for k, v in kafka.items()}, **(sink or {})},
        "pipeline": {"name": name, "parallelism": 2, "state.dir": str(path.parent / name),
                     "trigger.interval": "500ms", **(pipeline or {})},
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _table(mariadb: Any, db: str, rows: int) -> Any:
    """Table ``t`` with ``rows`` rows; the connection, autocommitting."""
    conn = pymysql.connect(**mariadb.admin, database=db, autocommit=True)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))")
        cur.executemany("INSERT INTO t VALUES (%s, %s)",
                        [(i, f"v{i}") for i in range(1, rows + 1)])
    return conn


def _values(broker: Any, topic: str) -> dict[int, Any]:
    """``id`` -> ``v`` of the sink topic's last value per key (None: a tombstone), read back
    through the harness's door."""
    return {orjson.loads(m.key)["id"]: None if m.value is None else orjson.loads(m.value)["v"]
            for m in sink_topic(broker, topic)}


def _snapshot_then_live(conn: Any, rows: Callable[[], dict[int, Any]], count: int) -> None:
    """Wait for the ``count`` rows of ``t`` in the sink topic, then update rows 1-3 and delete
    the last one, and wait for those changes there too."""
    wait_for(lambda: len(rows()) == count, timeout=240, what="the snapshot in the sink topic")
    with conn.cursor() as cur:
        cur.execute("UPDATE t SET v = 'changed' WHERE id <= 3")
        cur.execute("DELETE FROM t WHERE id = %s", (count,))
    wait_for(lambda: rows().get(3) == "changed" and rows().get(count, 0) is None,
             timeout=120, what="the live changes in the sink topic")


def _start_change_verify(config: Path, tmp_path: Path, broker: Any, conn: Any, db: str,
                         rows: int, changed: int) -> tuple[str, Any]:
    """`start`: the ``rows`` rows of ``t`` through Spark, then row ``changed`` updated and
    seen, then `verify` equal; `start` stopped with exit 0. Its log and verify's result."""
    log = tmp_path / "start.log"
    proc = start_command("start", config, log)
    try:
        def values() -> dict[int, Any]:
            assert proc.poll() is None, log.read_text()[-3000:]
            return _values(broker, f"{db}.t")
        wait_for(lambda: len(values()) == rows, timeout=180, what="the snapshot through Spark")
        with conn.cursor() as cur:
            cur.execute("UPDATE t SET v = 'changed' WHERE id = %s", (changed,))
        wait_for(lambda: values().get(changed) == "changed", timeout=120, what="a live change")
        report = cli("verify", "--config", str(config))
        assert report.returncode == 0, report.stdout + report.stderr
    finally:
        code = stop(proc, timeout=90)
    text = log.read_text()
    assert code == 0, text[-3000:]
    return text, report


def _grant_printed(broker: Any, config: Path, user: str) -> str:
    """Grant ``User:<user>`` exactly the ACLs `cdc-ingest acls` prints; what it printed."""
    printed = cli("acls", "--config", str(config), "--principal", f"User:{user}")
    assert printed.returncode == 0, printed.stdout + printed.stderr
    broker.allow(f"User:{user}", _grants(printed.stdout))
    return printed.stdout


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
            return _values(broker, f"{db}.t")
        _snapshot_then_live(conn, rows, 50)
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
        if "--transactional-id" in line:  # capture's first transaction is refused
            done = cli("capture", "--config", str(denied))
            said = done.stdout + done.stderr
            assert done.returncode == 14, said
            assert "Describe and Write on the pipeline's transactional ids" in said, said


@pytest.mark.parametrize("login", ["scram", "mtls"])
def test_librdkafka_spellings_reach_sparks_java_client(
        mariadb: Any, secured_kafka: Any, fresh_db: str, tmp_path: Path, login: str) -> None:
    """librdkafka's own spellings only, and no head start, so every row goes through Spark's
    Kafka source: its Java client gets them carried over (kafka/java_client.py), the SCRAM
    login as a JAAS line, the PEM CA as a PEM trust store, the PEM client certificate and key
    as an inline PEM key store."""
    db, broker, user = fresh_db, secured_kafka, "cdclib"
    pems = broker.client_identity(user)
    settings = {"ssl.ca.location": str(broker.tls / "ca.pem")}
    if login == "scram":
        broker.add_scram_user(user, "lib-scram-secret", "SCRAM-SHA-256")
        settings.update({"bootstrap.servers": broker.sasl_bootstrap,
                         "security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-256",
                         "sasl.username": user, "sasl.password": "lib-scram-secret"})
    else:
        settings.update({"bootstrap.servers": broker.ssl_bootstrap, "security.protocol": "SSL",
                         "ssl.certificate.location": str(pems["jks"].with_suffix(".pem")),
                         "ssl.key.location": str(pems["jks"].with_suffix(".key"))})
    config = _pipeline(tmp_path / "p.yaml", mariadb, db, f"lib-{login}", settings,
                       pipeline={"head-start": False})
    conn = _table(mariadb, db, 20)
    _grant_printed(broker, config, user)
    text, report = _start_change_verify(config, tmp_path, broker, conn, db, 20, 7)
    assert "lib-scram-secret" not in text + report.stdout + report.stderr
    assert "PRIVATE KEY" not in text


def test_avro_confluent_through_a_registry_behind_tls_and_basic_auth(
        mariadb: Any, secured_kafka: Any, registry: Any, fresh_db: str, tmp_path: Path) -> None:
    """The Schema Registry as production runs it: https with a certificate of the company's
    CA, HTTP basic auth (cdc_ingest/services/https_front.py in front of the real registry),
    configured as Flink's avro-confluent format is (a JKS trust store with its password,
    basic-auth.user-info), with the Kafka logins of a Flink user too. The messages are read
    back by confluent-kafka's own Avro deserializer through the same front."""
    db, broker, user = fresh_db, secured_kafka, "cdcavro"
    front = HttpsFront(registry.url.split("/apis/")[0], broker.tls / "broker.pem",
                       broker.tls / "broker.key", "reg-user:reg-secret-1").start()
    try:
        broker.add_scram_user(user, "avro-scram-secret")
        truststore = {"ssl.truststore.location": str(broker.tls / "truststore.jks"),
                      "ssl.truststore.password": TRUST_PASS}
        config = _pipeline(tmp_path / "p.yaml", mariadb, db, "avro-tls", {
            "bootstrap.servers": broker.sasl_bootstrap, "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512", **truststore,
            "sasl.jaas.config": f'{SCRAM} required username="{user}" '
                                'password="avro-scram-secret";'}, sink={
            "key.format": "avro-confluent", "value.format": "avro-confluent",
            "avro-confluent.url": front.url("/apis/ccompat/v7"),
            "avro-confluent.basic-auth.credentials-source": "USER_INFO",
            "avro-confluent.basic-auth.user-info": "reg-user:reg-secret-1",
            **{f"avro-confluent.{k}": v for k, v in truststore.items()}})
        conn = _table(mariadb, db, 10)
        _grant_printed(broker, config, user)

        # the wrong trust store password: validate says which option, and no secret
        wrong = yaml.safe_load(config.read_text())
        wrong["sink"]["avro-confluent.ssl.truststore.password"] = "not-the-pass"
        (tmp_path / "wrong.yaml").write_text(yaml.safe_dump(wrong, sort_keys=False))
        refused = cli("validate", "--config", str(tmp_path / "wrong.yaml"))
        said = refused.stdout + refused.stderr
        assert refused.returncode == 2, said
        assert "avro-confluent.ssl.truststore.location" in said, said
        assert "not-the-pass" not in said and "reg-secret-1" not in said

        log = tmp_path / "start.log"
        proc = start_command("start", config, log)
        deserialize = AvroDeserializer(SchemaRegistryClient({
            "url": front.url("/apis/ccompat/v7"), "basic.auth.user.info": "reg-user:reg-secret-1",
            "ssl.ca.location": str(broker.tls / "ca.pem")}))
        try:
            def values() -> dict[int, Any]:
                assert proc.poll() is None, log.read_text()[-3000:]
                out: dict[int, Any] = {}
                for m in sink_topic(broker, f"{db}.t"):
                    key = deserialize(m.key, SerializationContext(f"{db}.t", MessageField.KEY))
                    out[key["id"]] = None if m.value is None else deserialize(
                        m.value, SerializationContext(f"{db}.t", MessageField.VALUE))["v"]
                return out
            wait_for(lambda: len(values()) == 10, timeout=180, what="the snapshot as Avro")
            with conn.cursor() as cur:
                cur.execute("UPDATE t SET v = 'changed' WHERE id = 3")
                cur.execute("DELETE FROM t WHERE id = 4")
            wait_for(lambda: values().get(3) == "changed" and values()[4] is None,
                     timeout=120, what="the live changes as Avro")
            report = cli("verify", "--config", str(config))
            assert report.returncode == 0, report.stdout + report.stderr
        finally:
            code = stop(proc, timeout=90)
        text = log.read_text()
        assert code == 0, text[-3000:]
        assert front.refused == 0
        for secret in ("reg-secret-1", "avro-scram-secret", TRUST_PASS):
            assert secret not in text + report.stdout + report.stderr, secret
    finally:
        front.stop()


def test_oauthbearer_client_credentials_for_every_client(
        mariadb: Any, secured_kafka: Any, fresh_db: str, tmp_path: Path) -> None:
    """OAUTHBEARER with OIDC client credentials, written as a Flink user does (the JAAS line's
    clientId / clientSecret / scope, the login callback handler, the token endpoint), against
    a broker that verifies the tokens with its identity provider's keys
    (services/oidc_provider.py). librdkafka gets them as its OIDC method; Spark's Kafka source
    (no head start, so it reads every row) logs in with the Java client's own handler."""
    db, broker, user = fresh_db, secured_kafka, "cdcoauth"
    broker.add_oauth_client(user, "oauth-secret-7")
    config = _pipeline(tmp_path / "p.yaml", mariadb, db, "oauth", {
        "bootstrap.servers": broker.sasl_bootstrap, "security.protocol": "SASL_SSL",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.login.callback.handler.class":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
        "sasl.oauthbearer.token.endpoint.url": broker.token_endpoint,
        "sasl.jaas.config": f'{OAUTH} required clientId="{user}" clientSecret="oauth-secret-7" '
                            'scope="kafka";',
        "ssl.truststore.location": str(broker.tls / "truststore.jks"),
        "ssl.truststore.password": TRUST_PASS}, pipeline={"head-start": False})
    conn = _table(mariadb, db, 15)
    _grant_printed(broker, config, user)
    check = cli("validate", "--config", str(config))
    assert check.returncode == 0, check.stdout + check.stderr
    text, report = _start_change_verify(config, tmp_path, broker, conn, db, 15, 2)
    assert "oauth-secret-7" not in text + check.stdout + report.stdout + report.stderr

    # a wrong secret: the identity provider refuses the token, and the command says so
    wrong = yaml.safe_load(config.read_text())
    wrong["sink"]["properties.sasl.jaas.config"] = (
        f'{OAUTH} required clientId="{user}" clientSecret="not-it" scope="kafka";')
    (tmp_path / "wrong.yaml").write_text(yaml.safe_dump(wrong, sort_keys=False))
    refused = cli("verify", "--config", str(tmp_path / "wrong.yaml"), timeout=180)
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0, said
    assert "not-it" not in said
    error = [line for line in said.splitlines() if line.startswith("error:")]
    assert error and "could not log in" in error[-1] and "invalid_client" in error[-1], said
