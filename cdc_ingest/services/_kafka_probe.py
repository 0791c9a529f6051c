"""Is a Kafka broker ready for what cdc-ingest does (metadata and transactions)?"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from cdc_ingest.errors import CdcIngestError
from cdc_ingest.kafka import TopicAdmin
from cdc_ingest.kafka.admin import transactions_usable
from cdc_ingest.services._process import wait_until

log = logging.getLogger(__name__)

READY_TIMEOUT = 90.0
READINESS_TRANSACTIONAL_ID = "cdc-ingest.services.readiness"


def _client_config(bootstrap: str) -> dict[str, Any]:
    # librdkafka's "connection refused" chatter while the broker boots goes to DEBUG.
    return {"bootstrap.servers": bootstrap, "logger": log, "log_level": 0}


def lists_topics(bootstrap: str) -> bool:
    try:
        TopicAdmin(_client_config(bootstrap), timeout_s=2).partitions(READINESS_TRANSACTIONAL_ID)
    except CdcIngestError:  # Kafka unreachable yet (whichever error class the wrapper uses)
        return False
    return True


def can_init_transactions(bootstrap: str) -> bool:
    """True once the transaction coordinator (and its __transaction_state topic) is up."""
    problem = transactions_usable(_client_config(bootstrap), READINESS_TRANSACTIONAL_ID)
    if problem is not None:
        log.debug("transactions not ready yet: %s", problem)
    return problem is None


def wait_until_ready(
    bootstrap: str,
    timeout: float = READY_TIMEOUT,
    details: Callable[[], str] = lambda: "",
    alive: Callable[[], bool] = lambda: True,
) -> None:
    """Wait until the broker answers metadata requests and can run transactions."""
    deadline = time.monotonic() + timeout
    what = f"Kafka at {bootstrap}"
    wait_until(
        lambda: lists_topics(bootstrap), timeout=timeout, what=what, details=details, alive=alive
    )
    wait_until(
        lambda: can_init_transactions(bootstrap),
        timeout=max(deadline - time.monotonic(), 1.0),
        what=f"{what} (transaction coordinator)",
        details=details,
        alive=alive,
    )
