"""librdkafka's spellings carried over to the Java client Spark's Kafka source runs
(kafka/java_client.py): the JAAS line read back by the parser held equal to Java's own
(tests/integration/test_jaas_oracle.py), the PEM trust and key stores, a PKCS#1 key encrypted
the old OpenSSL way turned into the unencrypted PKCS#8 Java's PEM key store reads, and the
Java spellings a user gives kept as they are."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from cdc_ingest.errors import ConfigError
from cdc_ingest.kafka.config import java_client_config
from cdc_ingest.kafka.jaas import parse_jaas
from tests.unit.test_config import minimal, parse
from tests.unit.test_kafka_java_settings import _run, stores  # noqa: F401 (a fixture)

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def _java(**props: str) -> dict[str, str]:
    out, problems = java_client_config({f"properties.{k}": v for k, v in props.items()})
    assert problems == []
    return out


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_librdkafka_login_becomes_the_jaas_line_java_reads_back(mechanism: str) -> None:
    password = 'p;a=s"s\\ "q" \u00e9'
    out = _java(**{"security.protocol": "SASL_SSL", "sasl.mechanisms": mechanism,
                   "sasl.username": "svc user", "sasl.password": password})
    entry = parse_jaas(out["sasl.jaas.config"])
    assert entry.module.endswith("PlainLoginModule" if mechanism == "PLAIN"
                                 else "ScramLoginModule")
    assert (entry.flag, entry.options) == ("REQUIRED", {"username": "svc user",
                                                        "password": password})
    assert out["sasl.mechanism"] == mechanism
    assert not {"sasl.username", "sasl.password", "sasl.mechanisms"} & set(out)


def test_oidc_client_credentials_become_javas_login_module_and_handler() -> None:
    out = _java(**{"sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
                   "sasl.oauthbearer.client.id": "cdc", "sasl.oauthbearer.client.secret": "s3",
                   "sasl.oauthbearer.scope": "kafka", "sasl.oauthbearer.extensions": "a=1,b=2",
                   "sasl.oauthbearer.token.endpoint.url": "https://idp/token"})
    entry = parse_jaas(out["sasl.jaas.config"])
    assert entry.module.endswith("OAuthBearerLoginModule")
    assert entry.options == {"clientId": "cdc", "clientSecret": "s3", "scope": "kafka",
                             "extension_a": "1", "extension_b": "2"}
    assert out["sasl.login.callback.handler.class"].endswith("OAuthBearerLoginCallbackHandler")
    assert out["sasl.oauthbearer.token.endpoint.url"] == "https://idp/token"
    assert not any(k.startswith("sasl.oauthbearer.client") for k in out)


def test_java_spellings_given_are_kept_as_they_are() -> None:
    jaas = f'{SCRAM} required username="a" password="b";'
    out = _java(**{"sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": jaas,
                   "sasl.username": "other", "sasl.password": "other",
                   "ssl.truststore.location": "/t.jks", "ssl.truststore.password": "tp",
                   "ssl.ca.location": "/ca.pem", "ssl.endpoint.identification.algorithm": ""})
    assert out == {"sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": jaas,
                   "ssl.truststore.location": "/t.jks", "ssl.truststore.password": "tp",
                   "ssl.endpoint.identification.algorithm": ""}


def test_pem_trust_and_identity_become_pem_stores(stores: Path) -> None:  # noqa: F811
    out = _java(**{"security.protocol": "SSL", "ssl.ca.location": str(stores / "ca.pem"),
                   "ssl.certificate.location": str(stores / "cert.pem"),
                   "ssl.key.location": str(stores / "key.pem"),
                   "ssl.endpoint.identification.algorithm": "none"})
    assert (out["ssl.truststore.type"], out["ssl.truststore.location"]) == (
        "PEM", str(stores / "ca.pem"))
    assert out["ssl.keystore.type"] == "PEM"
    assert out["ssl.keystore.certificate.chain"].strip() == (stores / "cert.pem").read_text(
        ).strip()
    assert out["ssl.keystore.key"].startswith("-----BEGIN PRIVATE KEY-----")
    assert out["ssl.endpoint.identification.algorithm"] == ""
    inline = _java(**{"ssl.ca.pem": (stores / "ca.pem").read_text()})
    assert inline["ssl.truststore.certificates"] == (stores / "ca.pem").read_text()


def test_an_old_style_encrypted_key_is_handed_over_unencrypted(stores: Path,  # noqa: F811
                                                                tmp_path: Path) -> None:
    _run("openssl", "rsa", "-in", str(stores / "key.pem"), "-traditional", "-aes128",
         "-passout", "pass:keypw-9", "-out", str(tmp_path / "old.pem"), cwd=tmp_path)
    assert "Proc-Type: 4,ENCRYPTED" in (tmp_path / "old.pem").read_text()
    out = _java(**{"ssl.certificate.location": str(stores / "cert.pem"),
                   "ssl.key.location": str(tmp_path / "old.pem"), "ssl.key.password": "keypw-9"})
    assert "ssl.key.password" not in out
    mine = load_pem_private_key(out["ssl.keystore.key"].encode(), None)
    theirs = load_pem_private_key((stores / "key.pem").read_bytes(), None)
    assert mine.private_numbers() == theirs.private_numbers()  # type: ignore[union-attr]


def test_validate_names_an_unreadable_key_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        parse(minimal(sink={"properties.ssl.certificate.location": str(tmp_path / "no.pem"),
                            "properties.ssl.key.location": str(tmp_path / "no.key")}))
    paths = [p.path for p in caught.value.problems]
    assert "sink.properties.ssl.certificate.location" in paths, paths
