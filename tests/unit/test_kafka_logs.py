"""librdkafka's log lines through our logging: once per condition, then a count."""

from __future__ import annotations

import logging

import pytest

from cdc_ingest.kafka import logs


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
