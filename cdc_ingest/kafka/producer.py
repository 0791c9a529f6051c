"""Transactional producer: begin, produce, commit, with fencing and failures made explicit."""

from __future__ import annotations

import logging
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from cdc_ingest.errors import FencedError, SinkError

log = logging.getLogger(__name__)

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
    raise SinkError(f"Kafka failed while {what}: {err}") from exc


def _message(
    key: bytes | None,
    value: bytes | None,
    headers: list[tuple[str, bytes]] | None,
    timestamp_ms: int | None,
    **extra: Any,
) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"key": key, "value": value}
    kwargs.update({k: v for k, v in extra.items() if v is not None})
    if headers:
        kwargs["headers"] = headers
    if timestamp_ms:
        kwargs["timestamp"] = timestamp_ms
    return kwargs


def _produce(producer: Producer, topic: str, kwargs: dict[str, Any]) -> None:
    """Produce, serving delivery reports while the local queue is full."""
    while True:
        try:
            producer.produce(topic, **kwargs)
            return
        except BufferError:
            producer.poll(0.05)


class TransactionalProducer:
    """One Kafka transactional producer.

    Failure contract: :meth:`commit` raises if any record of the transaction failed to be
    produced; the transaction is then aborted, so no partial batch ever becomes visible.
    """

    def __init__(self, config: dict[str, Any], transactional_id: str, timeout_s: float = 60.0):
        self.transactional_id = transactional_id
        self._timeout = timeout_s
        self._open = False
        self._producer = Producer(
            {
                **config,
                "transactional.id": transactional_id,
                "enable.idempotence": True,
                "acks": "all",
                "partitioner": config.get("partitioner", "murmur2_random"),
                # Records of a transaction are invisible until its commit, and the commit
                # sends what lingers at once: a long linger costs no latency and makes fewer,
                # larger requests (the broker's CPU is the scarce part).
                "linger.ms": config.get("linger.ms", 50),
            }
        )

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
            _raise(exc, "beginning a transaction", self.transactional_id)
        self._open = True

    @property
    def in_transaction(self) -> bool:
        return self._open

    @property
    def client(self) -> Producer:
        """The confluent-kafka producer, for hot loops that call ``produce`` directly; they
        must retry on ``BufferError`` after :meth:`wait_for_room` and hand a
        ``KafkaException`` to :meth:`failed`."""
        return self._producer

    def wait_for_room(self) -> None:
        """The local queue is full: serve delivery reports while librdkafka sends."""
        self._producer.poll(0.05)

    def failed(self, exc: KafkaException, what: str) -> None:
        """Raise what :meth:`produce` raises for ``exc`` (FencedError or SinkError)."""
        _raise(exc, what, self.transactional_id)

    def produce(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None = None,
        headers: list[tuple[str, bytes]] | None = None,
        timestamp_ms: int | None = None,
    ) -> None:
        try:
            _produce(self._producer, topic, _message(key, value, headers, timestamp_ms,
                                                     partition=partition))
        except KafkaException as exc:
            _raise(exc, f"producing to {topic}", self.transactional_id)

    def send_offsets(self, offsets: list[Any], group_metadata: Any) -> None:
        try:
            self._producer.send_offsets_to_transaction(offsets, group_metadata, self._timeout)
        except KafkaException as exc:
            _raise(exc, "adding consumer offsets to the transaction", self.transactional_id)

    def commit(self) -> None:
        try:
            self._producer.commit_transaction(self._timeout)
        except KafkaException as exc:
            self._abort_quietly()
            _raise(exc, "committing a transaction", self.transactional_id)
        self._open = False

    def abort(self) -> None:
        if not self._open:
            return
        try:
            self._producer.abort_transaction(self._timeout)
        except KafkaException as exc:
            _raise(exc, "aborting a transaction", self.transactional_id)
        finally:
            self._open = False

    def _abort_quietly(self) -> None:
        try:
            self._producer.abort_transaction(self._timeout)
        except KafkaException as exc:
            log.warning("abort after a failed commit also failed: %s", exc)
        self._open = False

    def poll(self) -> None:
        self._producer.poll(0)

    def close(self) -> None:
        self._producer.flush(5)


class PlainProducer:
    """A non-transactional producer (``at-least-once``: idempotent; ``none``: acks=1).

    Failure contract: :meth:`flush` raises if any record failed, when ``strict``.
    """

    def __init__(self, config: dict[str, Any], idempotent: bool, strict: bool = True):
        self._strict = strict
        self._failures: list[str] = []
        settings: dict[str, Any] = {
            **config,
            "partitioner": config.get("partitioner", "murmur2_random"),
            "linger.ms": config.get("linger.ms", 5),
        }
        if idempotent:
            settings.update({"enable.idempotence": True, "acks": "all"})
        else:
            settings.setdefault("acks", "1")
        self._producer = Producer(settings)

    def _report(self, err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            self._failures.append(f"{msg.topic()}: {err}")

    def produce(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, bytes]] | None = None,
        timestamp_ms: int | None = None,
    ) -> None:
        try:
            _produce(self._producer, topic, _message(key, value, headers, timestamp_ms,
                                                     on_delivery=self._report))
        except KafkaException as exc:
            raise SinkError(f"Kafka failed while producing to {topic}: {exc}") from exc

    def flush(self, timeout_s: float = 60.0) -> None:
        left = self._producer.flush(timeout_s)
        failures, self._failures = self._failures, []
        if left:
            failures.append(f"{left} messages still undelivered after {timeout_s:.0f}s")
        if failures:
            text = f"{len(failures)} message(s) failed: {failures[:3]}"
            if self._strict:
                raise SinkError(text)
            log.warning("delivery-guarantee none: %s", text)
