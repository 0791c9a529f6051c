"""A Confluent Schema Registry REST client: the calls the avro-confluent format makes.

Any registry with Confluent's API works: Confluent's own, Apicurio's ``/apis/ccompat/v7``,
Karapace, Redpanda's. Only these calls are made (Confluent's API reference):

* ``POST /subjects/{s}`` - is this schema text already registered under the subject? (its id)
* ``POST /subjects/{s}/versions`` - register it (the registry checks the subject's
  compatibility level; 409 when it refuses)
* ``GET /subjects/{s}/versions/latest`` - the subject's latest schema
* ``GET /config/{s}``, ``GET /config`` - the subject's compatibility level
* ``GET /schemas/ids/{id}`` - a schema by id (readers: verify, watch)

Connection problems and 5xx answers are retried with backoff for up to
:data:`RETRY_SECONDS`; then :class:`RegistryUnavailable` is raised. 4xx answers are
:class:`RegistryRefused` at once. Secrets (user info, token, key password) never appear in
``repr``, messages or logs.
"""

from __future__ import annotations

import base64
import json
import logging
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdc_ingest.keystores import (
    StoreError,
    identity,
    load_identity,
    pem_identity,
    trusted_certificates,
)

log = logging.getLogger(__name__)

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
RETRY_SECONDS = 60.0  # how long a registry that is down or failing is retried
TIMEOUT_SECONDS = 30.0  # one request


class RegistryError(Exception):
    """A registry call failed; the message says which call, the answer and the fix."""


class RegistryUnavailable(RegistryError):
    """The registry could not be reached (or kept failing) for :data:`RETRY_SECONDS`."""


class RegistryRefused(RegistryError):
    """The registry answered 4xx: ``status`` and its ``error_code`` and ``message``."""

    def __init__(self, text: str, status: int, code: int | None, message: str) -> None:
        super().__init__(text)
        self.status = status
        self.code = code
        self.message = message


@dataclass(frozen=True)
class RegistryConfig:
    """How to reach one registry; picklable (sink tasks get it). ``repr`` shows no secret."""

    urls: tuple[str, ...]
    user_info: str | None = field(default=None, repr=False)  # "user:password"
    bearer_token: str | None = field(default=None, repr=False)
    ca_file: str | None = None  # the CAs to trust: PEM, JKS or PKCS12 (cdc_ingest/keystores.py)
    ca_password: str | None = field(default=None, repr=False)  # of a JKS or PKCS12 one
    # the client certificate and its key: PEM (the key in key_file when not here), JKS, PKCS12
    cert_file: str | None = None
    key_file: str | None = None
    store_password: str | None = field(default=None, repr=False)
    key_password: str | None = field(default=None, repr=False)
    retry_seconds: float = RETRY_SECONDS

    @property
    def shown_url(self) -> str:
        """The URL(s) as messages show them: without any user info."""
        return ",".join(_without_user_info(u) for u in self.urls)


def _without_user_info(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def _user_info_of(url: str) -> tuple[str, str | None]:
    """The URL without user info, and the user info it held (``user:password``)."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None:
        return url, None
    info = urllib.parse.unquote(parts.username) + ":" + urllib.parse.unquote(
        parts.password or "")
    return _without_user_info(url), info


class RegistryClient:
    """Calls on one registry (any of its URLs). Thread-safe: no state but the config."""

    def __init__(self, config: RegistryConfig) -> None:
        self.config = config
        self._urls: list[str] = []
        info = config.user_info
        for url in config.urls:
            bare, in_url = _user_info_of(url.rstrip("/"))
            self._urls.append(bare)
            info = info or in_url
        self._headers = {"Accept": CONTENT_TYPE, "Content-Type": CONTENT_TYPE}
        if info is not None:
            self._headers["Authorization"] = "Basic " + base64.b64encode(
                info.encode()).decode()
        elif config.bearer_token is not None:
            self._headers["Authorization"] = f"Bearer {config.bearer_token}"
        self._ssl = _ssl_context(config)

    def __repr__(self) -> str:
        return f"RegistryClient({self.config.shown_url})"

    # -- the calls -----------------------------------------------------------------------

    def lookup(self, subject: str, schema: str) -> int | None:
        """The id of ``schema`` when the subject already has it as a version, else None."""
        try:
            found = self._call("POST", f"/subjects/{_quote(subject)}", {"schema": schema})
        except RegistryRefused as exc:
            if exc.status == 404:  # 40401 no such subject, 40403 no such schema
                return None
            raise
        return int(found["id"])

    def register(self, subject: str, schema: str) -> int:
        """Register ``schema`` under ``subject`` (a no-op returning the id when it is
        there); :class:`RegistryRefused` with status 409 when the subject's compatibility
        level refuses it."""
        return int(self._call("POST", f"/subjects/{_quote(subject)}/versions",
                              {"schema": schema})["id"])

    def latest(self, subject: str) -> tuple[int, int, str] | None:
        """(version, id, schema text) of the subject's latest version; None without one."""
        try:
            found = self._call("GET", f"/subjects/{_quote(subject)}/versions/latest")
        except RegistryRefused as exc:
            if exc.status == 404:
                return None
            raise
        return int(found["version"]), int(found["id"]), str(found["schema"])

    def compatibility(self, subject: str) -> str:
        """The compatibility level that applies to the subject: its own, else the
        registry's (said so). Apicurio answers NONE for a subject without its own level
        while the registry's applies: that reads as the registry's too."""
        glob = str(self._call("GET", "/config").get("compatibilityLevel", "unknown"))
        if not subject:
            return glob
        try:
            found = self._call("GET", f"/config/{_quote(subject)}")
        except RegistryRefused as exc:
            if exc.status != 404:
                raise
            found = {}
        own = found.get("compatibilityLevel") or found.get("compatibility")
        if own and (own != "NONE" or glob == "NONE"):
            return str(own)
        return f"{glob} (the registry's level; the subject has none of its own)"

    def schema(self, schema_id: int) -> str:
        """The schema text of an id."""
        return str(self._call("GET", f"/schemas/ids/{schema_id}")["schema"])

    def ping(self) -> None:
        """One call that needs the registry up and the credentials right (``GET /config``)."""
        self._call("GET", "/config")

    # -- HTTP ----------------------------------------------------------------------------

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        deadline = time.monotonic() + self.config.retry_seconds
        wait = 0.25
        attempt = 0
        while True:
            url = self._urls[attempt % len(self._urls)] + path
            attempt += 1
            problem = self._once(method, url, data)
            if not isinstance(problem, str):
                return problem
            if time.monotonic() + wait > deadline or self.config.retry_seconds <= 0:
                raise RegistryUnavailable(
                    f"schema registry {self.config.shown_url}: {method} {path} failed "
                    f"({attempt} attempt(s) in {self.config.retry_seconds:.0f}s): {problem}. "
                    "Fix: start the registry or correct the avro-confluent.url option; "
                    "nothing was written without its schema")
            log.warning("schema registry %s: %s %s: %s; retrying in %.1fs",
                        self.config.shown_url, method, path, problem, wait)
            time.sleep(wait)
            wait = min(wait * 2, 8.0)

    def _once(self, method: str, url: str, data: bytes | None) -> Any:
        """The decoded answer, or (a retryable failure) its description."""
        request = urllib.request.Request(url, data=data, method=method, headers=self._headers)
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS,
                                        context=self._ssl) as answer:
                return json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as exc:
            text = exc.read().decode(errors="replace")
            if exc.code >= 500:
                return f"HTTP {exc.code} {text[:300]}"
            try:
                body = json.loads(text)
            except ValueError:
                body = {}
            code = body.get("error_code") if isinstance(body, dict) else None
            message = str(body.get("message", text) if isinstance(body, dict) else text)
            raise RegistryRefused(
                f"schema registry {_without_user_info(url)} answered {method} with HTTP "
                f"{exc.code}{f' (error {code})' if code is not None else ''}: {message[:500]}",
                exc.code, code if isinstance(code, int) else None, message) from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            return f"{type(exc).__name__}: {reason}"


def _quote(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")


def _ssl_context(config: RegistryConfig) -> ssl.SSLContext | None:
    if not any(u.lower().startswith("https:") for u in config.urls):
        return None
    try:
        if config.ca_file:
            context = ssl.create_default_context(cadata=trusted_certificates(
                config.ca_file, None, config.ca_password))
        else:
            context = ssl.create_default_context()
        if config.cert_file:
            if config.key_file:
                certs, key = pem_identity(_text(config.cert_file), _text(config.key_file),
                                          config.key_password, config.key_file)
            else:
                certs, key = identity(config.cert_file, None, config.store_password,
                                      config.key_password)
            load_identity(context, certs, key, config.cert_file)
    except StoreError as exc:
        raise RegistryError(f"the Schema Registry's TLS settings: {exc}") from None
    return context


def _text(path: str) -> str:
    try:
        return Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(f"cannot read {path} ({exc.__class__.__name__})") from None


__all__ = ["RegistryClient", "RegistryConfig", "RegistryError", "RegistryRefused",
           "RegistryUnavailable"]
