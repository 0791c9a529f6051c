"""``source.jdbc.properties.*``: the MySQL Connector/J properties Flink CDC users set.

Flink CDC hands ``jdbc.properties.*`` to MySQL Connector/J. cdc-ingest speaks the protocol
itself (PyMySQL), so it maps what matters here, TLS, with Connector/J's meaning:

- ``sslMode`` ``DISABLED`` / ``PREFERRED`` / ``REQUIRED`` / ``VERIFY_CA`` / ``VERIFY_IDENTITY``,
  or the older ``useSSL`` / ``requireSSL`` / ``verifyServerCertificate``, combined as
  Connector/J combines them;
- the trust store (``trustCertificateKeyStoreUrl`` / ``Password`` / ``Type``) that holds the
  CA certificates, and the client key store (``clientCertificateKeyStore*``) for X.509 logins:
  PKCS12 files as Java writes them, or PEM files; a JKS file is refused with the ``keytool``
  command that converts it;
- ``tlsVersions`` (old name ``enabledTLSProtocols``).

Properties that change nothing here are accepted with a warning each
(:mod:`cdc_ingest.config.ignored`); any other property is refused, so a misspelt TLS
setting can never leave a connection unencrypted in silence.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, Field, SecretStr, model_validator

from cdc_ingest.config.problems import Found, problem, raise_problems
from cdc_ingest.config.types import ConfigModel, choice

PREFIX = "jdbc.properties."


class SslMode(StrEnum):
    DISABLED = "DISABLED"
    PREFERRED = "PREFERRED"
    REQUIRED = "REQUIRED"
    VERIFY_CA = "VERIFY_CA"
    VERIFY_IDENTITY = "VERIFY_IDENTITY"


class StoreType(StrEnum):
    PKCS12 = "PKCS12"
    JKS = "JKS"
    PEM = "PEM"


_TLS_VERSIONS = ("TLSv1.2", "TLSv1.3")


def _versions(text: str) -> str:
    bad = [v.strip() for v in text.split(",") if v.strip() and v.strip() not in _TLS_VERSIONS]
    if bad:
        raise problem(f"has unsupported TLS versions {bad}",
                      f"use {' and/or '.join(_TLS_VERSIONS)}, comma-separated")
    return text


def _local(url: str) -> str:
    if not store_path(url):
        raise problem("is not a local file URL", "use file:/path/to/store.p12 (or a plain "
                      "path); cdc-ingest reads stores from local files only")
    return url


SslModeOption = Annotated[SslMode, choice(SslMode)]
StoreTypeOption = Annotated[StoreType, choice(StoreType)]
TlsVersions = Annotated[str, AfterValidator(_versions)]
StoreUrl = Annotated[str, AfterValidator(_local)]


def _flag(description: str) -> Any:
    return Field(None, description=description)


class JdbcPropertiesDef(ConfigModel):
    """The Connector/J properties cdc-ingest acts on (all optional; Connector/J's names)."""

    sslMode: SslModeOption | None = Field(
        None, description="`DISABLED`, `PREFERRED` (PyMySQL's and Connector/J's default: TLS "
        "when the server offers it, unverified), `REQUIRED` (TLS or no connection), "
        "`VERIFY_CA` (and the server's certificate must chain to the trust store), "
        "`VERIFY_IDENTITY` (and name the host)")
    useSSL: bool | None = _flag("old spelling: `false` = `sslMode: DISABLED`")
    requireSSL: bool | None = _flag("old spelling: `true` = `REQUIRED`")
    verifyServerCertificate: bool | None = _flag(
        "old spelling: `true` = `VERIFY_CA`")
    trustCertificateKeyStoreUrl: StoreUrl | None = Field(
        None, description="`file:/path` (or a path) of the CA certificates: PKCS12 or PEM; "
        "without it `VERIFY_*` use the system's CAs")
    trustCertificateKeyStorePassword: SecretStr | None = _flag(
        "the trust store's password (never shown)")
    trustCertificateKeyStoreType: StoreTypeOption | None = _flag(
        "`PKCS12` (default) or `PEM`; `JKS` is refused with the command that converts it")
    clientCertificateKeyStoreUrl: StoreUrl | None = _flag(
        "`file:/path` of this client's key and certificate (PKCS12 or PEM), for users "
        "created `REQUIRE X509`")
    clientCertificateKeyStorePassword: SecretStr | None = _flag(
        "the client key store's password (never shown)")
    clientCertificateKeyStoreType: StoreTypeOption | None = _flag(
        "`PKCS12` (default) or `PEM`")
    tlsVersions: TlsVersions | None = _flag(
        "comma-separated TLS versions allowed: `TLSv1.2`, `TLSv1.3`")
    enabledTLSProtocols: TlsVersions | None = _flag("old name of `tlsVersions`")

    @property
    def mode(self) -> SslMode:
        """The TLS mode, combined from the old properties as Connector/J 8+ combines them."""
        if self.sslMode is not None:
            return self.sslMode
        if self.useSSL is False:
            return SslMode.DISABLED
        if self.verifyServerCertificate:
            return SslMode.VERIFY_CA
        if self.requireSSL:
            return SslMode.REQUIRED
        return SslMode.PREFERRED

    @property
    def tls_versions(self) -> tuple[str, ...]:
        text = self.tlsVersions or self.enabledTLSProtocols or ""
        return tuple(v.strip() for v in text.split(",") if v.strip())

    @model_validator(mode="after")
    def _fits_together(self) -> JdbcPropertiesDef:
        found: Found = []
        if self.tls_versions and self.mode in (SslMode.DISABLED, SslMode.PREFERRED):
            found.append((("tlsVersions",), f"has no effect with sslMode {self.mode.value}",
                          "set sslMode: REQUIRED, VERIFY_CA or VERIFY_IDENTITY"))
        raise_problems("jdbc.properties", found)
        return self


def store_path(url: str) -> str | None:
    """The local path of a Connector/J store URL (``file:/p``, ``file:///p``, or a path)."""
    if url.startswith("file://"):
        rest = url[len("file://"):]
        return rest if rest.startswith("/") else None  # file://host/... is not local
    if url.startswith("file:"):
        return url[len("file:"):] or None
    return None if ":" in url.split("/", 1)[0] else url


def gather(data: dict[Any, Any]) -> dict[Any, Any]:
    """Fold the flat ``jdbc.properties.<name>`` keys of a source section into one mapping."""
    flat = {str(k)[len(PREFIX):]: v for k, v in data.items() if str(k).startswith(PREFIX)}
    if not flat:
        return data
    rest = {k: v for k, v in data.items() if not str(k).startswith(PREFIX)}
    return {**rest, "jdbc.properties": flat}
