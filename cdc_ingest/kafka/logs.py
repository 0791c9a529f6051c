"""librdkafka's own log lines, through our logging: one line per condition, not hundreds.

Left alone, librdkafka prints each failed connection attempt to stderr (``%3|...|FAIL|...
Connection refused``), about 50 a second while a broker is away, burying the one error that
says what is wrong and how to fix it. Every client gets :data:`LOGGER` instead
(:func:`with_logger`): a line is logged the first time its condition appears (as a warning:
the operation that needed the broker fails with its own error and fix), repeats of it are
counted and summed up at most once a minute, and configuration notes that do not matter
here (``CONFWARN``: a producer property handed to a consumer) go to debug, as does the
fatal-error line of a fenced producer (its caller raises or handles the fencing itself)
and a just-started broker's "coordinator load in progress", which librdkafka retries.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from typing import Any

LOGGER = logging.getLogger("cdc_ingest.kafka.client")
REPEAT_S = 60.0
_NUMBERS = re.compile(r"\d+ms|\(after [^)]*\)|#\d+|\d{6,}")
_QUIET = ("CONFWARN",)
# a producer fenced by a newer holder of its transactional id: the caller says what that
# means (capture: a second instance; the sink: a newer attempt of the partition's task); a
# broker just started, still loading its coordinators' state, which librdkafka retries (an
# operation that never gets through fails with its own error and fix)
_QUIET_TEXT = ("fenced by a newer instance", "Coordinator load in progress: retrying")


# librdkafka's words for a login that failed (a token, SASL, TLS): remembered, so the error of
# the operation that then fails for want of a broker can say why (errors.py)
_LOGIN_FAILED = re.compile(r"Failed to (?:retrieve|acquire) OIDC token|SASL authentication "
                           r"(?:error|failed)|Authentication failed|SSL handshake failed|"
                           r"certificate verify failed", re.I)
_THREAD_PREFIX = re.compile(r"^(?:\w+ )?\[[^]]*\] \[[^]]*\]: ")
LOGIN_MEMORY_S = 120.0
_last_login_failure: list[tuple[float, str]] = []  # the last one only


def recent_login_failure() -> str | None:
    """librdkafka's last word on a login that failed, if it said one in the last
    :data:`LOGIN_MEMORY_S`."""
    found = _last_login_failure[-1:]
    if not found or time.monotonic() - found[0][0] > LOGIN_MEMORY_S:
        return None
    return found[0][1]


class _OncePerCondition(logging.Filter):
    """Let a librdkafka line through once per :data:`REPEAT_S` per condition."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[float, int]] = {}  # condition -> (last logged, repeats)

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if any(f"|{tag}|" in text or text.startswith(tag) for tag in _QUIET) or any(
                part in text for part in _QUIET_TEXT):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return LOGGER.isEnabledFor(logging.DEBUG)
        if _LOGIN_FAILED.search(text):
            _last_login_failure[:] = [(time.monotonic(), _THREAD_PREFIX.sub("", text))]
        if record.levelno > logging.WARNING:  # the caller reports what failed, with a fix
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        condition = _NUMBERS.sub("", text)
        now = time.monotonic()
        with self._lock:
            last, repeats = self._seen.get(condition, (-REPEAT_S, 0))
            if now - last < REPEAT_S:
                self._seen[condition] = (last, repeats + 1)
                return False
            self._seen[condition] = (now, 0)
        record.msg = f"Kafka client: {text}" + (
            f" ({repeats} more like it in the last {REPEAT_S:.0f} s)" if repeats else
            " (repeats of this line are held back for a minute)")
        record.args = ()
        return True


LOGGER.addFilter(_OncePerCondition())


# Not a librdkafka setting: the pipeline's name for the consumer groups its readers use
# (model/names.py tools_group), so one ACL prefix covers them; with_logger takes it out.
GROUP_BASE = "cdc-ingest.group-base"


def with_logger(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` as librdkafka takes it, its log lines going to :data:`LOGGER`."""
    out = {k: v for k, v in config.items() if k != GROUP_BASE}
    out.setdefault("logger", LOGGER)
    return out


def reader_group(config: dict[str, Any], role: str, unique: bool = False) -> str:
    """The group id of a reader of the pipeline whose settings ``config`` are: under its
    tools group (``<prefix>.tools.<role>``), with a random suffix when each reader needs a
    group of its own (one that subscribes)."""
    base = str(config.get(GROUP_BASE, "cdc-ingest.tools"))
    return f"{base}.{role}-{uuid.uuid4().hex}" if unique else f"{base}.{role}"
