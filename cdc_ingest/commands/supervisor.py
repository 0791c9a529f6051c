"""``cdc-ingest start``: capture and the sink as two child processes, supervised together.

If either child exits, the other is stopped cleanly and the exit code says which failed;
SIGTERM / Ctrl-C stops both (each finishes or aborts its open transaction) and exits 0.
"""

from __future__ import annotations

import ctypes
import logging
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from cdc_ingest.errors import (
    PURGED_FIX,
    CdcIngestError,
    ConfigError,
    PositionPurgedError,
    SchemaChangeStopped,
)
from cdc_ingest.kafka.errors import FencedError

log = logging.getLogger(__name__)

STOP_TIMEOUT_S = 60.0


class ChildFailed(CdcIngestError):
    """One stage of the pipeline exited; the other was stopped."""

    exit_code = 9


@dataclass
class _Child:
    name: str
    proc: subprocess.Popen[bytes]


def _die_with_parent() -> None:
    """In the child: get SIGTERM if the supervisor dies, even by SIGKILL (Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _spawn(name: str, config: Path, extra: list[str]) -> _Child:
    cmd = [sys.executable, "-m", "cdc_ingest.cli", name, "--config", str(config), *extra]
    log.info("starting %s: %s", name, " ".join(cmd[1:]))
    return _Child(name, subprocess.Popen(cmd, preexec_fn=_die_with_parent))  # noqa: PLW1509


def _describe(code: int) -> str:
    if code < 0:
        return f"was killed by signal {signal.Signals(-code).name}"
    return f"exited with code {code}"


def _wait_stopped(child: _Child) -> int:
    """Wait for a child already sent SIGTERM (once: a second one could land after it has
    put back the default handler while shutting down, and kill it mid-cleanup)."""
    try:
        return child.proc.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        log.error("%s did not stop within %.0fs; killing it", child.name, STOP_TIMEOUT_S)
        child.proc.kill()
        return child.proc.wait()


def next_step(child: str, code: int) -> str:
    """What to do after ``child`` exited with ``code``: it matches the child's error."""
    if code == PositionPurgedError.exit_code:
        return (f"Starting again would fail the same way: {child}'s committed position is "
                f"gone from the server's binlog. Fix: {PURGED_FIX}.")
    if code == SchemaChangeStopped.exit_code:
        return (f"Starting again would stop at the same schema change: {child}'s error above "
                "says what changed and how to go on.")
    if code == ConfigError.exit_code:
        return "Correct the pipeline file as the errors above say, then start again."
    if code == FencedError.exit_code:
        return (f"Another {child} of this pipeline took over; run one `cdc-ingest start` per "
                "pipeline.name.")
    return (f"Fix what {child} reported and run `cdc-ingest start` again: it resumes from the "
            "committed positions.")


def run_start(config: Path, sink_args: list[str] | None = None) -> None:
    """Run capture and sink until one exits or a stop signal arrives."""
    stopping = False

    def request_stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        log.info("stop requested (signal %s): stopping capture and sink", signum)
        stopping = True

    previous = {s: signal.signal(s, request_stop) for s in (signal.SIGTERM, signal.SIGINT)}
    children = [_spawn("capture", config, []), _spawn("sink", config, sink_args or [])]
    try:
        failed: _Child | None = None
        while not stopping and failed is None:
            time.sleep(0.2)
            failed = next((c for c in children if c.proc.poll() is not None), None)
        for child in children:  # ask both at once, then wait for each
            if child.proc.poll() is None:
                child.proc.send_signal(signal.SIGTERM)
        codes = {c.name: _wait_stopped(c) for c in children}
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if failed is not None:
        others = ", ".join(f"{n} exited {c}" for n, c in codes.items() if n != failed.name)
        code = codes[failed.name]
        said = " (its error is above)" if code > 0 else ""
        raise ChildFailed(
            f"{failed.name} {_describe(code)}{said}, so the pipeline stopped ({others} after "
            f"being asked to stop). {next_step(failed.name, code)}"
        )
    bad = {n: c for n, c in codes.items() if c != 0}
    if bad:
        raise ChildFailed(f"stopped, but not cleanly: {bad}")
    log.info("capture and sink stopped cleanly")
