"""A stop asked for while a long-running command is still starting ends it cleanly (exit 0).

SIGTERM arrives the moment the command can catch it, long before it has loaded its modules
and config (about a second): the command must not be killed by the signal (exit -15, what a
supervisor or `docker stop` reports as an unclean stop), and must not go on running.
"""

from __future__ import annotations

import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.integration.pipeline_helpers import catches_sigterm, start_command, write_pipeline


@pytest.mark.parametrize(("command", "what"), [
    ("capture", "capture"), ("sink", "the sink"), ("start", "start")])
def test_sigterm_while_starting_stops_cleanly_before_anything_starts(
    command: str, what: str, mariadb: Any, kafka: Any, tmp_path: Path
) -> None:
    config = write_pipeline(tmp_path / "p.yaml", mariadb, kafka,
                            f"early-{uuid.uuid4().hex[:8]}", "db.t")
    log = tmp_path / f"{command}.log"
    proc = start_command(command, config, log)
    deadline = time.monotonic() + 30
    while not catches_sigterm(proc.pid):
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "the command never caught SIGTERM"
        time.sleep(0.005)
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(60)
    text = log.read_text()
    assert code == 0, text[-3000:]
    assert f"stop requested (signal 15) while {what} was starting" in text, text[-3000:]
    # nothing was started: no binlog read, no Spark, no children
    for started in ("starts at", "sink query started", "starting capture", "SparkContext"):
        assert started not in text, text[-3000:]
    assert "Traceback" not in text
