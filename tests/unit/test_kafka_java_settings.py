"""Kafka settings written for the Java client (a Flink user's ``properties.*``) carried over to
librdkafka: SASL logins from ``sasl.jaas.config``, trust and client identity from JKS,
PKCS12 and PEM stores made here by openssl and the JDK's keytool, librdkafka's own spellings
winning, and what cannot be carried over refused by the config check with its YAML path.
Each derived configuration is also handed to a real librdkafka producer, which parses the
certificates and keys when it is created."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from cryptography import x509
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    PublicFormat,
    load_pem_private_key,
)

from cdc_ingest.errors import ConfigError
from cdc_ingest.kafka.config import client_config
from cdc_ingest.kafka.java_settings import librdkafka_settings
from cdc_ingest.kafka.logs import GROUP_BASE, reader_group, with_logger
from tests.unit.test_config import minimal, parse

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTH = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"


def _run(*args: str, cwd: Path) -> None:
    subprocess.run(list(args), cwd=cwd, check=True, capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA, a client key and certificate it signed, and the stores Java users keep them in:
    trust.jks / trust.p12 (CA), client.jks (store password storepw1, key password keypass1),
    client.p12 (storepw1), client.pem (certificate and key), key.pem, cert.pem."""
    d = tmp_path_factory.mktemp("stores")
    _run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
         "-out", "ca.pem", "-days", "2", "-subj", "/CN=test-ca", cwd=d)
    _run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "key.pem", "-out",
         "client.csr", "-subj", "/CN=client", cwd=d)
    _run("openssl", "x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
         "-CAcreateserial", "-out", "cert.pem", "-days", "2", cwd=d)
    (d / "client.pem").write_text((d / "cert.pem").read_text() + (d / "key.pem").read_text())
    _run("keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", "ca.pem",
         "-keystore", "trust.jks", "-storetype", "JKS", "-storepass", "trustpw1", cwd=d)
    _run("keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", "ca.pem",
         "-keystore", "trust.p12", "-storetype", "PKCS12", "-storepass", "trustpw1", cwd=d)
    _run("openssl", "pkcs12", "-export", "-in", "cert.pem", "-inkey", "key.pem", "-name", "me",
         "-out", "client.p12", "-passout", "pass:storepw1", cwd=d)
    _run("keytool", "-importkeystore", "-noprompt", "-srckeystore", "client.p12",
         "-srcstoretype", "PKCS12", "-srcstorepass", "storepw1", "-destkeystore", "client.jks",
         "-deststoretype", "JKS", "-deststorepass", "storepw1", "-destkeypass", "keypass1",
         "-srcalias", "me", "-destalias", "me", cwd=d)
    return d


def _public(pem: str) -> bytes:
    return load_pem_private_key(pem.encode(), None).public_key().public_bytes(
        Encoding.DER, PublicFormat.SubjectPublicKeyInfo)


def _librdkafka_accepts(config: dict[str, Any]) -> None:
    """librdkafka parses every certificate and key of ``config`` when a client is made."""
    Producer({"bootstrap.servers": "127.0.0.1:9", **config}).flush(0)


def test_plain_and_scram_logins_come_from_the_jaas_line() -> None:
    for module, mechanism in ((PLAIN, "PLAIN"), (SCRAM, "SCRAM-SHA-512")):
        config = client_config({
            "properties.security.protocol": "SASL_PLAINTEXT",
            "properties.sasl.mechanism": mechanism,
            "properties.sasl.jaas.config": f'{module} required username="svc" '
                                           'password="p;a=s\\"s";'})
        assert config["sasl.username"] == "svc" and config["sasl.password"] == 'p;a=s"s'
        assert "sasl.jaas.config" not in config
        _librdkafka_accepts(config)
    # librdkafka's own spelling, where given, wins
    config = client_config({"sasl.jaas.config": f'{PLAIN} required username="a" password="b";',
                            "sasl.username": "mine", "sasl.password": "own"})
    assert (config["sasl.username"], config["sasl.password"]) == ("mine", "own")


def test_oauth_client_credentials_map_to_librdkafkas_oidc() -> None:
    config = client_config({
        "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.token.endpoint.url": "https://idp.example/token",
        "sasl.login.callback.handler.class":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
        "sasl.jaas.config": f'{OAUTH} required clientId="cdc" clientSecret="s3" '
                            'scope="kafka" extension_logicalCluster="lkc-1";'})
    assert {k: v for k, v in config.items() if k.startswith("sasl.oauthbearer")} == {
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.token.endpoint.url": "https://idp.example/token",
        "sasl.oauthbearer.client.id": "cdc", "sasl.oauthbearer.client.secret": "s3",
        "sasl.oauthbearer.scope": "kafka",
        "sasl.oauthbearer.extensions": "logicalCluster=lkc-1"}
    assert "sasl.login.callback.handler.class" not in config
    _librdkafka_accepts(config)


@pytest.mark.parametrize(("store", "kind", "password"), [
    ("trust.jks", "JKS", "trustpw1"), ("trust.jks", "JKS", None), ("trust.p12", "PKCS12",
                                                                   "trustpw1"),
    ("ca.pem", "PEM", None)])
def test_trust_stores_become_the_ca_certificates(stores: Path, store: str, kind: str,
                                                 password: str | None) -> None:
    props = {"security.protocol": "SSL", "ssl.truststore.location": str(stores / store),
             "ssl.truststore.type": kind}
    if password:
        props["ssl.truststore.password"] = password
    config = client_config(props)
    got = x509.load_pem_x509_certificates(config["ssl.ca.pem"].encode())
    assert got == [x509.load_pem_x509_certificate((stores / "ca.pem").read_bytes())]
    assert not any(k.startswith("ssl.truststore") for k in config)
    _librdkafka_accepts(config)


@pytest.mark.parametrize(("store", "kind"), [
    ("client.jks", "JKS"), ("client.p12", "PKCS12"), ("client.pem", "PEM")])
def test_key_stores_become_the_client_certificate_and_key(stores: Path, store: str,
                                                          kind: str) -> None:
    props = {"security.protocol": "SSL", "ssl.truststore.location": str(stores / "ca.pem"),
             "ssl.truststore.type": "PEM", "ssl.keystore.location": str(stores / store),
             "ssl.keystore.type": kind, "ssl.keystore.password": "storepw1",
             "ssl.key.password": "keypass1" if kind == "JKS" else "storepw1"}
    config = client_config(props)
    cert = x509.load_pem_x509_certificate(config["ssl.certificate.pem"].encode())
    assert cert == x509.load_pem_x509_certificate((stores / "cert.pem").read_bytes())
    assert _public(config["ssl.key.pem"]) == _public((stores / "key.pem").read_text())
    for gone in ("ssl.keystore.location", "ssl.keystore.password", "ssl.key.password"):
        assert gone not in config  # librdkafka would read the store (and fail on JKS)
    _librdkafka_accepts(config)


def test_inline_pem_settings_and_hostname_checks(stores: Path) -> None:
    config = client_config({
        "security.protocol": "SSL", "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": (stores / "ca.pem").read_text(),
        "ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain":
            (stores / "cert.pem").read_text(), "ssl.keystore.key": (stores / "key.pem").read_text(),
        "ssl.endpoint.identification.algorithm": ""})
    assert config["ssl.endpoint.identification.algorithm"] == "none"
    assert _public(config["ssl.key.pem"]) == _public((stores / "key.pem").read_text())
    _librdkafka_accepts(config)
    # librdkafka's own file settings, where given, win over the Java ones
    config = client_config({"ssl.truststore.location": str(stores / "trust.jks"),
                            "ssl.ca.location": str(stores / "ca.pem")})
    assert "ssl.ca.pem" not in config and config["ssl.ca.location"] == str(stores / "ca.pem")


def test_what_cannot_be_carried_over_is_refused_with_its_path_and_no_secret(
        stores: Path) -> None:
    sink = {
        "properties.sasl.jaas.config": 'com.sun.security.auth.module.Krb5LoginModule required '
                                       'useKeyTab=true keyTab="/k" principal="p@R";',
        "properties.ssl.keystore.location": str(stores / "client.jks"),
        "properties.ssl.keystore.password": "wrong-secret-9",
        "properties.ssl.enabled.protocols": "TLSv1.1,TLSv1.2",
        "properties.security.providers": "x.Provider"}
    with pytest.raises(ConfigError) as err:
        parse(minimal(sink=sink))
    text = str(err.value)
    assert "sink.properties.sasl.jaas.config: the login module " \
           "com.sun.security.auth.module.Krb5LoginModule has no librdkafka mapping" in text
    assert "sink.properties.ssl.keystore.location:" in text and "password" in text
    assert "sink.properties.ssl.enabled.protocols:" in text
    assert "sink.properties.security.providers:" in text
    assert "wrong-secret-9" not in text
    _, problems = librdkafka_settings({"sasl.jaas.config": f'{PLAIN} required username=a '
                                                           "password=p@ss;"})
    assert [p.name for p in problems] == ["sasl.jaas.config"]  # '@' unquoted: Java refuses
    assert "p@ss" not in problems[0].what



def test_every_reader_group_is_under_the_pipelines_prefix() -> None:
    # one prefixed GROUP ACL covers the sink group and every reader's (cdc-ingest acls)
    defn = parse(minimal(sink={"properties.bootstrap.servers": "k:9092"}))
    config = defn.kafka_config()
    prefix = defn.transactional_id_prefix + "."
    assert defn.sink_group_id.startswith(prefix)
    for role, unique in (("reader", False), ("watch", True)):
        assert reader_group(config, role, unique).startswith(prefix)
    assert reader_group(config, "watch", True) != reader_group(config, "watch", True)
    # librdkafka never sees the group base (it refuses settings it does not know)
    assert GROUP_BASE not in with_logger(config)
    _librdkafka_accepts(with_logger(config))
