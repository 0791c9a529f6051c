"""Kafka security settings spelled for the Java client (as Flink users write them) turned into
librdkafka's, so one set of ``properties.*`` serves every client of a pipeline.

=============================================  ===============================================
Java client                                    librdkafka
=============================================  ===============================================
``sasl.jaas.config`` PlainLoginModule /        ``sasl.username`` / ``sasl.password``
ScramLoginModule ``username`` / ``password``
``sasl.jaas.config`` OAuthBearerLoginModule    ``sasl.oauthbearer.method: oidc``, ``...client.id``,
``clientId`` / ``clientSecret`` / ``scope`` /  ``...client.secret``, ``...scope``,
``extension_<name>``, with                     ``...extensions``, ``...token.endpoint.url``
``sasl.oauthbearer.token.endpoint.url``
``ssl.truststore.location`` / ``.type`` /      ``ssl.ca.pem`` (JKS, PKCS12 and PEM read by
``.password``; ``ssl.truststore.certificates``  cdc_ingest/keystores.py, in memory)
``ssl.keystore.location`` / ``.type`` /        ``ssl.certificate.pem`` / ``ssl.key.pem``
``.password``, ``ssl.key.password``;
``ssl.keystore.certificate.chain`` / ``.key``
``ssl.endpoint.identification.algorithm: ""``  ``ssl.endpoint.identification.algorithm: none``
=============================================  ===============================================

``security.protocol``, ``sasl.mechanism``, ``sasl.kerberos.service.name`` and the others both
clients know pass through as they are. A librdkafka spelling the user gives wins over the one
derived here. What cannot be carried over exactly is a :class:`Problem` (``validate`` lists them
with their YAML path and the fix), never silently dropped: other login modules (Kerberos'
``Krb5LoginModule`` included), custom callback handlers and providers, TLS versions below 1.2.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

from cdc_ingest.kafka.jaas import JaasError, parse_jaas
from cdc_ingest.keystores import StoreError, identity, pem_identity, trusted_certificates

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTH = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
# the client-credentials login handler, by the names Kafka releases have given it
OIDC_HANDLERS = frozenset({
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
})
# Java settings whose default values are OpenSSL's behaviour too; other values are refused
_DEFAULTS_ONLY = {
    "ssl.keymanager.algorithm": {"SunX509", "PKIX"},
    "ssl.trustmanager.algorithm": {"PKIX", "SunX509"},
    "ssl.protocol": {"TLS", "TLSv1.2", "TLSv1.3"},
}
_REFUSED = {
    "sasl.client.callback.handler.class": "librdkafka has no Java callback handlers",
    "security.providers": "librdkafka has no Java security providers",
    "ssl.provider": "librdkafka uses OpenSSL",
    "ssl.secure.random.implementation": "librdkafka uses OpenSSL's random numbers",
    "ssl.engine.factory.class": "librdkafka uses OpenSSL",
}


@dataclass(frozen=True)
class Problem:
    """A ``properties.<name>`` that cannot be carried over: what, and what to write instead."""

    name: str
    what: str
    fix: str


def librdkafka_settings(properties: Mapping[str, str]) -> tuple[dict[str, str], list[Problem]]:
    """The librdkafka settings the Java-spelled ``properties`` (prefix dropped) mean, and
    what cannot be carried over. Secrets in the result are the caller's to keep masked."""
    return _cached(tuple(sorted(properties.items())))


@functools.lru_cache(maxsize=8)
def _cached(items: tuple[tuple[str, str], ...]) -> tuple[dict[str, str], list[Problem]]:
    props = dict(items)
    out: dict[str, str] = {}
    problems: list[Problem] = []
    _sasl(props, out, problems)
    _trust(props, out, problems)
    _key(props, out, problems)
    if props.get("ssl.endpoint.identification.algorithm") == "":
        out["ssl.endpoint.identification.algorithm"] = "none"
    for name, allowed in _DEFAULTS_ONLY.items():
        if name in props and props[name] not in allowed:
            problems.append(Problem(name, f"{props[name]!r} has no librdkafka equivalent",
                                    f"remove it (OpenSSL's default is {sorted(allowed)[0]})"))
    protocols = {p.strip() for p in props.get("ssl.enabled.protocols", "").split(",") if p}
    if protocols - {"TLSv1.2", "TLSv1.3"}:
        problems.append(Problem("ssl.enabled.protocols", "TLS versions below 1.2 are not "
                                "offered by librdkafka's OpenSSL", "enable TLSv1.2,TLSv1.3"))
    for name, why in _REFUSED.items():
        if name in props:
            problems.append(Problem(name, why, "remove it"))
    return out, problems


def _sasl(props: dict[str, str], out: dict[str, str], problems: list[Problem]) -> None:
    jaas = props.get("sasl.jaas.config")
    handler = props.get("sasl.login.callback.handler.class")
    if handler is not None and handler not in OIDC_HANDLERS:
        problems.append(Problem("sasl.login.callback.handler.class", f"{handler} is not "
                                "Kafka's OAuth client-credentials handler", "remove it, or "
                                "use OAuthBearerLoginCallbackHandler with OAUTHBEARER"))
    if jaas is None:
        return
    try:
        entry = parse_jaas(jaas)
    except JaasError as exc:
        problems.append(Problem("sasl.jaas.config", f"the Java client would refuse it: {exc}",
                                "write: <LoginModule class> required <name>=\"<value>\" ...;"))
        return
    options = entry.options
    if entry.module in (PLAIN, SCRAM):
        if "username" not in options or "password" not in options:
            problems.append(Problem("sasl.jaas.config", f"{entry.module} needs username and "
                                    "password", 'add username="..." password="..."'))
            return
        out["sasl.username"], out["sasl.password"] = options["username"], options["password"]
        return
    if entry.module == OAUTH:
        _oauth(props, options, out, problems)
        return
    problems.append(Problem("sasl.jaas.config", f"the login module {entry.module} has no "
                            "librdkafka mapping (PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER do)",
                            "give librdkafka's own settings (sasl.kerberos.* for GSSAPI)"))


def _oauth(props: dict[str, str], options: dict[str, str], out: dict[str, str],
           problems: list[Problem]) -> None:
    url = props.get("sasl.oauthbearer.token.endpoint.url")
    if url is None:
        problems.append(Problem(
            "sasl.jaas.config", "OAUTHBEARER without sasl.oauthbearer.token.endpoint.url is "
            "the unsecured test login, which librdkafka spells otherwise",
            "set sasl.oauthbearer.token.endpoint.url (OIDC client credentials), or give "
            "librdkafka's sasl.oauthbearer.config"))
        return
    if "clientId" not in options or "clientSecret" not in options:
        problems.append(Problem("sasl.jaas.config", "OAUTHBEARER needs clientId and "
                                "clientSecret", 'add clientId="..." clientSecret="..."'))
        return
    out["sasl.oauthbearer.method"] = "oidc"
    out["sasl.oauthbearer.token.endpoint.url"] = url
    out["sasl.oauthbearer.client.id"] = options["clientId"]
    out["sasl.oauthbearer.client.secret"] = options["clientSecret"]
    scope = options.get("scope", props.get("sasl.oauthbearer.scope"))
    if scope:
        out["sasl.oauthbearer.scope"] = scope
    extensions = [f"{k.removeprefix('extension_')}={v}" for k, v in sorted(options.items())
                  if k.startswith("extension_")]
    if extensions:
        out["sasl.oauthbearer.extensions"] = ",".join(extensions)


def _trust(props: dict[str, str], out: dict[str, str], problems: list[Problem]) -> None:
    inline = props.get("ssl.truststore.certificates")
    location = props.get("ssl.truststore.location")
    try:
        if inline is not None:
            out["ssl.ca.pem"] = inline
        elif location is not None:
            out["ssl.ca.pem"] = trusted_certificates(
                location, props.get("ssl.truststore.type", "JKS"),
                props.get("ssl.truststore.password"))
    except StoreError as exc:
        problems.append(Problem("ssl.truststore.location", f"{location}: {exc}",
                                "give the trust store Java would read"))


def _key(props: dict[str, str], out: dict[str, str], problems: list[Problem]) -> None:
    chain, key = props.get("ssl.keystore.certificate.chain"), props.get("ssl.keystore.key")
    location = props.get("ssl.keystore.location")
    try:
        if chain is not None or key is not None:
            if chain is None or key is None:
                problems.append(Problem("ssl.keystore.key", "a PEM client identity needs "
                                        "both ssl.keystore.certificate.chain and "
                                        "ssl.keystore.key", "give both"))
                return
            found = pem_identity(chain, key, props.get("ssl.key.password"),
                                 "ssl.keystore.key")
        elif location is not None:
            found = identity(location, props.get("ssl.keystore.type", "JKS"),
                             props.get("ssl.keystore.password"), props.get("ssl.key.password"))
        else:
            return
    except StoreError as exc:
        problems.append(Problem("ssl.keystore.location", f"{location or 'the PEM key'}: {exc}",
                                "give the key store Java would read"))
        return
    out["ssl.certificate.pem"], out["ssl.key.pem"] = found
