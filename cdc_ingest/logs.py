"""Logging for every command: text for people, or one JSON object per line (``--log-format
json``) for log collectors. ``start`` passes the choice to capture and the sink through the
environment (``CDC_INGEST_LOG_FORMAT``, ``CDC_INGEST_LOG_LEVEL``)."""

from __future__ import annotations

import json
import logging
import os
import sys
from datetime import UTC, datetime
from typing import Any

FORMAT_ENV, LEVEL_ENV = "CDC_INGEST_LOG_FORMAT", "CDC_INGEST_LOG_LEVEL"
_TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """``{"ts":..., "level":..., "logger":..., "message":..., "process":...}`` plus
    ``exception`` (the traceback) and any ``extra`` fields given to the call."""

    _STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {
        "message", "asctime"}

    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname, "logger": record.name, "message": record.getMessage(),
            "process": os.environ.get("CDC_INGEST_STAGE", "cdc-ingest"),
        }
        body.update({k: v for k, v in vars(record).items() if k not in self._STANDARD})
        if record.exc_info:
            body["exception"] = self.formatException(record.exc_info)
        return json.dumps(body, default=str, ensure_ascii=False)


def setup(level: str, fmt: str) -> None:
    """Configure the root logger once, for this process and (through the environment) the
    processes it starts."""
    os.environ[FORMAT_ENV], os.environ[LEVEL_ENV] = fmt, level.upper()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(_TEXT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(getattr(logging, level.upper(), logging.INFO))


def json_logs() -> bool:
    return os.environ.get(FORMAT_ENV) == "json"
