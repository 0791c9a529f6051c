"""Ctrl-C stops a `cdc-ingest` command even when SIGINT was inherited ignored, as it is by a
script's background job (`cdc-ingest watch ... &`): the CLI restores Python's handler."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from cdc_ingest import exit_codes
from cdc_ingest.cli import restore_ctrl_c

ROOT = Path(__file__).resolve().parents[2]

# A command that waits as `watch` does, registered on the real CLI and run through its main().
NAP = """
import time
from cdc_ingest import cli

@cli.cli.command()
def nap() -> None:
    print("ready", flush=True)
    time.sleep(60)

cli.main(["nap"])
"""


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_sigint_inherited_ignored_still_stops_a_command() -> None:
    proc = subprocess.Popen([sys.executable, "-c", NAP], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=_ignore_sigint)  # noqa: PLW1509 - the test's only child
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(20) == exit_codes.INTERRUPTED, proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_handler_of_the_caller_is_left_alone() -> None:
    def mine(signum: int, frame: object) -> None:
        pass

    previous = signal.signal(signal.SIGINT, mine)
    try:
        restore_ctrl_c()
        assert signal.getsignal(signal.SIGINT) is mine
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        restore_ctrl_c()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)
