"""The Kafka wrappers' errors: a produce after a fatal error names the error behind it, and a
transaction the broker timed out says so."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer

from cdc_ingest.errors import TRANSIENT_EXIT_CODE
from cdc_ingest.kafka import FencedError, KafkaClientError, TransactionalProducer
from cdc_ingest.kafka import producer as producer_module
from cdc_ingest.kafka.errors import TransactionTimedOut

NO_BROKER = {"bootstrap.servers": "127.0.0.1:9", "log_level": 0}


class _Fenced(Producer):  # type: ignore[misc]
    """librdkafka after a newer instance fenced this one: produce says only "fatal"."""

    def __init__(self, behind: KafkaError) -> None:
        super().__init__(NO_BROKER)
        self.behind = behind

    def produce(self, *args: Any, **kwargs: Any) -> None:
        raise KafkaException(KafkaError(KafkaError._FATAL, "Unable to produce message"))

    def abort_transaction(self, *args: Any) -> None:
        raise KafkaException(self.behind)


def _producer(behind: KafkaError) -> TransactionalProducer:
    producer = TransactionalProducer(NO_BROKER, "unit.capture")
    producer._producer = _Fenced(behind)
    return producer


def test_a_produce_after_being_fenced_is_a_fenced_error() -> None:
    with pytest.raises(FencedError, match="took over transactional id"):
        _producer(KafkaError(KafkaError._FENCED, fatal=True)).send("t", b"v", b"k")


def test_another_fatal_error_stays_a_kafka_error_with_its_cause() -> None:
    behind = KafkaError(KafkaError.INVALID_TXN_STATE, "the broker said no", fatal=True)
    with pytest.raises(KafkaClientError, match="producing to t") as caught:
        _producer(behind).send("t", b"v", b"k")
    assert not isinstance(caught.value, FencedError) and "broker said no" in str(caught.value)


def test_a_transaction_older_than_its_timeout_says_the_broker_aborted_it() -> None:
    """Frozen past transaction.timeout.ms: whatever librdkafka says (fenced, most often),
    the error names the timeout and is transient (exit 11: `start` restarts the process)."""
    producer = TransactionalProducer({**NO_BROKER, "transaction.timeout.ms": 1000},
                                     "unit.capture")
    producer._producer = _Fenced(KafkaError(KafkaError._FENCED, fatal=True))
    producer._began = time.monotonic() - 5  # opened 5 s ago
    with pytest.raises(TransactionTimedOut) as caught:
        producer.send("t", b"v", b"k")
    text = str(caught.value)
    assert caught.value.exit_code == TRANSIENT_EXIT_CODE
    assert "open 5s, longer than transaction.timeout.ms (1000 ms)" in text, text
    assert "took over" not in text and "properties.transaction.timeout.ms" in text


def test_a_young_transaction_fenced_is_still_another_instance() -> None:
    producer = _producer(KafkaError(KafkaError._FENCED, fatal=True))
    producer._began = time.monotonic() - 5  # well within the default 60 s
    with pytest.raises(FencedError, match="took over transactional id"):
        producer.send("t", b"v", b"k")


def test_a_transactional_producer_connects_at_once_unless_told_otherwise(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Lazy connections made init_transactions wait for librdkafka's 500 ms retry timer in
    two calls of five (decision 0003); the sink makes a producer per task and batch."""
    seen: list[dict[str, Any]] = []
    monkeypatch.setattr(producer_module, "Producer", seen.append)
    TransactionalProducer({"bootstrap.servers": "k:9092"}, "t")
    TransactionalProducer({"bootstrap.servers": "k:9092", "enable.sparse.connections": True},
                          "t")
    assert [c["enable.sparse.connections"] for c in seen] == [False, True]
