"""Exactly-once hop 2: the sink's Kafka transactions, one owner (as capture's
:class:`~cdc_ingest.capture.transaction.ChangelogTransaction` for hop 1).

:class:`SinkTransaction` is the only code under ``sink/`` that drives a transactional producer.
Its users say what goes into a transaction; it does the steps, always in this order:

1. :meth:`SinkTransaction.register` registers the transactional id: it fences every older
   producer of the id (a task's earlier attempt, wherever it ran, or the head start) and
   aborts what that one left open, so what is read as committed next is final.
2. :meth:`SinkTransaction.write` begins a transaction,
3. hands the caller a ``send`` that puts records into it,
4. adds the consumed changelog offsets the records lead to (:class:`Consumed`, or none),
5. commits: the records and the offsets become visible together, or neither does;
6. on any failure in 2-5, aborts what is open and raises.
7. :meth:`SinkTransaction.close` releases the producer.

Who writes through it: a sink task's writer (sink/task/writer.py; in a Spark task or the
driver's head start), and the transaction metadata's BEGIN/END writer
(sink/driver/metadata_writer.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from cdc_ingest.kafka import TransactionalProducer
from cdc_ingest.kafka.offsets import offset_list

T = TypeVar("T")


class Send(Protocol):
    """Puts one record into the open transaction (``partition`` -1: by key; ``timestamp``
    0: now)."""

    def __call__(self, topic: str, value: bytes | None, key: bytes | None = None,
                 timestamp: int = 0, headers: list[tuple[str, bytes]] | None = None,
                 partition: int = -1) -> None: ...


@dataclass(frozen=True)
class Consumed:
    """The input a transaction consumed: the group's next offset of a changelog partition,
    committed with the transaction (``group``: the consumer group's metadata)."""

    topic: str
    partition: int
    next_offset: int
    group: Any


class SinkTransaction:
    """The Kafka transactions of one transactional id."""

    def __init__(self, config: dict[str, Any], transactional_id: str) -> None:
        self.transactional_id = transactional_id
        self._producer = TransactionalProducer(config, transactional_id)
        self.commit_s = 0.0  # time spent waiting for commits, all transactions

    @classmethod
    def registered(cls, config: dict[str, Any], transactional_id: str) -> SinkTransaction:
        """A new owner of ``transactional_id``, registered (step 1)."""
        tx = cls(config, transactional_id)
        try:
            tx.register()
        except BaseException:
            tx.close()
            raise
        return tx

    def register(self) -> None:
        """Step 1: fence older producers of the id; abort what they left open."""
        self._producer.init()

    def write(self, fill: Callable[[Send], tuple[T, Consumed | None]]) -> T:
        """Steps 2-6: one transaction of what ``fill(send)`` sends, committed with the
        consumed offsets it returns beside its own result; returns that result."""
        producer = self._producer
        producer.begin()  # 2
        try:
            result, consumed = fill(producer.send)  # 3
            if consumed is not None:  # 4
                producer.send_offsets(
                    offset_list(consumed.topic, consumed.partition, consumed.next_offset),
                    consumed.group)
            began = time.monotonic()
            producer.commit()  # 5
            self.commit_s += time.monotonic() - began
        except BaseException:
            if producer.in_transaction:  # 6
                producer.abort()
            raise
        return result

    def close(self) -> None:
        """Step 7."""
        self._producer.close()
