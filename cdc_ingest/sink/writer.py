"""The sink's per-partition writer: one changelog partition's offset range -> sink topics.

Runs inside a Spark task (one task per changelog partition range, no shuffle before it). With
``exactly-once`` it is the consume-transform-produce of exactly-once hop 2
(docs/architecture.md); clients are cached per Python worker process, the transactional
producers checked on reuse (:func:`_transactional`), so a steady stream does not pay
``init_transactions`` per batch.

Failure contract: :func:`write_partition` either returns after everything it produced is
committed (transaction, or flush plus offset commit), or raises; a raised task leaves nothing
visible beyond what an earlier commit covered, and Spark's retry resumes after it.
"""

from __future__ import annotations

import atexit
import logging
import time
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Any

from cdc_ingest.kafka import KafkaClientError, PlainProducer, TransactionalProducer
from cdc_ingest.kafka.offsets import GroupOffsets, offset_list
from cdc_ingest.model.changelog import REKEY_CUT, DdlRecord
from cdc_ingest.sink.changelog import ChangelogBatches, Columns, row_columns
from cdc_ingest.sink.chunks import Counters, Reset, chunks
from cdc_ingest.sink.events import EventSerde
from cdc_ingest.sink.produce import produce, raise_named
from cdc_ingest.sink.rekey import Cutover
from cdc_ingest.sink.resets import reset_messages
from cdc_ingest.sink.serde import Serde, SinkMessage, SinkSerde, last_per_key
from cdc_ingest.sink.settings import SinkSettings
from cdc_ingest.sink.topics import SinkTopics

log = logging.getLogger(__name__)


# -- clients cached per worker process ----------------------------------------------------

_producers: dict[str, Any] = {}
_transactions: dict[str, TransactionalProducer] = {}  # by transactional id, none open
_groups: dict[str, GroupOffsets] = {}
_topics: dict[str, SinkTopics] = {}


def close_clients() -> None:
    """Close the clients this process cached (the driver's, or a worker's at exit)."""
    while _groups:
        _groups.popitem()[1].close()
    while _transactions:
        _transactions.popitem()[1].close()
    _topics.clear()
    _producers.clear()


atexit.register(close_clients)


def _group(settings: SinkSettings) -> GroupOffsets:
    group = _groups.get(settings.group_id)
    if group is None:
        group = _groups[settings.group_id] = GroupOffsets(settings.kafka, settings.group_id)
    return group


def _sink_topics(settings: SinkSettings) -> SinkTopics:
    topics = _topics.get(settings.group_id)
    if topics is None:
        topics = _topics[settings.group_id] = SinkTopics(
            settings.kafka, settings.topic_partitions, settings.topic_replication,
            settings.max_message_bytes, compact=settings.events is None)
    return topics


# What the sink produces without a transaction is sent at the next flush anyway, which
# ignores linger.ms: a long linger costs no latency and makes fewer, larger produce requests
# (less broker CPU), as TransactionalProducer's own default does for exactly-once.
# ``properties.linger.ms`` wins.
PLAIN_PRODUCER_DEFAULTS: dict[str, Any] = {"linger.ms": 50}


def _plain_config(settings: SinkSettings) -> dict[str, Any]:
    return {**PLAIN_PRODUCER_DEFAULTS, **settings.producer_config()}


def _transactional(settings: SinkSettings, group: GroupOffsets,
                   partition: int) -> tuple[TransactionalProducer, int]:
    """The partition's producer and the committed offset its task starts at: rows below it
    are already in the sink topics.

    A worker keeps the producer of a partition's task that succeeded, with no transaction
    open, and the partition's next task in this worker reuses it if it still holds the id:
    checked by a transaction that adds the committed offset and is aborted, which the broker
    refuses if a newer producer registered the id since (the partition's task ran in another
    worker).
    Then nothing newer than this producer exists, older ones are fenced since its own
    ``init_transactions``, so the offset read before is final, as after a new producer's
    init. Refused (or failing), the producer is dropped and a new one made: registering the
    id fences every older holder, in whatever worker, and aborts what it left open. The
    reuse saves ``init_transactions`` per task and batch: 55 ms on a local broker, 505 ms
    when it meets the previous batch's commit still completing (decision 0003)."""
    topic = settings.changelog_topic
    transactional_id = settings.transactional_id(partition)
    producer = _transactions.pop(transactional_id, None)
    if producer is not None:
        start = group.committed(topic, [partition]).get(partition, 0)
        try:
            producer.begin()
            producer.send_offsets(offset_list(topic, partition, start), group.group_metadata())
            producer.abort()  # the check only: the task's transactions begin per chunk
            return producer, start
        except KafkaClientError as exc:
            # dropped without a flush: it has nothing to send, and a fenced one only raises
            log.debug("%s: another worker's producer holds it now (%s): registering it again",
                      transactional_id, exc)
    producer = TransactionalProducer(settings.producer_config(), transactional_id)
    producer.init()
    return producer, group.committed(topic, [partition]).get(partition, 0)


def _plain(settings: SinkSettings) -> PlainProducer:
    key = f"plain:{settings.guarantee}:{settings.group_id}"
    producer = _producers.get(key)
    if producer is None:
        exact = settings.guarantee == "at-least-once"
        producer = _producers[key] = PlainProducer(_plain_config(settings), idempotent=exact,
                                                  strict=exact)
    return producer


def make_serde(settings: SinkSettings) -> Serde:
    """Upsert messages, or (``sink.type: kafka``) change events."""
    if settings.events is not None:
        return EventSerde(settings.router, settings.events, settings.with_headers,
                          settings.transforms)
    return SinkSerde(settings.router.sink_topics, settings.except_key, settings.with_headers,
                     settings.transforms, settings.jackson_keys)


def _serde(settings: SinkSettings, group: GroupOffsets,
           partition: int) -> tuple[Serde, Reset]:
    """The task's serde, and what it does at a DDL record that empties a table or cuts
    over a re-keyed one."""
    serde = make_serde(settings)

    def reset(ddl: DdlRecord, ts_ms: int, offset: int) -> list[SinkMessage] | Cutover:
        if ddl.action == REKEY_CUT:
            return Cutover(settings, serde, partition, offset, ddl, ts_ms)
        changelog_partitions = len(group.partitions(settings.changelog_topic))
        return reset_messages(settings, serde, changelog_partitions, partition, ddl, ts_ms)

    return serde, reset


def committed_offsets(settings: SinkSettings) -> dict[int, int]:
    """The sink group's committed offset per changelog partition ({} when it has none)."""
    group = _group(settings)
    return group.committed(settings.changelog_topic, group.partitions(settings.changelog_topic))


# -- the task ----------------------------------------------------------------------------


def write_partition(settings: SinkSettings, rows: Iterable[Any]) -> dict[str, Any]:
    """Write one changelog partition's records to the sinks.

    ``rows``: a :class:`~cdc_ingest.sink.changelog.ChangelogBatches` (what the Spark job
    passes), or any rows with ``partition``, ``offset``, ``key``, ``value``, in offset order.
    """
    batches = rows.columns() if isinstance(rows, ChangelogBatches) else row_columns(rows)
    first = next(batches, None)
    counters = Counters()
    if first is None:
        return counters.as_dict()
    counters.partition = first[0]
    all_batches = chain([first], batches)
    if settings.guarantee == "exactly-once":
        _exactly_once(settings, counters, all_batches)
    else:
        _at_least_once(settings, counters, all_batches)
    return counters.as_dict()


def _produce(producer: TransactionalProducer | PlainProducer, settings: SinkSettings,
             counters: Counters, out: list[SinkMessage] | Cutover, last: int = -1) -> int:
    """Send a chunk's messages; returns the last changelog offset they cover (a cutover
    reads past its record)."""
    if isinstance(out, Cutover):
        for part in out.parts():
            _produce(producer, settings, counters, part)
        return out.last
    if not out:
        return last
    if settings.buffer_max_rows:
        out = last_per_key(out)
    partition = settings.events.partition if settings.events is not None else -1
    counters.bytes_out += produce(producer.send, _sink_topics(settings),
                                  settings.dead_letter_topic, out, counters.per_table,
                                  partition)
    counters.rows_out += len(out)
    return last


def _exactly_once(
    settings: SinkSettings, counters: Counters, batches: Iterator[tuple[int, Columns]]
) -> None:
    """Exactly-once hop 2 (docs/architecture.md) for one changelog partition."""
    partition = counters.partition
    group = _group(settings)
    # 1. This partition's producer, holding its transactional id: older attempts are fenced;
    # 2. what they committed: rows below ``start`` are already in the sink topics.
    began = time.monotonic()
    producer, start = _transactional(settings, group, partition)
    counters.setup_ms = (time.monotonic() - began) * 1000
    done = False
    try:
        serde, reset = _serde(settings, group, partition)
        for messages, upto in chunks(settings, serde, counters, batches, start, reset):
            # 3. One transaction: the sink records and the next input offset, or neither.
            producer.begin()
            try:
                last = _produce(producer, settings, counters, messages, upto)
                producer.send_offsets(
                    offset_list(settings.changelog_topic, partition, last + 1),
                    group.group_metadata(),
                )
                began = time.monotonic()
                producer.commit()
                counters.commit_ms += (time.monotonic() - began) * 1000
            except BaseException as exc:
                if producer.in_transaction:
                    producer.abort()
                raise_named(exc, messages if isinstance(messages, list) else [])
                raise
            counters.last_offset = last
        done = True
    finally:
        if done:
            _transactions[producer.transactional_id] = producer  # for the next task here
        # else dropped: its transaction is aborted (a flush of a fenced one would only raise
        # over the error that ends the task)


def _at_least_once(
    settings: SinkSettings, counters: Counters, batches: Iterator[tuple[int, Columns]]
) -> None:
    """Produce, flush, then record progress in the group (skips what a commit covered)."""
    partition = counters.partition
    producer = _plain(settings)
    group = _group(settings)
    start = group.committed(settings.changelog_topic, [partition]).get(partition, 0)
    serde, reset = _serde(settings, group, partition)
    for messages, upto in chunks(settings, serde, counters, batches, start, reset):
        last = _produce(producer, settings, counters, messages, upto)
        began = time.monotonic()
        producer.flush()
        group.commit(settings.changelog_topic, partition, last + 1)
        counters.commit_ms += (time.monotonic() - began) * 1000
        counters.last_offset = last
