"""Is a Kafka broker ready for what cdc-ingest does (metadata and transactions)?"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient

from cdc_ingest.services._process import wait_until

log = logging.getLogger(__name__)

READY_TIMEOUT = 90.0
READINESS_TRANSACTIONAL_ID = "cdc-ingest.services.readiness"


def _client_config(bootstrap: str) -> dict[str, Any]:
    # librdkafka's "connection refused" chatter while the broker boots goes to DEBUG.
    return {"bootstrap.servers": bootstrap, "logger": log, "log_level": 0}


def lists_topics(bootstrap: str) -> bool:
    try:
        AdminClient(_client_config(bootstrap)).list_topics(timeout=2)
    except KafkaException:
        return False
    return True


def can_init_transactions(bootstrap: str) -> bool:
    """True once the transaction coordinator (and its __transaction_state topic) is up."""
    producer = Producer(
        {**_client_config(bootstrap), "transactional.id": READINESS_TRANSACTIONAL_ID}
    )
    try:
        producer.init_transactions(5)
    except KafkaException as exc:
        log.debug("transactions not ready yet: %s", exc)
        return False
    return True


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
