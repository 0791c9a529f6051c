"""Liveness of the local services' processes (pure process plumbing, no server)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from cdc_ingest.services._process import pid_alive, spawn_detached, stop_pid

MARKER = "--cdc-ingest-test-marker"


def test_an_own_child_that_execs_into_another_command_line_stays_alive(tmp_path: Path) -> None:
    # As `chroot <root> mysqld ...` does: the command line seen at spawn is replaced by the
    # exec; the child this interpreter started is still the same, running process.
    pid = spawn_detached(["sh", "-c", "exec sleep 30", MARKER], tmp_path / "out.log",
                         cwd=tmp_path)
    try:
        deadline = time.monotonic() + 5
        while MARKER.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
            assert time.monotonic() < deadline, "sh never exec'd sleep"
            time.sleep(0.01)
        assert pid_alive(pid, MARKER)
    finally:
        stop_pid(pid, MARKER, timeout=5)
    assert not pid_alive(pid, MARKER)


def test_a_foreign_pid_needs_the_marker_on_its_command_line() -> None:
    assert not pid_alive(os.getpid(), MARKER)  # e.g. a recycled pid from a stale pid file
    assert pid_alive(os.getpid(), "pytest") or pid_alive(os.getpid(), "python")
