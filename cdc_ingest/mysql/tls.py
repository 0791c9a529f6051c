"""TLS to MySQL as ``jdbc.properties`` asks for it (:mod:`cdc_ingest.config.jdbc`).

:class:`TlsSettings` is plain data (it travels with the connection settings to capture's
processes); :func:`pymysql_options` turns it into PyMySQL's arguments, building the
``SSLContext`` once per process. Key stores are read in memory (cdc_ingest/keystores.py): a
client key is handed to OpenSSL through an anonymous in-memory file, never written to disk.
"""

from __future__ import annotations

import functools
import ssl
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pymysql.connections

from cdc_ingest.config.jdbc import store_path
from cdc_ingest.errors import SourceError
from cdc_ingest.keystores import StoreError, identity, load_identity, trusted_certificates

if TYPE_CHECKING:
    from cdc_ingest.config.jdbc import JdbcPropertiesDef

DISABLED, PREFERRED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY = (
    "DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY")
_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


@dataclass(frozen=True)
class Store:
    """A Connector/J key store: a local file, its password, its declared type."""

    path: str
    kind: str  # PKCS12, PEM, JKS
    password: str | None = field(default=None, repr=False)
    option: str = ""  # the jdbc property that names it, for errors


@dataclass(frozen=True)
class TlsSettings:
    mode: str = PREFERRED
    trust: Store | None = None
    client: Store | None = None
    versions: tuple[str, ...] = ()

    @classmethod
    def from_properties(cls, props: JdbcPropertiesDef) -> TlsSettings:
        def store(which: str) -> Store | None:
            url = getattr(props, f"{which}CertificateKeyStoreUrl")
            if url is None:
                return None
            secret = getattr(props, f"{which}CertificateKeyStorePassword")
            kind = getattr(props, f"{which}CertificateKeyStoreType")
            return Store(store_path(url) or url, kind.value if kind else "PKCS12",
                         secret.get_secret_value() if secret else None,
                         f"jdbc.properties.{which}CertificateKeyStoreUrl")

        return cls(props.mode.value, store("trust"), store("client"), props.tls_versions)


def pymysql_options(tls: TlsSettings) -> dict[str, Any]:
    """PyMySQL's arguments for ``tls``; in ``REQUIRED`` and above PyMySQL refuses a server
    without TLS (error 2026)."""
    if tls.mode == DISABLED:
        return {"ssl_disabled": True}
    if tls.mode == PREFERRED and tls.client is None:
        return {}  # PyMySQL's own default: TLS when the server offers it, unverified
    return {"ssl": _context(tls)}


class _Connection(pymysql.connections.Connection):
    """PyMySQL's connection, whose PREFERRED mode (no TLS option given: TLS when the server
    offers it, nothing verified) gets one context per process. PyMySQL makes a new default
    context per connection for it, loading the system's CA certificates (about 50 ms of CPU
    each time) for a context that checks neither the certificate nor the host name."""

    def _create_ssl_ctx(self, sslp: Any) -> ssl.SSLContext:
        if isinstance(sslp, dict) and not sslp:
            return _unverified()
        context: ssl.SSLContext = super()._create_ssl_ctx(sslp)
        return context


def open_connection(**kwargs: Any) -> pymysql.connections.Connection:
    """``pymysql.connect(**kwargs)``: the same connection, made without PyMySQL's per-connection
    CA bundle load in PREFERRED mode (see :class:`_Connection`)."""
    return _Connection(**kwargs)


@functools.cache
def _unverified() -> ssl.SSLContext:
    """PyMySQL's PREFERRED context less the CA certificates it never uses: TLS 1.2 or newer,
    no certificate or host name check, MySQL's auto-generated certificates accepted."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.verify_flags &= ~getattr(ssl, "VERIFY_X509_STRICT", 0)
    ctx.options |= ssl.OP_NO_SSLv2 | ssl.OP_NO_SSLv3
    return ctx


@functools.cache
def _context(tls: TlsSettings) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    verify = tls.mode in (VERIFY_CA, VERIFY_IDENTITY)
    ctx.check_hostname = tls.mode == VERIFY_IDENTITY
    ctx.verify_mode = ssl.CERT_REQUIRED if verify else ssl.CERT_NONE
    # MySQL's own auto-generated certificates are not X.509-strict (as PyMySQL allows too)
    ctx.verify_flags &= ~getattr(ssl, "VERIFY_X509_STRICT", 0)
    if tls.versions:
        ctx.minimum_version = min((_VERSIONS[v] for v in tls.versions), key=lambda v: v.value)
        ctx.maximum_version = max((_VERSIONS[v] for v in tls.versions), key=lambda v: v.value)
    if verify:
        if tls.trust is None:
            ctx.load_default_certs()
        else:
            certs, _ = _read_store(tls.trust, want_key=False)
            ctx.load_verify_locations(cadata=certs)
    if tls.client is not None:
        certs, key = _read_store(tls.client, want_key=True)
        _load_client(ctx, certs + key, tls.client)
    return ctx


def _read_store(store: Store, want_key: bool) -> tuple[str, str]:
    """(PEM certificates, PEM private key or "") of a PKCS12, JKS or PEM store
    (cdc_ingest/keystores.py)."""
    try:
        if want_key:
            return identity(store.path, store.kind, store.password)
        return trusted_certificates(store.path, store.kind, store.password), ""
    except StoreError as exc:
        raise SourceError(f"{store.option}: {store.path}: {exc}") from None


def _load_client(ctx: ssl.SSLContext, pem: str, store: Store) -> None:
    try:
        load_identity(ctx, pem, "", f"{store.option}: {store.path}")
    except StoreError as exc:
        raise SourceError(str(exc)) from None


def tls_failure(exc: BaseException) -> str | None:
    """The fix for a connection that failed on TLS, or None when TLS was not the reason."""
    text = str(exc)
    if (exc.args[:1] == (2026,)) or "SSL is required" in text:  # CR_SSL_CONNECTION_ERROR
        return ("the server does not offer TLS. Fix: enable TLS on the server (ssl_cert, "
                "ssl_key), or lower jdbc.properties.sslMode")
    if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text:
        if "Hostname mismatch" in text or "IP address mismatch" in text:
            return ("the server's certificate does not name this host. Fix: connect by a "
                    "name the certificate holds, or use jdbc.properties.sslMode: VERIFY_CA")
        return ("the server's certificate does not chain to a trusted CA. Fix: put the CA "
                "that signed it in jdbc.properties.trustCertificateKeyStoreUrl")
    if "SSL" in text and ("alert" in text or "handshake" in text or "WRONG_VERSION" in text):
        return ("the TLS handshake failed. Fix: check jdbc.properties.tlsVersions and the "
                "client certificate against the server's TLS settings")
    return None
