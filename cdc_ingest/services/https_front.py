"""A TLS and HTTP basic-auth front for a local HTTP service: the Schema Registry as production
runs it (Apicurio 2.x's own authentication needs a Keycloak, which this machine has not).

It answers on ``https://127.0.0.1:<port>`` with the certificate it is given, refuses a request
without the right ``Authorization: Basic`` header (401, as Confluent's registry does), and
passes every other request through to the service, method, path, body and the answer's
status and body unchanged. Runs in threads of the calling process: ``start()``, ``stop()``.
"""

from __future__ import annotations

import base64
import hmac
import ssl
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

_PASSED_HEADERS = ("Content-Type", "Accept")


class HttpsFront:
    def __init__(self, backend: str, cert: Path, key: Path, user_info: str) -> None:
        self.backend = backend.rstrip("/")  # http://127.0.0.1:<port>
        self._expected = "Basic " + base64.b64encode(user_info.encode()).decode()
        self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._context.load_cert_chain(str(cert), str(key))
        self._server: ThreadingHTTPServer | None = None
        self.refused = 0  # requests without the right credentials

    @property
    def port(self) -> int:
        assert self._server is not None, "start() first"
        return int(self._server.server_address[1])

    def url(self, path: str = "") -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def start(self) -> HttpsFront:
        front = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _pass(self) -> None:
                given = self.headers.get("Authorization", "")
                if not hmac.compare_digest(given.encode(), front._expected.encode()):
                    front.refused += 1
                    self._answer(401, b'{"error_code":401,"message":"Unauthorized"}',
                                 "application/json")
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                request = urllib.request.Request(front.backend + self.path, data=body,
                                                 method=self.command)
                for name in _PASSED_HEADERS:
                    if self.headers.get(name):
                        request.add_header(name, self.headers[name])
                try:
                    with urllib.request.urlopen(request, timeout=30) as answer:
                        self._answer(answer.status, answer.read(),
                                     answer.headers.get("Content-Type"))
                except urllib.error.HTTPError as exc:
                    self._answer(exc.code, exc.read(), exc.headers.get("Content-Type"))

            def _answer(self, status: int, body: bytes, content_type: str | None) -> None:
                self.send_response(status)
                if content_type:
                    self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = _pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.socket = self._context.wrap_socket(server.socket, server_side=True)
        server.daemon_threads = True
        self._server = server
        threading.Thread(target=server.serve_forever, name="https-front", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
