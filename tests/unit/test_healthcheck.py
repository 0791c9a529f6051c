"""cdc_ingest.healthcheck (the container health check) against real HTTP servers on loopback:
healthy only while the sink and capture answer and capture reports it is connected."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from cdc_ingest import healthcheck


class _Metrics(ThreadingHTTPServer):
    body = b""


class _Handler(BaseHTTPRequestHandler):
    server: _Metrics

    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(self.server.body)

    def log_message(self, *args: object) -> None:
        pass


def _free_pair() -> int:
    """A port p with p and p + 1 both free."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        with socket.socket() as t:
            try:
                t.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise RuntimeError("no two adjacent free ports")


@pytest.fixture
def servers() -> Iterator[tuple[int, list[_Metrics]]]:
    """A sink metrics port (capture's is the next one) and the servers a test starts."""
    started: list[_Metrics] = []
    yield _free_pair(), started
    for server in started:
        server.shutdown()
        server.server_close()


def _serve(at: int, body: bytes, started: list[_Metrics]) -> _Metrics:
    server = _Metrics(("127.0.0.1", at), _Handler)
    server.body = body
    threading.Thread(target=server.serve_forever, daemon=True).start()
    started.append(server)
    return server


SINK = b"# HELP numRecordsOut records written\nnumRecordsOut_total{stage=\"sink\"} 3.0\n"
CONNECTED = b"# HELP sourceConnected 1 while capture is connected\nsourceConnected 1.0\n"
LOST = b"# HELP sourceConnected 1 while capture is connected\nsourceConnected 0.0\n"


def test_healthy_only_with_both_up_and_capture_connected(
        servers: tuple[int, list[_Metrics]]) -> None:
    port, started = servers
    healthy, found = healthcheck.check(port)
    assert not healthy and "sink's /metrics" in found and str(port) in found
    _serve(port, SINK, started)
    healthy, found = healthcheck.check(port)
    assert not healthy and "capture's /metrics" in found
    capture = _serve(port + 1, LOST, started)
    healthy, found = healthcheck.check(port)
    assert not healthy and "not connected to the database" in found
    capture.body = CONNECTED
    assert healthcheck.check(port) == (True, "healthy: the sink and capture are up, capture "
                                       "is connected to the database")


def test_exit_code_and_port_from_the_environment(servers: tuple[int, list[_Metrics]]) -> None:
    port, started = servers
    _serve(port, SINK, started)
    _serve(port + 1, CONNECTED, started)
    run = subprocess.run([sys.executable, "-m", "cdc_ingest.healthcheck"], capture_output=True,
                         text=True, env={"CDC_INGEST_HEALTHCHECK_PORT": str(port)}, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("healthy")
    bad = subprocess.run([sys.executable, "-m", "cdc_ingest.healthcheck"], capture_output=True,
                         text=True, env={"CDC_INGEST_HEALTHCHECK_PORT": "x"}, check=False)
    assert bad.returncode == 1 and "is not a port number" in bad.stderr
