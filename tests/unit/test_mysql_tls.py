"""jdbc.properties -> TLS settings: Connector/J's modes, key stores read in memory, errors."""

from __future__ import annotations

import datetime as dt
import ssl
import subprocess
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    Encoding,
    pkcs12,
)
from cryptography.x509.oid import NameOID

from cdc_ingest.config.jdbc import JdbcPropertiesDef, store_path
from cdc_ingest.errors import SourceError
from cdc_ingest.mysql import tls
from cdc_ingest.mysql.connection import ConnectionSettings

PASSWORD = "s3cret-store"


def _props(**given: object) -> JdbcPropertiesDef:
    return JdbcPropertiesDef.model_validate(given)


@pytest.mark.parametrize(("given", "mode"), [
    ({}, "PREFERRED"),
    ({"useSSL": False}, "DISABLED"),
    ({"useSSL": False, "requireSSL": True}, "DISABLED"),
    ({"requireSSL": True}, "REQUIRED"),
    ({"verifyServerCertificate": True}, "VERIFY_CA"),
    ({"requireSSL": True, "verifyServerCertificate": True}, "VERIFY_CA"),
    ({"sslMode": "verify_identity", "useSSL": False}, "VERIFY_IDENTITY"),
])
def test_the_mode_combines_the_old_properties_as_connector_j_does(
        given: dict[str, object], mode: str) -> None:
    assert _props(**given).mode.value == mode


def test_store_urls_are_local_files() -> None:
    assert store_path("file:/etc/ts.p12") == "/etc/ts.p12"
    assert store_path("file:///etc/ts.p12") == "/etc/ts.p12"
    assert store_path("/etc/ts.p12") == "/etc/ts.p12"
    assert store_path("file://host/ts.p12") is None
    assert store_path("classpath:ts.p12") is None


def _cert_and_key() -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test-ca")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(1).not_valid_before(now)
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return cert, key


def test_jks_trust_stores_are_read_with_the_jdks_keytool(tmp_path: Path) -> None:
    cert, _ = _cert_and_key()
    (tmp_path / "ca.pem").write_bytes(cert.public_bytes(Encoding.PEM))
    subprocess.run(["keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", "ca.pem",
                    "-keystore", "trust.jks", "-storetype", "JKS", "-storepass", PASSWORD],
                   cwd=tmp_path, check=True, capture_output=True, timeout=120)
    for password in (PASSWORD, None):  # Java reads a trust store without its password too
        ctx = tls.pymysql_options(_settings(
            tmp_path, sslMode="VERIFY_CA", trustCertificateKeyStoreUrl=str(tmp_path / "trust.jks"),
            trustCertificateKeyStoreType="JKS",
            **({"trustCertificateKeyStorePassword": password} if password else {})))["ssl"]
        assert [c["subject"] for c in ctx.get_ca_certs()] == [((("commonName", "test-ca"),),)]


def _settings(tmp_path: Path, **given: object) -> tls.TlsSettings:
    return tls.TlsSettings.from_properties(_props(**given))


def test_pkcs12_stores_load_in_memory_and_passwords_stay_hidden(tmp_path: Path) -> None:
    cert, key = _cert_and_key()
    store = tmp_path / "client.p12"
    store.write_bytes(pkcs12.serialize_key_and_certificates(
        b"c", key, cert, None, BestAvailableEncryption(PASSWORD.encode())))
    settings = _settings(tmp_path, sslMode="VERIFY_CA",
                         trustCertificateKeyStoreUrl=f"file:{store}",
                         trustCertificateKeyStorePassword=PASSWORD,
                         clientCertificateKeyStoreUrl=str(store),
                         clientCertificateKeyStorePassword=PASSWORD)
    options = tls.pymysql_options(settings)
    ctx = options["ssl"]
    assert isinstance(ctx, ssl.SSLContext)
    assert ctx.verify_mode == ssl.CERT_REQUIRED and not ctx.check_hostname
    assert [c["subject"] for c in ctx.get_ca_certs()] == [((("commonName", "test-ca"),),)]
    assert not list(tmp_path.glob("*.pem"))  # the key never reached a file
    conn = ConnectionSettings("h", 1, "u", "pw", tls=settings)
    assert PASSWORD not in repr(conn) and PASSWORD not in repr(settings)


def test_pem_files_are_accepted_too(tmp_path: Path) -> None:
    cert, _ = _cert_and_key()
    ca = tmp_path / "ca.pem"
    ca.write_bytes(cert.public_bytes(Encoding.PEM))
    ctx = tls.pymysql_options(_settings(tmp_path, sslMode="VERIFY_IDENTITY",
                                        trustCertificateKeyStoreUrl=str(ca),
                                        tlsVersions="TLSv1.3"))["ssl"]
    assert ctx.check_hostname and ctx.minimum_version == ssl.TLSVersion.TLSv1_3
    assert len(ctx.get_ca_certs()) == 1


def test_modes_without_a_context(tmp_path: Path) -> None:
    assert tls.pymysql_options(_settings(tmp_path, useSSL=False)) == {"ssl_disabled": True}
    assert tls.pymysql_options(_settings(tmp_path)) == {}  # PyMySQL's PREFERRED
    ctx = tls.pymysql_options(_settings(tmp_path, sslMode="REQUIRED"))["ssl"]
    assert ctx.verify_mode == ssl.CERT_NONE  # required, not verified (Connector/J's REQUIRED)


@pytest.mark.parametrize(("content", "password", "expected"), [
    (b"\xfe\xed\xfe\xed\x00\x00\x00\x02", None, "keytool could not read the JKS store"),
    (b"not a store", PASSWORD, "could not be opened as PKCS12"),
    (None, "wrong-password", "wrong or missing password"),
])
def test_unreadable_stores_say_why_and_how_to_fix(
        tmp_path: Path, content: bytes | None, password: str | None, expected: str) -> None:
    store = tmp_path / "ts.jks"
    if content is None:
        cert, key = _cert_and_key()
        content = pkcs12.serialize_key_and_certificates(
            b"c", key, cert, None, BestAvailableEncryption(PASSWORD.encode()))
    store.write_bytes(content)
    props = {"sslMode": "VERIFY_CA", "trustCertificateKeyStoreUrl": str(store)}
    if password:
        props["trustCertificateKeyStorePassword"] = password
    with pytest.raises(SourceError) as caught:
        tls.pymysql_options(_settings(tmp_path, **props))
    assert expected in str(caught.value)
    assert "jdbc.properties.trustCertificateKeyStoreUrl" in str(caught.value)
    assert PASSWORD not in str(caught.value) and "wrong-password" not in str(caught.value)


def test_connection_failures_from_tls_get_their_own_fix() -> None:
    verify = OSError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
                     "self-signed certificate in certificate chain")
    assert "trustCertificateKeyStoreUrl" in (tls.tls_failure(verify) or "")
    name = OSError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
                   "IP address mismatch, certificate is not valid for '127.0.0.1'")
    assert "does not name this host" in (tls.tls_failure(name) or "")
    assert "does not offer TLS" in (tls.tls_failure(
        OSError(2026, "SSL is required but the server doesn't support it")) or "")
    assert tls.tls_failure(OSError(2003, "Connection refused")) is None
