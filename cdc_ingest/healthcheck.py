"""The container health check: ``python3 -m cdc_ingest.healthcheck`` exits 0 when healthy.

Healthy means what a user of ``docker compose ps`` expects: the pipeline's two processes are
up (the sink serves ``/metrics`` on ``$CDC_INGEST_HEALTHCHECK_PORT``, default 9249, which is
``pipeline.metrics.port``; capture on the port after it) and capture is connected to the
database (its ``sourceConnected`` gauge is 1: it turns 0 when the binlog connection is lost,
and stays so while capture reconnects, or is restarted, until the server answers again).

It prints one line saying what it found, which ``docker inspect`` shows in the health log.
Only the standard library is imported: Docker runs this every interval.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request

PORT_ENV = "CDC_INGEST_HEALTHCHECK_PORT"
DEFAULT_PORT = 9249
CONNECTED = "sourceConnected"
TIMEOUT_S = 4.0


def _metrics(port: int) -> str:
    url = f"http://127.0.0.1:{port}/metrics"
    with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
        return response.read().decode("utf-8", "replace")


def _gauge(text: str, name: str) -> float | None:
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0] == name:
            return float(fields[1])
    return None


def check(port: int) -> tuple[bool, str]:
    """(healthy, what was found) for a pipeline whose sink serves metrics on ``port``."""
    try:
        _metrics(port)
    except (OSError, urllib.error.URLError) as exc:
        return False, (f"unhealthy: the sink's /metrics on 127.0.0.1:{port} does not answer "
                       f"({exc}); the sink is down or starting, or pipeline.metrics.port is "
                       f"not {port} (set {PORT_ENV})")
    try:
        capture = _metrics(port + 1)
    except (OSError, urllib.error.URLError) as exc:
        return False, (f"unhealthy: capture's /metrics on 127.0.0.1:{port + 1} does not answer "
                       f"({exc}); capture is down, restarting or starting")
    connected = _gauge(capture, CONNECTED)
    if connected != 1:
        return False, ("unhealthy: capture is not connected to the database "
                       f"({CONNECTED} {connected}); its log says why and when it retries")
    return True, "healthy: the sink and capture are up, capture is connected to the database"


def main() -> int:
    raw = os.environ.get(PORT_ENV, str(DEFAULT_PORT))
    try:
        port = int(raw)
    except ValueError:
        sys.stderr.write(f"unhealthy: {PORT_ENV}={raw!r} is not a port number\n")
        return 1
    healthy, found = check(port)
    sys.stdout.write(found + "\n")
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
