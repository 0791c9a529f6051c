"""librdkafka's log lines through our logging: once per condition, then a count."""

from __future__ import annotations

import logging

import pytest

from cdc_ingest.kafka import logs
from cdc_ingest.kafka.errors import KafkaClientError


def _line(ms: int) -> logging.LogRecord:
    return logging.LogRecord(
        "rdkafka", logging.ERROR, __file__, 1,
        "FAIL [thrd:127.0.0.1:1/bootstrap]: 127.0.0.1:1/bootstrap: Connect to "
        f"ipv4#127.0.0.1:1 failed: Connection refused (after {ms}ms in state CONNECT)",
        (), None)


def test_a_condition_is_logged_once_a_minute_with_the_count(
        monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(logs.time, "monotonic", lambda: now[0])
    once = logs._OncePerCondition()
    first = _line(0)
    assert once.filter(first)
    assert first.levelno == logging.WARNING  # the operation's own error says what failed
    assert first.getMessage().startswith("Kafka client: FAIL")
    assert "held back for a minute" in first.getMessage()
    assert not any(once.filter(_line(ms)) for ms in range(1, 200))  # 50 a second, for 4 s
    now[0] += logs.REPEAT_S
    again = _line(3)
    assert once.filter(again)
    assert "(199 more like it in the last 60 s)" in again.getMessage()


def test_configuration_notes_go_to_debug() -> None:
    once = logs._OncePerCondition()
    note = logging.LogRecord("rdkafka", logging.WARNING, __file__, 1,
                             "CONFWARN [thrd:app]: Configuration property compression.codec "
                             "is a producer property and will be ignored by this consumer",
                             (), None)
    assert not once.filter(note)
    assert note.levelno == logging.DEBUG


def test_every_client_gets_the_logger_unless_one_is_given() -> None:
    assert logs.with_logger({"bootstrap.servers": "k:9092"})["logger"] is logs.LOGGER
    mine = logging.getLogger("mine")
    assert logs.with_logger({"logger": mine})["logger"] is mine


def test_a_fenced_producers_fatal_line_goes_to_debug(caplog: pytest.LogCaptureFixture) -> None:
    """The caller handles fencing (capture: FencedError with its fix; the sink: a new
    producer), so librdkafka's own TXNERR line would only alarm."""
    with caplog.at_level(logging.INFO, logger=logs.LOGGER.name):
        logs.LOGGER.error("TXNERR [thrd:main]: Fatal transaction error: Failed to add offsets to "
                     "transaction: Local: This instance has been fenced by a newer instance "
                     "(_FENCED)")
    assert not caplog.records


def test_a_just_started_brokers_coordinator_load_goes_to_debug(
        caplog: pytest.LogCaptureFixture) -> None:
    """Seen on the console of `cdc-ingest snapshot` against a broker just started: librdkafka
    retries it, and a request that never gets through fails with its own error."""
    with caplog.at_level(logging.INFO, logger=logs.LOGGER.name):
        logs.LOGGER.warning("GETPID [rdkafka#producer-3] [thrd:main]: Failed to acquire "
                            "idempotence PID from broker 127.0.0.1:35181/1: Broker: "
                            "Coordinator load in progress: retrying")
    assert not caplog.records
    with caplog.at_level(logging.INFO, logger=logs.LOGGER.name):  # other broker errors stay
        logs.LOGGER.warning("GETPID [rdkafka#producer-3] [thrd:main]: Failed to acquire "
                            "idempotence PID from broker 127.0.0.1:35181/1: Broker: "
                            "Cluster authorization failed")
    assert [r.levelno for r in caplog.records] == [logging.WARNING]


def test_a_failed_login_is_named_by_the_error_that_follows(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A login that failed (a token refused, SASL, TLS) makes the next request find no broker;
    that request's error says why, for a while, and only an error of that kind does."""
    now = [5000.0]
    monkeypatch.setattr(logs.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(logs, "_last_login_failure", [])
    once = logs._OncePerCondition()
    once.filter(logging.LogRecord(
        "rdkafka", logging.WARNING, __file__, 1, 'OIDC [rdkafka#consumer-1] [thrd:background]: '
        'Failed to retrieve OIDC token from "http://idp/token": {"error": "invalid_client"} '
        "(401)", (), None))
    failed = str(KafkaClientError("cannot read topic t: Local: Broker transport failure"))
    assert failed == (
        "cannot read topic t: Local: Broker transport failure. The Kafka client could not log "
        'in just before: Failed to retrieve OIDC token from "http://idp/token": {"error": '
        '"invalid_client"} (401). Fix: check the login settings (properties.sasl.*, the token '
        "endpoint, the trust and key stores) and the credentials")
    assert str(KafkaClientError("message too large")) == "message too large"
    now[0] += logs.LOGIN_MEMORY_S + 1
    assert str(KafkaClientError("Broker transport failure")) == "Broker transport failure"
