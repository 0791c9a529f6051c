"""`start`'s supervision: a child exiting 11 (transient) is started again with backoff while
the other runs on; any other exit stops both and `start` fails with the child's reason.

The children are real processes (short Python scripts stand in for capture and sink)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cdc_ingest.commands import supervisor
from cdc_ingest.commands.supervisor import ChildFailed, restart_delay, run_start


def test_restart_delays_double_up_to_30s() -> None:
    assert [restart_delay(n) for n in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]


def _scripted(tmp_path: Path, scripts: dict[str, list[str]],
              monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make each start of child ``name`` run its next script; returns the start log."""
    started: list[str] = []

    def spawn(name: str, config: Path, extra: list[str]) -> supervisor._Child:
        script = scripts[name].pop(0)
        started.append(name)
        return supervisor._Child(name, subprocess.Popen([sys.executable, "-c", script]))

    monkeypatch.setattr(supervisor, "_spawn", spawn)
    monkeypatch.setattr(supervisor, "restart_delay", lambda n: 0.1 * n)
    return started


RUNS = "import time; time.sleep(60)"


def test_a_transient_exit_restarts_that_child_only_then_a_permanent_one_stops_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = _scripted(tmp_path, {
        "capture": ["raise SystemExit(11)", "raise SystemExit(11)", "raise SystemExit(3)"],
        "sink": [RUNS],
    }, monkeypatch)
    with pytest.raises(ChildFailed) as caught:
        run_start(tmp_path / "p.yaml")
    assert started == ["capture", "sink", "capture", "capture"]  # the sink ran throughout
    text = str(caught.value)
    assert text.startswith("capture exited with code 3 (its error is above)"), text
    assert "sink exited -15 after being asked to stop" in text, text
