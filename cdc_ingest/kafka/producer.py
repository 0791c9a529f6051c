"""Transactional producer: begin, produce, commit, with fencing and failures made explicit."""

from __future__ import annotations

import logging
import time
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from cdc_ingest.kafka.errors import FencedError, KafkaClientError, TransactionTimedOut
from cdc_ingest.kafka.limits import MessageTooLarge
from cdc_ingest.kafka.logs import with_logger

log = logging.getLogger(__name__)

DEFAULT_TX_TIMEOUT_MS = 60000  # librdkafka's transaction.timeout.ms
_FENCED = {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}


def _raise(exc: KafkaException, what: str, transactional_id: str) -> None:
    err = exc.args[0] if exc.args else None
    code = err.code() if isinstance(err, KafkaError) else None
    if code in _FENCED:
        raise FencedError(
            f"another process took over transactional id {transactional_id!r} while this one "
            f"was {what}: a second instance of this pipeline is running. This one stops; "
            "its open transaction is aborted and nothing of it is visible."
        ) from exc
    raise KafkaClientError(f"Kafka failed while {what}: {err}") from exc


def _too_large(exc: KafkaException, topic: str, key: bytes | None, value: bytes | None,
               headers: list[tuple[str, bytes]] | None) -> None:
    err = exc.args[0] if exc.args else None
    if isinstance(err, KafkaError) and err.code() == KafkaError.MSG_SIZE_TOO_LARGE:
        raise MessageTooLarge(topic, key, value, str(err.str()), headers) from exc


class _Sender:
    """The produce call every producer shares: the hot path of capture and the sink.

    :meth:`send` hands one message to librdkafka; while its local queue is full it serves
    delivery reports until there is room. A Kafka error becomes :class:`FencedError` or
    :class:`KafkaClientError`.
    """

    _producer: Producer
    _name: str

    @property
    def raw_produce(self) -> Any:
        """librdkafka's produce itself, for a hot loop that hands any message it refuses
        (``BufferError``, ``KafkaException``) to :meth:`send`, which waits for room or
        reports the error: one Python call less per message."""
        return self._producer.produce

    def send(self, topic: str, value: bytes | None, key: bytes | None = None,
             timestamp: int = 0, headers: list[tuple[str, bytes]] | None = None,
             partition: int = -1) -> None:
        """Produce one message. ``timestamp`` 0 is "now", ``partition`` -1 is the
        partitioner's choice, ``headers`` None is none: librdkafka's own defaults."""
        try:
            self._producer.produce(topic, value, key, partition=partition,
                                   timestamp=timestamp, headers=headers)  # type: ignore[arg-type]
        except BufferError:
            self._send_when_room(topic, value, key, timestamp, headers, partition)
        except KafkaException as exc:
            _too_large(exc, topic, key, value, headers)
            self._failed(exc, f"producing to {topic}")

    def _send_when_room(self, topic: str, value: bytes | None, key: bytes | None,
                        timestamp: int, headers: list[tuple[str, bytes]] | None,
                        partition: int) -> None:
        while True:
            self._producer.poll(0.05)  # delivery reports free queue space
            try:
                self._producer.produce(topic, value, key, partition=partition,
                                       timestamp=timestamp,
                                       headers=headers)  # type: ignore[arg-type]
                return
            except BufferError:
                continue
            except KafkaException as exc:
                _too_large(exc, topic, key, value, headers)
                self._failed(exc, f"producing to {topic}")

    def _error(self, exc: KafkaException, what: str) -> None:
        _raise(exc, what, self._name)

    def _failed(self, exc: KafkaException, what: str) -> None:
        """Raise for a failed produce. After a fatal error librdkafka's produce says only
        "fatal"; a transactional producer's transaction calls carry the error behind it
        (fenced by a newer instance, most often), so it is asked for that one."""
        err = exc.args[0] if exc.args else None
        if (isinstance(err, KafkaError) and err.code() == KafkaError._FATAL
                and isinstance(self, TransactionalProducer)):
            try:
                self._producer.abort_transaction(1)
            except KafkaException as underlying:
                exc = underlying
        self._error(exc, what)


class TransactionalProducer(_Sender):
    """One Kafka transactional producer.

    Failure contract: :meth:`commit` raises if any record of the transaction failed to be
    produced; the transaction is then aborted, so no partial batch ever becomes visible.
    """

    def __init__(self, config: dict[str, Any], transactional_id: str, timeout_s: float = 60.0):
        self.transactional_id = self._name = transactional_id
        self._timeout = timeout_s
        self._open = False
        self._began: float | None = None  # time.monotonic() at the open transaction's begin
        self._tx_timeout_ms = int(config.get("transaction.timeout.ms", DEFAULT_TX_TIMEOUT_MS))
        self._producer = Producer(
            {
                **with_logger(config),
                "transactional.id": transactional_id,
                "enable.idempotence": True,
                "acks": "all",
                "partitioner": config.get("partitioner", "murmur2_random"),
                # Connect to the brokers at once, not on first use: with lazy connections
                # init_transactions waited for librdkafka's retry timer when it ran before
                # the coordinator's connection was up (measured: docs/decisions/0003). The
                # sink makes a producer per task and batch.
                "enable.sparse.connections": config.get("enable.sparse.connections", False),
                # Records of a transaction are invisible until its commit, and the commit
                # sends what lingers at once: a long linger costs no latency and makes fewer,
                # larger requests (the broker's CPU is the scarce part).
                "linger.ms": config.get("linger.ms", 50),
                # only failures reach Python: the first one refused for its size is named
                "delivery.report.only.error": True,
                "on_delivery": self._refused,
            }
        )
        self._too_large: MessageTooLarge | None = None

    def _refused(self, err: KafkaError | None, msg: Any) -> None:
        if (err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE
                and self._too_large is None):
            self._too_large = MessageTooLarge(msg.topic(), msg.key(), msg.value(), err.str(),
                                              msg.headers())

    def init(self) -> None:
        """Register the id; aborts what an earlier holder left open and fences it."""
        try:
            self._producer.init_transactions(self._timeout)
        except KafkaException as exc:
            _raise(exc, "initializing transactions", self.transactional_id)

    def begin(self) -> None:
        try:
            self._producer.begin_transaction()
        except KafkaException as exc:
            self._error(exc, "beginning a transaction")
        self._open = True
        self._began = time.monotonic()

    @property
    def in_transaction(self) -> bool:
        return self._open

    def send_offsets(self, offsets: list[Any], group_metadata: Any) -> None:
        try:
            self._producer.send_offsets_to_transaction(offsets, group_metadata, self._timeout)
        except KafkaException as exc:
            self._error(exc, "adding consumer offsets to the transaction")

    def commit(self) -> None:
        try:
            self._producer.commit_transaction(self._timeout)
        except KafkaException as exc:
            self._abort_quietly()
            too_large, self._too_large = self._too_large, None
            if too_large is not None:
                raise too_large from exc
            self._error(exc, "committing a transaction")
        self._open = False
        self._began = None

    def abort(self) -> None:
        if not self._open:
            return
        try:
            self._producer.abort_transaction(self._timeout)
        except KafkaException as exc:
            self._error(exc, "aborting a transaction")
        finally:
            self._open = False
        self._began = None

    def _error(self, exc: KafkaException, what: str) -> None:
        """Raise for a failed call of the open transaction; one open longer than
        ``transaction.timeout.ms`` was aborted by the broker, whatever the error says (a
        fenced producer, most often: the broker bumps the epoch when it aborts)."""
        age_s = 0.0 if self._began is None else time.monotonic() - self._began
        if age_s * 1000 > self._tx_timeout_ms:
            raise TransactionTimedOut(
                f"Kafka aborted this process's transaction while it was {what}: it had been "
                f"open {age_s:.0f}s, longer than transaction.timeout.ms "
                f"({self._tx_timeout_ms} ms), because the process was frozen or blocked "
                "meanwhile (SIGSTOP, a paused VM or container, swapping). Nothing of that "
                "transaction is visible and the committed position is intact: starting "
                "again resumes exactly there (`cdc-ingest start` restarts the process by "
                "itself). Fix if it recurs: find what freezes the process, or raise "
                "properties.transaction.timeout.ms (at most the broker's "
                "transaction.max.timeout.ms)") from exc
        _raise(exc, what, self.transactional_id)

    def _abort_quietly(self) -> None:
        try:
            self._producer.abort_transaction(self._timeout)
        except KafkaException as exc:
            log.warning("abort after a failed commit also failed: %s", exc)
        self._open = False

    def poll(self) -> None:
        self._producer.poll(0)

    def close(self) -> None:
        """Flush what a finished transaction left; a fenced producer's flush raises its
        fencing again, which the failed call already reported, so it is only logged."""
        try:
            self._producer.flush(5)
        except KafkaException as exc:
            log.debug("closing transactional producer %s: %s", self.transactional_id, exc)


class PlainProducer(_Sender):
    """A non-transactional producer (``at-least-once``: idempotent; ``none``: acks=1).

    Failure contract: :meth:`flush` raises if any record failed, when ``strict``.
    """

    def __init__(self, config: dict[str, Any], idempotent: bool, strict: bool = True):
        self._strict = strict
        self._name = "(no transactional id)"
        self._failures: list[str] = []
        settings: dict[str, Any] = {
            **config,
            "partitioner": config.get("partitioner", "murmur2_random"),
            "linger.ms": config.get("linger.ms", 5),
            "on_delivery": self._report,
        }
        if idempotent:
            settings.update({"enable.idempotence": True, "acks": "all"})
        else:
            settings.setdefault("acks", "1")
        self._producer = Producer(with_logger(settings))

    def _report(self, err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            self._failures.append(f"{msg.topic()}: {err}")

    def flush(self, timeout_s: float = 60.0) -> None:
        left = self._producer.flush(timeout_s)
        failures, self._failures = self._failures, []
        if left:
            failures.append(f"{left} messages still undelivered after {timeout_s:.0f}s")
        if failures:
            text = f"{len(failures)} message(s) failed: {failures[:3]}"
            if self._strict:
                raise KafkaClientError(text)
            log.warning("delivery-guarantee none: %s", text)


def fence(config: dict[str, Any], transactional_ids: list[str]) -> None:
    """Register each id and let it go: a producer still holding one is fenced, and what it
    left open is aborted (or its commit completed) at once, not after its timeout."""
    for transactional_id in transactional_ids:
        producer = TransactionalProducer(config, transactional_id)
        try:
            producer.init()
        finally:
            producer.close()
