"""Process plumbing shared by the local services: ports, pid files, waiting, stopping."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

from cdc_ingest.errors import CdcIngestError

log = logging.getLogger(__name__)

LOCALHOST = "127.0.0.1"

# Popen objects of the servers this interpreter started, so that stopping one reaps it
# (no zombie) and Python does not warn about a child still running at exit.
_children: dict[int, subprocess.Popen[bytes]] = {}


class ServiceError(CdcIngestError):
    """A local service could not be installed, started or stopped; the message says why."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOCALHOST, 0))
        port: int = sock.getsockname()[1]
        return port


def wait_until(
    ready: Callable[[], bool],
    *,
    timeout: float,
    what: str,
    details: Callable[[], str] = lambda: "",
    alive: Callable[[], bool] = lambda: True,
) -> None:
    """Poll ``ready`` until it returns True; fail early when ``alive`` turns False."""
    deadline = time.monotonic() + timeout
    while True:
        if ready():
            return
        if not alive():
            raise ServiceError(f"{what}: the process exited while starting.\n{details()}")
        if time.monotonic() > deadline:
            raise ServiceError(f"{what}: not ready after {timeout:.0f} s.\n{details()}")
        time.sleep(0.2)


def log_tail(path: Path, lines: int = 30) -> str:
    """The last lines of a log file, for error messages."""
    if not path.is_file():
        return f"(no log at {path})"
    text = path.read_text(errors="replace").splitlines()[-lines:]
    return f"last lines of {path}:\n" + "\n".join(text)


def read_pid(pid_file: Path) -> int | None:
    try:
        return int(pid_file.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def pid_alive(pid: int, marker: str) -> bool:
    """True when ``pid`` runs (not a zombie) and its command line contains ``marker``.

    The marker (a path under the service home) guards against a recycled pid. A child this
    interpreter started is judged by its ``Popen`` alone: its command line changes as it execs
    (``chroot`` into ``mysqld``), and for a moment in each exec the kernel shows it empty, which
    once made a healthy MySQL start look like an exit.
    """
    child = _children.get(pid)
    if child is not None:
        if child.poll() is None:
            return True
        del _children[pid]
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False
    state = stat.rsplit(")", 1)[-1].split()[0]
    return state not in {"Z", "X"} and marker.encode() in cmdline


def spawn_detached(cmd: Sequence[str], log_file: Path, cwd: Path) -> int:
    """Start a server in its own session, output appended to ``log_file``; return its pid."""
    log.debug("starting %s", " ".join(cmd))
    with log_file.open("ab") as out:
        child = subprocess.Popen(
            list(cmd),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    _children[child.pid] = child
    return child.pid


def stop_pid(pid: int, marker: str, timeout: float = 30.0) -> None:
    """SIGTERM, wait up to ``timeout`` seconds, then SIGKILL. No-op when not running."""
    if not pid_alive(pid, marker):
        return
    log.info("stopping pid %d", pid)
    _signal(pid, signal.SIGTERM)
    if not _wait_gone(pid, marker, timeout):
        log.warning("pid %d ignored SIGTERM for %.0f s; killing it", pid, timeout)
        _signal(pid, signal.SIGKILL)
        if not _wait_gone(pid, marker, 10.0):
            raise ServiceError(f"pid {pid} survived SIGKILL")
    child = _children.pop(pid, None)
    if child is not None:
        child.wait()


def _signal(pid: int, signum: int) -> None:
    with suppress(ProcessLookupError):  # it may exit between the check and the signal
        os.kill(pid, signum)


def _wait_gone(pid: int, marker: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while pid_alive(pid, marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def load_state(path: Path) -> dict[str, Any]:
    try:
        state: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    return state


def save_state(path: Path, state: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n")


def run_checked(
    cmd: Sequence[str],
    what: str,
    timeout: float,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> None:
    """Run a short command (in ``env`` if given); on failure raise with its output."""
    result = subprocess.run(
        list(cmd),
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip().splitlines()[-40:]
        raise ServiceError(
            f"{what} failed (exit {result.returncode}): {' '.join(cmd)}\n" + "\n".join(output)
        )
