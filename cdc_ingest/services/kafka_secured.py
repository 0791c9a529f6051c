"""A single-node Kafka as production runs it, for tests and trying things: TLS, SASL logins,
client certificates and an authorizer, from the same Maven Central jars as
:class:`~cdc_ingest.services.kafka.KafkaBroker`.

Listeners (all on 127.0.0.1):

- ``SASL_SSL`` (:attr:`SecuredKafkaBroker.sasl_bootstrap`): SCRAM-SHA-512, SCRAM-SHA-256
  (users added with :meth:`add_scram_user`), PLAIN (``plain-user`` / ``plain-secret``) and
  OAUTHBEARER with tokens of a local identity provider (services/oidc_provider.py; clients
  added with :meth:`add_oauth_client`, their token endpoint :attr:`token_endpoint`);
- ``SSL`` (:attr:`ssl_bootstrap`): a client certificate is required; its CN is the principal
  (:meth:`client_identity` makes one signed by the broker's CA);
- ``PLAINTEXT`` (:attr:`bootstrap`): the harness's own door (readiness, adding users and ACLs,
  reading topics back), whose ANONYMOUS principal is the one super user. Clients under test
  never use it.

The StandardAuthorizer runs with ``allow.everyone.if.no.acl.found=false``: a principal may do
exactly what its ACLs allow (:meth:`allow`). The CA, the broker's key store (PKCS12) and
client trust stores (JKS with password ``trust-pass``, PKCS12, PEM) are made once with openssl
and the JDK's keytool under ``home/tls``.
"""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
from pathlib import Path

from cdc_ingest.kafka.acl_admin import Grant, add_scram_user, create_acls
from cdc_ingest.services import oidc_provider
from cdc_ingest.services._process import (
    LOCALHOST,
    free_port,
    log_tail,
    pid_alive,
    read_pid,
    spawn_detached,
    stop_pid,
    wait_until,
)
from cdc_ingest.services.kafka import KafkaBroker, _require

log = logging.getLogger(__name__)

TRUST_PASS = "trust-pass"
STORE_PASS = "store-pass"
KEY_PASS = "key-pass1"
PLAIN_USER, PLAIN_SECRET = "plain-user", "plain-secret"


def _run(args: list[str], cwd: Path) -> None:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:3])}... failed: {done.stderr[-500:]}")


class SecuredKafkaBroker(KafkaBroker):
    """See the module's docstring."""

    def __init__(self, home: Path) -> None:
        super().__init__(home)
        ports = self._ports_file.read_text() if self._ports_file.is_file() else "{}"
        saved = json.loads(ports)
        self.sasl_port: int = saved.get("sasl") or free_port()
        self.ssl_port: int = saved.get("ssl") or free_port()
        self.oidc_port: int = saved.get("oidc") or free_port()

    @property
    def _ports_file(self) -> Path:
        return self.home / "secured-ports.json"

    @property
    def tls(self) -> Path:
        return self.home / "tls"

    @property
    def _oidc_home(self) -> Path:
        return self.home / "oidc"

    @property
    def token_endpoint(self) -> str:
        return f"http://{LOCALHOST}:{self.oidc_port}/token"

    @property
    def _jwks_endpoint(self) -> str:
        return f"http://{LOCALHOST}:{self.oidc_port}/jwks"

    def add_oauth_client(self, client_id: str, secret: str) -> None:
        """A client of the identity provider; its tokens' principal is ``User:<client_id>``."""
        oidc_provider.add_client(self._oidc_home, client_id, secret)

    def start(self) -> None:
        """The identity provider first: the broker reads its keys when it starts."""
        self._start_oidc()
        super().start()

    def stop(self, wipe: bool = False) -> None:
        super().stop(wipe=False)
        pid = read_pid(self._oidc_home / "pid")
        if pid is not None:
            stop_pid(pid, oidc_provider.__name__)
        if wipe:
            super().stop(wipe=True)

    def _start_oidc(self) -> None:
        home = self._oidc_home
        home.mkdir(parents=True, exist_ok=True)
        pid = read_pid(home / "pid")
        if pid is None or not pid_alive(pid, oidc_provider.__name__):
            self._save_ports()
            pid = spawn_detached([sys.executable, "-m", oidc_provider.__name__, str(home),
                                  str(self.oidc_port)], home / "oidc.out", home)
            (home / "pid").write_text(f"{pid}\n")

        def answering() -> bool:
            try:
                socket.create_connection((LOCALHOST, self.oidc_port), 0.5).close()
                return True
            except OSError:
                return False
        wait_until(answering, timeout=30, what="the identity provider",
                   details=lambda: log_tail(home / "oidc.out"))

    def _save_ports(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self._ports_file.write_text(json.dumps({"sasl": self.sasl_port, "ssl": self.ssl_port,
                                                "oidc": self.oidc_port}))

    def _java(self, libs: Path, main: str, *args: str) -> list[str]:
        command = super()._java(libs, main, *args)
        allowed = f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={self._jwks_endpoint}"
        return [command[0], allowed, *command[1:]]

    @property
    def sasl_bootstrap(self) -> str:
        return f"{LOCALHOST}:{self.sasl_port}"

    @property
    def ssl_bootstrap(self) -> str:
        return f"{LOCALHOST}:{self.ssl_port}"

    def _write_config(self) -> None:
        super()._write_config()
        self._save_ports()
        self._make_tls()
        p, c, tls = self.port, int(self._controller_port or 0), self.tls
        scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        extra = {
            "listeners": f"PLAINTEXT://{LOCALHOST}:{p},SASL_SSL://{LOCALHOST}:{self.sasl_port},"
                         f"SSL://{LOCALHOST}:{self.ssl_port},CONTROLLER://{LOCALHOST}:{c}",
            "advertised.listeners": f"PLAINTEXT://{LOCALHOST}:{p},"
                                    f"SASL_SSL://{LOCALHOST}:{self.sasl_port},"
                                    f"SSL://{LOCALHOST}:{self.ssl_port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,"
                                              "SASL_SSL:SASL_SSL,SSL:SSL",
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(tls / "broker.p12"),
            "ssl.keystore.password": STORE_PASS,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(tls / "ca.pem"),
            "listener.name.ssl.ssl.client.auth": "required",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN,OAUTHBEARER",
            "listener.name.sasl_ssl.oauthbearer.sasl.jaas.config":
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
            "listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class":
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
            "sasl.oauthbearer.jwks.endpoint.url": self._jwks_endpoint,
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": scram,
            "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": scram,
            "listener.name.sasl_ssl.plain.sasl.jaas.config":
                "org.apache.kafka.common.security.plain.PlainLoginModule required "
                f'user_{PLAIN_USER}="{PLAIN_SECRET}";',
            "ssl.principal.mapping.rules": "RULE:^CN=([^,]+).*$/$1/,DEFAULT",
            "authorizer.class.name":
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:ANONYMOUS",
            "allow.everyone.if.no.acl.found": "false",
        }
        lines = [line for line in self.config_file.read_text().splitlines()
                 if line.split("=", 1)[0] not in extra]
        self.config_file.write_text("\n".join(lines + [f"{k}={v}" for k, v in extra.items()])
                                    + "\n")

    def _make_tls(self) -> None:
        tls = self.tls
        if (tls / "broker.p12").is_file():
            return
        _require("openssl", "openssl")
        _require("keytool", "default-jdk-headless")
        tls.mkdir(parents=True, exist_ok=True)
        tls.chmod(0o700)
        _run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
              "-out", "ca.pem", "-days", "30", "-subj", "/CN=cdc-ingest-test-ca"], tls)
        self._signed("broker", "subjectAltName=IP:127.0.0.1,DNS:localhost")
        _run(["openssl", "pkcs12", "-export", "-in", "broker.pem", "-inkey", "broker.key",
              "-name", "broker", "-out", "broker.p12", "-passout", f"pass:{STORE_PASS}"], tls)
        _run(["keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", "ca.pem",
              "-keystore", "truststore.jks", "-storetype", "JKS", "-storepass", TRUST_PASS],
             tls)
        _run(["keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", "ca.pem",
              "-keystore", "truststore.p12", "-storetype", "PKCS12", "-storepass", TRUST_PASS],
             tls)

    def _signed(self, name: str, extension: str | None = None) -> None:
        tls = self.tls
        _run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key",
              "-out", f"{name}.csr", "-subj", f"/CN={name}"], tls)
        ext: list[str] = []
        if extension:
            (tls / f"{name}.ext").write_text(extension + "\n")
            ext = ["-extfile", f"{name}.ext"]
        _run(["openssl", "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey",
              "ca.key", "-CAcreateserial", "-out", f"{name}.pem", "-days", "30", *ext], tls)

    def client_identity(self, name: str) -> dict[str, Path]:
        """A client certificate with CN ``name`` (the principal ``User:<name>``) signed by the
        broker's CA, in the stores Java users keep one in: ``jks`` (store password
        STORE_PASS, key password KEY_PASS), ``p12`` (STORE_PASS), ``pem`` (certificate then
        unencrypted key)."""
        tls = self.tls
        if not (tls / f"{name}.jks").is_file():
            self._signed(name)
            _run(["openssl", "pkcs12", "-export", "-in", f"{name}.pem", "-inkey", f"{name}.key",
                  "-name", name, "-out", f"{name}.p12", "-passout", f"pass:{STORE_PASS}"], tls)
            _run(["keytool", "-importkeystore", "-noprompt", "-srckeystore", f"{name}.p12",
                  "-srcstoretype", "PKCS12", "-srcstorepass", STORE_PASS, "-srcalias", name,
                  "-destkeystore", f"{name}.jks", "-deststoretype", "JKS", "-deststorepass",
                  STORE_PASS, "-destkeypass", KEY_PASS, "-destalias", name], tls)
            (tls / f"{name}-bundle.pem").write_text(
                (tls / f"{name}.pem").read_text() + (tls / f"{name}.key").read_text())
        return {"jks": tls / f"{name}.jks", "p12": tls / f"{name}.p12",
                "pem": tls / f"{name}-bundle.pem"}

    def add_scram_user(self, user: str, password: str,
                       mechanism: str = "SCRAM-SHA-512") -> None:
        add_scram_user({"bootstrap.servers": self.bootstrap}, user, password, mechanism)

    def allow(self, principal: str, grants: list[Grant]) -> None:
        """ACLs for ``principal`` (``User:<name>``): ``(resource type, pattern type, name,
        operation)`` each, e.g. ``("TOPIC", "PREFIXED", "cdc-ingest.shop.", "ALL")``."""
        create_acls({"bootstrap.servers": self.bootstrap}, principal, grants)
