"""TLS to MySQL through Flink CDC's `jdbc.properties.*` (Connector/J's properties).

The capture user is created `REQUIRE X509`, so MySQL itself refuses every connection that is
not TLS with this client's certificate: the catalog, the snapshot, the binlog stream and
`verify` must all go through the trust store and client key store that the pipeline names,
both PKCS12 files as Java's keytool writes them. A run then snapshots and streams rows and
`verify` finds the topic equal. `validate` names the cause and the fix when the certificate
does not name the host (VERIFY_IDENTITY), when TLS is turned off for such a user, and when
a trust store does not hold the server's CA.
"""

from __future__ import annotations

import json
import ssl
import subprocess
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    load_pem_private_key,
    pkcs12,
)

from cdc_ingest.mysql import ConnectionSettings, connect
from cdc_ingest.services._server import CDC_GRANTS
from tests.conftest import admin_conn
from tests.integration.pipeline_helpers import (
    cli,
    sink_topic,
    start_command,
    stop,
    wait_for,
    write_pipeline,
)

USER = "cdc_x509"
STORE_PASSWORD = "store-secret-7"


def _keytool_truststore(ca_pem: Path, out: Path) -> Path:
    subprocess.run(["keytool", "-importcert", "-noprompt", "-alias", "mysql-ca", "-file",
                    str(ca_pem), "-keystore", str(out), "-storetype", "PKCS12",
                    "-storepass", STORE_PASSWORD], check=True, capture_output=True)
    return out


def _client_store(datadir: Path, out: Path) -> Path:
    cert = x509.load_pem_x509_certificate((datadir / "client-cert.pem").read_bytes())
    key = load_pem_private_key((datadir / "client-key.pem").read_bytes(), None)
    out.write_bytes(pkcs12.serialize_key_and_certificates(
        b"client", key, cert, None,  # type: ignore[arg-type]
        BestAvailableEncryption(STORE_PASSWORD.encode())))
    return out


def _pipeline(mysql: Any, kafka: Any, tmp_path: Path, db: str, name: str,
              **props: str) -> Path:
    source = {"scan.startup.mode": "initial",
              **{f"jdbc.properties.{k}": v for k, v in props.items()}}
    return write_pipeline(tmp_path / f"{name}.yaml", mysql, kafka, name, f"{db}.t",
                          user=USER, source=source)


def test_every_connection_goes_through_tls_with_the_pipelines_stores(
        mysql: Any, kafka: Any, fresh_mysql_db: str, tmp_path: Path) -> None:
    db = fresh_mysql_db
    with admin_conn(mysql, db) as conn, conn.cursor() as cur:
        cur.execute(f"DROP USER IF EXISTS '{USER}'@'%'")
        cur.execute(f"CREATE USER '{USER}'@'%' IDENTIFIED BY '{USER}' REQUIRE X509")
        cur.execute(f"GRANT {CDC_GRANTS} ON *.* TO '{USER}'@'%'")
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))")
        cur.execute("INSERT INTO t VALUES (1, 'snap-1'), (2, 'snap-2')")
    trust = _keytool_truststore(mysql.datadir / "ca.pem", tmp_path / "truststore.p12")
    client = _client_store(mysql.datadir, tmp_path / "client.p12")
    stores = {"trustCertificateKeyStoreUrl": f"file:{trust}",
              "trustCertificateKeyStorePassword": STORE_PASSWORD,
              "clientCertificateKeyStoreUrl": f"file://{client}",
              "clientCertificateKeyStorePassword": STORE_PASSWORD}

    # The certificate MySQL generates names no host: VERIFY_IDENTITY must refuse it.
    config = _pipeline(mysql, kafka, tmp_path, db, f"tls-id-{db}",
                       sslMode="VERIFY_IDENTITY", **stores)
    checked = cli("validate", "--config", str(config))
    assert checked.returncode != 0
    assert "does not name this host" in checked.stdout + checked.stderr, checked.stdout

    # Without TLS the server refuses the X509 user; the error says so, not "start MySQL".
    config = _pipeline(mysql, kafka, tmp_path, db, f"tls-off-{db}", useSSL="false")
    checked = cli("validate", "--config", str(config))
    assert checked.returncode != 0
    assert "refused the login" in checked.stdout + checked.stderr, checked.stdout

    # A trust store without the server's CA (the client certificate's own store instead)
    config = _pipeline(mysql, kafka, tmp_path, db, f"tls-ca-{db}", sslMode="VERIFY_CA",
                       **{**stores, "trustCertificateKeyStoreUrl": f"file:{client}"})
    checked = cli("validate", "--config", str(config))
    assert checked.returncode != 0
    out = checked.stdout + checked.stderr
    assert "does not chain to a trusted CA" in out, out
    assert STORE_PASSWORD not in out

    config = _pipeline(mysql, kafka, tmp_path, db, f"tls-{db}", sslMode="VERIFY_CA",
                       tlsVersions="TLSv1.2,TLSv1.3", **stores)
    checked = cli("validate", "--config", str(config))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    log = tmp_path / "start.log"
    proc = start_command("start", config, log)
    try:
        wait_for(lambda: len(sink_topic(kafka, f"{db}.t")) >= 2, 180, "the snapshot")
        with admin_conn(mysql, db) as conn, conn.cursor() as cur:
            cur.execute("INSERT INTO t VALUES (3, 'live-3')")
            cur.execute("UPDATE t SET v = 'live-1' WHERE id = 1")
            cur.execute("DELETE FROM t WHERE id = 2")
        messages = wait_for(lambda: (m := sink_topic(kafka, f"{db}.t")) and len(m) >= 5 and m,
                            120, "the streamed changes")
        latest = {json.loads(m.key)["id"]: m.value for m in messages}
        assert latest[2] is None
        assert json.loads(latest[1]) == {"id": 1, "v": "live-1"}
        assert json.loads(latest[3]) == {"id": 3, "v": "live-3"}
        verified = cli("verify", "--config", str(config))
        assert verified.returncode == 0, verified.stdout + verified.stderr
    finally:
        code = stop(proc, 60)
    text = log.read_text()
    assert code == 0, text[-3000:]
    assert STORE_PASSWORD not in text
    with admin_conn(mysql, db) as conn, conn.cursor() as cur:
        cur.execute(f"DROP USER '{USER}'@'%'")


def test_preferred_takes_tls_without_loading_ca_certificates_per_connection(
    mysql: Any, mariadb: Any, monkeypatch: Any
) -> None:
    """No jdbc.properties: TLS when the server offers it (MySQL 9.7 does), nothing verified,
    as PyMySQL's own PREFERRED mode, but without its default context per connection (the
    system's CA certificates loaded each time, for a check it does not make). MariaDB here
    offers no TLS: the same settings connect in the clear."""
    def no_default_context(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("a default SSL context was made for a PREFERRED connection")

    monkeypatch.setattr(ssl, "create_default_context", no_default_context)
    seen: dict[int, Any] = {}
    contexts = []
    for server in (mysql, mariadb):
        settings = ConnectionSettings("127.0.0.1", server.port, server.cdc["user"],
                                      server.cdc["password"])
        for _ in range(2):  # one context for every connection of the process
            conn = connect(settings)
            try:
                with conn.cursor() as cur:
                    cur.execute("SHOW SESSION STATUS LIKE 'Ssl_version'")
                    row = cur.fetchone()
                    seen[server.port] = (row[1] if row else "", conn.ctx if conn.ssl else None)
                    contexts.append(seen[server.port][1])
            finally:
                conn.close()
    version, context = seen[mysql.port]
    assert version.startswith("TLSv1.") and context is not None
    assert context.verify_mode == ssl.CERT_NONE and not context.check_hostname
    assert contexts[0] is contexts[1] is context
    assert seen[mariadb.port][0] == ""  # MariaDB 10.11 here has no certificate: no TLS
