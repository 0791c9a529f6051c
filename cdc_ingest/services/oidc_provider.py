"""A minimal OAuth 2 identity provider for the secured Kafka (services/kafka_secured.py): the
client-credentials grant and a JWKS, which is what Kafka's OIDC login (librdkafka's
``sasl.oauthbearer.method: oidc``, Java's ``OAuthBearerLoginCallbackHandler``) and the
broker's ``OAuthBearerValidatorCallbackHandler`` speak.

- ``POST /token``: the client's id and secret in an ``Authorization: Basic`` header (both
  clients send them so) or in the form; answers an RS256 JWT whose ``sub`` is the client id
  (the broker's principal ``User:<client id>``), with ``iat``, ``exp`` and ``scope``;
- ``GET /jwks``: the public key the broker verifies tokens with.

Clients are ``<home>/clients.json`` (``{"<id>": "<secret>"}``), read at each request, so a
test adds one while it runs (:func:`add_client`). The key is made once and kept under
``home``. Runs as its own process (``python -m cdc_ingest.services.oidc_provider HOME
PORT``), started and stopped with the broker.
"""

from __future__ import annotations

import base64
import hmac
import json
import sys
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

KID = "cdc-ingest-test-key"
TOKEN_LIFETIME_S = 3600


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _key(home: Path) -> rsa.RSAPrivateKey:
    path = home / "signing-key.pem"
    if not path.is_file():
        home.mkdir(parents=True, exist_ok=True)
        made = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        path.write_bytes(made.private_bytes(serialization.Encoding.PEM,
                                            serialization.PrivateFormat.PKCS8,
                                            serialization.NoEncryption()))
        path.chmod(0o600)
    key = serialization.load_pem_private_key(path.read_bytes(), None)
    assert isinstance(key, rsa.RSAPrivateKey)
    return key


def add_client(home: Path, client_id: str, secret: str) -> None:
    path = home / "clients.json"
    clients = json.loads(path.read_text()) if path.is_file() else {}
    clients[client_id] = secret
    path.write_text(json.dumps(clients))


def jwks(key: rsa.RSAPrivateKey) -> dict[str, Any]:
    numbers = key.public_key().public_numbers()
    return {"keys": [{"kty": "RSA", "kid": KID, "use": "sig", "alg": "RS256",
                      "n": _b64(numbers.n.to_bytes((numbers.n.bit_length() + 7) // 8, "big")),
                      "e": _b64(numbers.e.to_bytes(3, "big"))}]}


def token(key: rsa.RSAPrivateKey, subject: str, scope: str) -> str:
    now = int(time.time())
    header = _b64(json.dumps({"alg": "RS256", "typ": "JWT", "kid": KID}).encode())
    claims = _b64(json.dumps({"sub": subject, "iat": now, "exp": now + TOKEN_LIFETIME_S,
                              "scope": scope, "iss": "cdc-ingest-test-idp"}).encode())
    signed = f"{header}.{claims}".encode()
    signature = key.sign(signed, padding.PKCS1v15(), hashes.SHA256())
    return f"{header}.{claims}.{_b64(signature)}"


def _credentials(headers: Any, form: dict[str, list[str]]) -> tuple[str, str]:
    given = headers.get("Authorization", "")
    if given.startswith("Basic "):
        pair = base64.b64decode(given[6:]).decode()
        client_id, _, secret = pair.partition(":")
        return urllib.parse.unquote_plus(client_id), urllib.parse.unquote_plus(secret)
    return form.get("client_id", [""])[0], form.get("client_secret", [""])[0]


def serve(home: Path, port: int) -> None:
    key = _key(home)

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/jwks":
                self._answer(200, jwks(key))
            else:
                self._answer(404, {"error": "not_found"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            form = urllib.parse.parse_qs(self.rfile.read(length).decode())
            if self.path.rstrip("/") != "/token" or form.get("grant_type") != [
                    "client_credentials"]:
                self._answer(400, {"error": "unsupported_grant_type"})
                return
            client_id, secret = _credentials(self.headers, form)
            path = home / "clients.json"
            clients = json.loads(path.read_text()) if path.is_file() else {}
            known = clients.get(client_id)
            if known is None or not hmac.compare_digest(known.encode(), secret.encode()):
                self._answer(401, {"error": "invalid_client"})
                return
            self._answer(200, {"access_token": token(key, client_id,
                                                     form.get("scope", [""])[0]),
                               "token_type": "bearer", "expires_in": TOKEN_LIFETIME_S})

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    serve(Path(sys.argv[1]), int(sys.argv[2]))
