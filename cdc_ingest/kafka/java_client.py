"""The Java client's settings (Spark's Kafka source reads the changelog with it) from the
pipeline's ``properties.*``: the reverse of java_settings.py, so librdkafka's spellings keep
working for every client too.

=============================================  ===============================================
librdkafka                                     Java client (when no Java spelling is given)
=============================================  ===============================================
``sasl.username`` / ``sasl.password``          ``sasl.jaas.config`` with PlainLoginModule or
                                               ScramLoginModule (by ``sasl.mechanism``)
``sasl.mechanisms``                            ``sasl.mechanism``
``sasl.oauthbearer.method: oidc``,             ``sasl.jaas.config`` OAuthBearerLoginModule
``...client.id`` / ``...client.secret`` /      ``clientId`` / ``clientSecret`` / ``scope``, the
``...scope``                                   client-credentials login callback handler
``ssl.ca.location`` / ``ssl.ca.pem``           ``ssl.truststore.type: PEM`` with its location
                                               / ``ssl.truststore.certificates``
``ssl.certificate.*`` + ``ssl.key.*`` (PEM)    ``ssl.keystore.type: PEM``, the chain and the key
                                               (PKCS#8, unencrypted) inline
``ssl.endpoint.identification.algorithm:       ``ssl.endpoint.identification.algorithm: ""``
none``
=============================================  ===============================================

The inline key never reaches a log: the sink's Spark session redacts these options
(sink/runtime/session.py ``REDACTED_OPTIONS``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from cdc_ingest.kafka.java_settings import OAUTH, PLAIN, SCRAM, Problem
from cdc_ingest.keystores import StoreError, pem_identity

# librdkafka's own settings, which the Java client would only warn about (kafka/config.py's
# LIBRDKAFKA_ONLY, and these)
_OIDC_ONLY = ("sasl.oauthbearer.method", "sasl.oauthbearer.client.id",
              "sasl.oauthbearer.client.secret", "sasl.oauthbearer.scope",
              "sasl.oauthbearer.extensions", "sasl.mechanisms")
OIDC_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"


def java_client_settings(properties: Mapping[str, str], librdkafka_only: frozenset[str]
                         ) -> tuple[dict[str, str], list[Problem]]:
    """The Java client's settings for ``properties`` (prefix dropped), and what cannot be
    carried over."""
    props = dict(properties)
    out = {k: v for k, v in props.items() if k not in librdkafka_only and k not in _OIDC_ONLY}
    problems: list[Problem] = []
    mechanism = props.get("sasl.mechanism") or props.get("sasl.mechanisms")
    if mechanism and "sasl.mechanism" not in props:
        out["sasl.mechanism"] = mechanism
    if "sasl.jaas.config" not in props:
        _login(props, (mechanism or "").upper(), out)
    if props.get("ssl.endpoint.identification.algorithm") == "none":
        out["ssl.endpoint.identification.algorithm"] = ""
    if not any(k.startswith("ssl.truststore.") for k in props):
        if "ssl.ca.pem" in props:
            out.update({"ssl.truststore.type": "PEM",
                        "ssl.truststore.certificates": props["ssl.ca.pem"]})
        elif "ssl.ca.location" in props:
            out.update({"ssl.truststore.type": "PEM",
                        "ssl.truststore.location": props["ssl.ca.location"]})
    if not any(k.startswith("ssl.keystore.") for k in props):
        _identity(props, out, problems)
    return out, problems


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _login(props: dict[str, str], mechanism: str, out: dict[str, str]) -> None:
    if "sasl.username" in props and mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        module = PLAIN if mechanism == "PLAIN" else SCRAM
        out["sasl.jaas.config"] = (
            f"{module} required username={_quoted(props['sasl.username'])} "
            f"password={_quoted(props.get('sasl.password', ''))};")
    elif mechanism == "OAUTHBEARER" and props.get("sasl.oauthbearer.method", "") == "oidc":
        options = [f"clientId={_quoted(props.get('sasl.oauthbearer.client.id', ''))}",
                   f"clientSecret={_quoted(props.get('sasl.oauthbearer.client.secret', ''))}"]
        if "sasl.oauthbearer.scope" in props:
            options.append(f"scope={_quoted(props['sasl.oauthbearer.scope'])}")
        for pair in filter(None, props.get("sasl.oauthbearer.extensions", "").split(",")):
            name, _, value = pair.partition("=")
            options.append(f"extension_{name.strip()}={_quoted(value.strip())}")
        out["sasl.jaas.config"] = f"{OAUTH} required {' '.join(options)};"
        out.setdefault("sasl.login.callback.handler.class", OIDC_HANDLER)


def _identity(props: dict[str, str], out: dict[str, str], problems: list[Problem]) -> None:
    chain = _text(props, "ssl.certificate.pem", "ssl.certificate.location", problems)
    key = _text(props, "ssl.key.pem", "ssl.key.location", problems)
    if chain is None or key is None:
        return
    try:
        certs, plain_key = pem_identity(chain, key, props.get("ssl.key.password"),
                                        "ssl.key.location")
    except StoreError as exc:
        problems.append(Problem("ssl.key.location", str(exc),
                                "give the certificate and its key as PEM"))
        return
    out.pop("ssl.key.password", None)  # the key handed over is unencrypted
    out.update({"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": certs,
                "ssl.keystore.key": plain_key})


def _text(props: dict[str, str], inline: str, location: str,
          problems: list[Problem]) -> str | None:
    if inline in props:
        return props[inline]
    if location not in props:
        return None
    try:
        return Path(props[location]).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(Problem(location, f"cannot be read: {exc.__class__.__name__}",
                                "give a PEM file this user can read"))
        return None
