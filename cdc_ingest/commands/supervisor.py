"""``cdc-ingest start``: capture and the sink as two child processes, supervised together.

A child that exits for a transient reason (``exit_codes.TRANSIENT``: MySQL or Kafka away for
a while, a Kafka transaction timed out while the process was frozen) is started again with
backoff, and resumes from its committed position. If a child exits for any other reason, the
other is stopped cleanly and ``start`` exits ``exit_codes.CHILD_FAILED``; SIGTERM / Ctrl-C
stops both (each finishes or aborts its open transaction) and exits 0.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from cdc_ingest import exit_codes
from cdc_ingest.errors import (
    PURGED_FIX,
    TRANSIENT_EXIT_CODE,
    CdcIngestError,
    ConfigError,
    PositionPurgedError,
    SchemaChangeStopped,
)
from cdc_ingest.kafka.errors import FencedError

log = logging.getLogger(__name__)

STOP_TIMEOUT_S = 60.0
MAX_RESTART_DELAY_S = 30.0
HEALTHY_S = 120.0  # a child that ran this long starts its restart backoff over


class ChildFailed(CdcIngestError):
    """One stage of the pipeline exited; the other was stopped."""

    exit_code = exit_codes.CHILD_FAILED


@dataclass
class _Child:
    name: str
    proc: subprocess.Popen[bytes]
    started: float = field(default_factory=time.monotonic)


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
    # Each child leads a process group of its own (the sink's Spark JVM and Python workers
    # join it), so a signal to start's whole group (`kill %1`, `timeout`, Ctrl-C,
    # supervisord's stopasgroup) reaches start alone, which stops capture and the sink in
    # order; one that reached the JVM directly would kill it under the sink's running query.
    return _Child(name, subprocess.Popen(cmd, preexec_fn=_die_with_parent,  # noqa: PLW1509
                                         process_group=0,
                                         env={**os.environ, "CDC_INGEST_STAGE": name}))


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


def restart_delay(restarts: int) -> float:
    """Seconds before restart number ``restarts`` (1, 2, ...) of a child: 1, 2, 4 ... 30."""
    return float(min(2 ** (restarts - 1), MAX_RESTART_DELAY_S))


def start_sink_first(config: Path, sink_args: list[str]) -> _Child:
    """Spawn the sink now, before ``start`` has read the pipeline file itself: the sink is the
    slower of the two to start (Spark's JVM), so it starts while ``start`` checks the file.
    Returns what :func:`run_start` takes as ``sink``; :func:`discard` it if the check fails."""
    return _spawn("sink", config, sink_args)


def discard(sink: _Child) -> None:
    """Kill a sink spawned by :func:`start_sink_first` whose pipeline file turned out wrong,
    with its process group (its JVM), before it says the same: ``start`` reports the errors."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(sink.proc.pid, signal.SIGKILL)
    sink.proc.wait()


def run_start(config: Path, sink_args: list[str] | None = None,
              received: list[int] | None = None,
              sink: _Child | None = None) -> None:
    """Run capture and sink until one fails for good or a stop signal arrives; a child that
    exits with :data:`TRANSIENT_EXIT_CODE` (MySQL or Kafka away for a while, a transaction
    Kafka timed out) is started again, with backoff, while the other runs on.

    ``received``: stop signals that arrived before this was called (``cli.hold_stop_signals``);
    looked at once this call's own handlers are in place, so none is lost."""
    stopping = False

    def request_stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        log.info("stop requested (signal %s): stopping capture and sink", signum)
        stopping = True

    previous = {s: signal.signal(s, request_stop) for s in (signal.SIGTERM, signal.SIGINT)}
    if received:
        log.info("stop requested (signal %d) while start was starting: stopping before it "
                 "started capture and the sink", received[0])
        if sink is not None:  # spawned already: it stops as asked, before it does anything
            sink.proc.send_signal(signal.SIGTERM)
            _wait_stopped(sink)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        return
    extra: dict[str, list[str]] = {"capture": [], "sink": sink_args or []}
    children = [sink if sink is not None and name == "sink" else _spawn(name, config, args)
                for name, args in extra.items()]
    restarts: dict[str, int] = {}  # transient exits in a row, per child
    try:
        failed: _Child | None = None
        pending: dict[str, float] = {}  # child -> when to start it again
        while not stopping and failed is None:
            time.sleep(0.2)
            for i, child in enumerate(children):
                if child.name in pending:
                    if time.monotonic() >= pending[child.name]:
                        del pending[child.name]
                        children[i] = _spawn(child.name, config, extra[child.name])
                    continue
                code = child.proc.poll()
                if code is None:
                    continue
                if code != TRANSIENT_EXIT_CODE:
                    failed = child
                    break
                # the backoff starts over after a run of HEALTHY_S
                healthy = time.monotonic() - child.started >= HEALTHY_S
                count = restarts[child.name] = 1 if healthy else restarts.get(child.name, 0) + 1
                delay = restart_delay(count)
                pending[child.name] = time.monotonic() + delay
                log.warning(
                    "%s stopped for a reason that passes by itself (exit %d: its error is "
                    "above); it resumes from its committed position: starting it again in "
                    "%.0fs (restart %d in a row)", child.name, code, delay, count)
        for child in children:  # ask both at once, then wait for each
            if child.proc.poll() is None:
                child.proc.send_signal(signal.SIGTERM)
        codes = {c.name: _wait_stopped(c) for c in children if c.name not in pending}
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
