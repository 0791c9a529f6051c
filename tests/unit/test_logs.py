"""--log-format json: one JSON object per line, errors included; children inherit it."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

from cdc_ingest.logs import JsonFormatter


def test_json_lines_carry_level_logger_message_and_extras() -> None:
    record = logging.LogRecord("cdc_ingest.capture", logging.WARNING, __file__, 1,
                               "lag %d s", (5,), None)
    record.table = "shop.orders"
    body = json.loads(JsonFormatter().format(record))
    assert body["level"] == "WARNING" and body["logger"] == "cdc_ingest.capture"
    assert body["message"] == "lag 5 s" and body["table"] == "shop.orders"
    assert body["ts"].endswith("+00:00") and body["process"]


def test_an_error_is_a_json_line_with_its_exit_code(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cdc_ingest.cli", "--log-format", "json", "validate",
         "--config", str(tmp_path / "missing.yaml")],
        capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    lines = [json.loads(line) for line in done.stderr.splitlines()]
    assert lines[-1]["level"] == "ERROR" and lines[-1]["exit_code"] == 2
    assert "missing.yaml" in lines[-1]["message"]
