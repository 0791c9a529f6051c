"""The sink's per-partition writer: one changelog partition's offset range -> sink topics.

Runs inside a Spark task (one task per changelog partition range, no shuffle before it). With
``exactly-once`` it is the consume-transform-produce of exactly-once hop 2
(docs/architecture.md); clients are
cached per Python worker process so a steady stream does not pay ``init_transactions`` per
batch.

Failure contract: :func:`write_partition` either returns after everything it produced is
committed (transaction, or flush plus offset commit), or raises; a raised task leaves nothing
visible beyond what an earlier commit covered, and Spark's retry resumes after it.
"""

from __future__ import annotations

import atexit
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

from cdc_ingest.errors import SinkError
from cdc_ingest.kafka import PlainProducer, TransactionalProducer
from cdc_ingest.kafka.offsets import GroupOffsets, offset_list
from cdc_ingest.model.changelog import EMPTIES_TABLE, DdlRecord
from cdc_ingest.sink.changelog import ChangelogBatches, Columns, row_columns
from cdc_ingest.sink.produce import produce, raise_named
from cdc_ingest.sink.resets import reset_messages
from cdc_ingest.sink.serde import SinkMessage, SinkSerde, last_per_key
from cdc_ingest.sink.settings import SinkSettings
from cdc_ingest.sink.topics import SinkTopics

log = logging.getLogger(__name__)


# -- clients cached per worker process ----------------------------------------------------

_producers: dict[str, Any] = {}
_groups: dict[str, GroupOffsets] = {}
_topics: dict[str, SinkTopics] = {}


def close_clients() -> None:
    """Close the clients this process cached (the driver's, or a worker's at exit)."""
    while _groups:
        _groups.popitem()[1].close()
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
            settings.max_message_bytes)
    return topics


# What the sink produces without a transaction is sent at the next flush anyway, which
# ignores linger.ms: a long linger costs no latency and makes fewer, larger produce requests
# (less broker CPU), as TransactionalProducer's own default does for exactly-once.
# ``properties.linger.ms`` wins.
PLAIN_PRODUCER_DEFAULTS: dict[str, Any] = {"linger.ms": 50}


def _plain_config(settings: SinkSettings) -> dict[str, Any]:
    return {**PLAIN_PRODUCER_DEFAULTS, **settings.producer_config()}


def _transactional(settings: SinkSettings, partition: int) -> TransactionalProducer:
    """A new producer per task: registering the id fences any older attempt of this
    partition's task (in whatever worker it runs) and aborts what it left open, so the
    committed offset read next is final. Not cached: the partition's next task may run in
    another worker, whose new producer would fence a cached one here."""
    producer = TransactionalProducer(settings.producer_config(),
                                     settings.transactional_id(partition))
    producer.init()
    return producer


def _plain(settings: SinkSettings) -> PlainProducer:
    key = f"plain:{settings.guarantee}:{settings.group_id}"
    producer = _producers.get(key)
    if producer is None:
        exact = settings.guarantee == "at-least-once"
        producer = _producers[key] = PlainProducer(_plain_config(settings), idempotent=exact,
                                                  strict=exact)
    return producer


def _serde(settings: SinkSettings, group: GroupOffsets,
           partition: int) -> tuple[SinkSerde, Reset]:
    """The task's serde, and what it does at a DDL record that empties a table."""
    serde = SinkSerde(settings.router.sink_topics, settings.except_key, settings.with_headers)

    def reset(ddl: DdlRecord, ts_ms: int) -> list[SinkMessage]:
        changelog_partitions = len(group.partitions(settings.changelog_topic))
        return reset_messages(settings, serde, changelog_partitions, partition, ddl, ts_ms)

    return serde, reset


def committed_offsets(settings: SinkSettings) -> dict[int, int]:
    """The sink group's committed offset per changelog partition ({} when it has none)."""
    group = _group(settings)
    return group.committed(settings.changelog_topic, group.partitions(settings.changelog_topic))


# -- the task ----------------------------------------------------------------------------


@dataclass
class _Counters:
    partition: int = -1
    rows_in: int = 0
    rows_out: int = 0
    bytes_out: int = 0
    skipped: int = 0
    last_offset: int = -1
    commit_ms: float = 0.0
    max_event_ts_ms: int = 0
    per_table: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def write_partition(settings: SinkSettings, rows: Iterable[Any]) -> dict[str, Any]:
    """Write one changelog partition's records to the sinks.

    ``rows``: a :class:`~cdc_ingest.sink.changelog.ChangelogBatches` (what the Spark job
    passes), or any rows with ``partition``, ``offset``, ``key``, ``value``, in offset order.
    """
    batches = rows.columns() if isinstance(rows, ChangelogBatches) else row_columns(rows)
    first = next(batches, None)
    counters = _Counters()
    if first is None:
        return counters.as_dict()
    counters.partition = first[0]
    all_batches = chain([first], batches)
    if settings.guarantee == "exactly-once":
        _exactly_once(settings, counters, all_batches)
    else:
        _at_least_once(settings, counters, all_batches)
    return counters.as_dict()


# reset(ddl record, ts_ms) -> the tombstones of a table a DDL record emptied (sink/resets.py)
Reset = Callable[[DdlRecord, int], list[SinkMessage]]


def _chunks(
    settings: SinkSettings, serde: SinkSerde, counters: _Counters,
    batches: Iterator[tuple[int, Columns]], start: int, reset: Reset,
) -> Iterator[tuple[list[SinkMessage], int]]:  # fmt: skip
    """Records at or after ``start`` as (messages, last offset) chunks bounded in rows and
    time. The per-record loop: everything it can is looked up once, before it. A DDL record
    that empties a table is a chunk of its own, the table's tombstones, made only once the
    caller has committed the chunk before it (a generator resumes after the caller's work)."""
    add = serde.add
    monotonic = time.monotonic
    limit = settings.max_tx_rows
    if settings.buffer_max_rows:
        limit = min(limit, settings.buffer_max_rows)
    max_seconds = settings.max_tx_seconds
    partition = counters.partition
    messages: list[SinkMessage] = []
    began = monotonic()
    last = previous = -1
    pending = False  # records since the last chunk
    max_ts = counters.max_event_ts_ms
    for batch_partition, (offsets, keys, values) in batches:
        if batch_partition != partition:
            raise SinkError(
                f"one sink task got changelog partitions {partition} and {batch_partition}: "
                "each partition's range must be one task (exactly-once hop 2, "
                "docs/architecture.md)"
            )
        if offsets[0] <= previous:
            raise SinkError(
                f"changelog partition {partition}: offset {offsets[0]} came after {previous}; "
                "a task must get its range in offset order"
            )
        previous = offsets[-1]
        counters.rows_in += len(offsets)
        for offset, key, value in zip(offsets, keys, values, strict=True):
            if offset < start:
                counters.skipped += 1  # an earlier attempt already committed it
                continue
            try:
                ts = add(messages, key, value)
            except ValueError as exc:
                raise SinkError(
                    f"{settings.changelog_topic} partition {partition} offset {offset} is not "
                    f"a changelog record this sink can read: {exc}"
                ) from exc
            if ts > max_ts:  # noqa: PLR1730 - cheaper than calling max() per record
                max_ts = ts
            if key is None and serde.ddl is not None:  # DDL records alone have no key
                ddl, serde.ddl = serde.ddl, None
                log.info("changelog partition %d offset %d: DDL on %s.%s at binlog %s: %s",
                         partition, offset, ddl.db, ddl.table, ddl.pos, ddl.ddl[:300])
                if ddl.action in EMPTIES_TABLE:
                    counters.max_event_ts_ms = max_ts
                    if pending:
                        yield messages, last
                    yield reset(ddl, ts), offset
                    messages, began, last, pending = [], monotonic(), offset, False
                    continue
            last, pending = offset, True
            if len(messages) >= limit or monotonic() - began >= max_seconds:
                counters.max_event_ts_ms = max_ts
                yield messages, last
                messages, began, pending = [], monotonic(), False
    counters.max_event_ts_ms = max_ts
    if pending:
        yield messages, last


def _produce(producer: TransactionalProducer | PlainProducer, settings: SinkSettings,
             counters: _Counters, messages: list[SinkMessage]) -> None:
    if not messages:
        return
    if settings.buffer_max_rows:
        messages = last_per_key(messages)
    counters.bytes_out += produce(producer.send, _sink_topics(settings),
                                  settings.dead_letter_topic, messages, counters.per_table)
    counters.rows_out += len(messages)


def _exactly_once(
    settings: SinkSettings, counters: _Counters, batches: Iterator[tuple[int, Columns]]
) -> None:
    """Exactly-once hop 2 (docs/architecture.md) for one changelog partition."""
    partition = counters.partition
    # 1. Our transactional id for this partition; creating it fences older attempts.
    producer = _transactional(settings, partition)
    try:
        group = _group(settings)
        # 2. What earlier attempts committed: rows below it are already in the sink topics.
        start = group.committed(settings.changelog_topic, [partition]).get(partition, 0)
        serde, reset = _serde(settings, group, partition)
        for messages, last in _chunks(settings, serde, counters, batches, start, reset):
            # 3. One transaction: the sink records and the next input offset, or neither.
            producer.begin()
            try:
                _produce(producer, settings, counters, messages)
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
                raise_named(exc, messages)
                raise
            counters.last_offset = last
    finally:
        producer.close()


def _at_least_once(
    settings: SinkSettings, counters: _Counters, batches: Iterator[tuple[int, Columns]]
) -> None:
    """Produce, flush, then record progress in the group (skips what a commit covered)."""
    partition = counters.partition
    producer = _plain(settings)
    group = _group(settings)
    start = group.committed(settings.changelog_topic, [partition]).get(partition, 0)
    serde, reset = _serde(settings, group, partition)
    for messages, last in _chunks(settings, serde, counters, batches, start, reset):
        _produce(producer, settings, counters, messages)
        began = time.monotonic()
        producer.flush()
        group.commit(settings.changelog_topic, partition, last + 1)
        counters.commit_ms += (time.monotonic() - began) * 1000
        counters.last_offset = last
