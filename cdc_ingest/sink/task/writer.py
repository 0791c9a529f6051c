"""The sink's per-partition writer: one changelog partition's offset range -> sink topics.

Runs inside a Spark task (one task per changelog partition range, no shuffle before it). With
``exactly-once`` it is the consume-transform-produce of exactly-once hop 2
(docs/architecture.md). Clients are cached per Python worker process, except the transactional
producer, which is made per task: ``init_transactions`` takes a few milliseconds since it
connects eagerly (kafka/producer.py), and a new producer fences any older attempt wherever
it ran (decision 0003).

Failure contract: :func:`write_partition` either returns after everything it produced is
committed (transaction, or flush plus offset commit), or raises; a raised task leaves nothing
visible beyond what an earlier commit covered, and Spark's retry resumes after it.
"""

from __future__ import annotations

import atexit
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from itertools import chain
from typing import Any

from cdc_ingest.formats.change_events import EventSerde
from cdc_ingest.formats.event_routing import EventOptions
from cdc_ingest.formats.upsert_avro import AvroSinkSerde
from cdc_ingest.formats.upsert_json import (
    Serde,
    SinkMessage,
    SinkSerde,
    UpsertOptions,
    last_per_key,
)
from cdc_ingest.kafka import PlainProducer
from cdc_ingest.kafka.offsets import GroupOffsets
from cdc_ingest.model.changelog import REKEY_CUT, SWAP, SWAP_END, DdlRecord
from cdc_ingest.registry.avro_subjects import Registries
from cdc_ingest.sink.settings import SinkSettings, UpsertFormat
from cdc_ingest.sink.task.columns import Columns, Records, row_columns
from cdc_ingest.sink.task.layouts import SchemaTopicLayouts
from cdc_ingest.sink.task.metadata_parts import TxTally
from cdc_ingest.sink.task.produce import produce, raise_named
from cdc_ingest.sink.task.record_loop import Counters, Reset, chunks
from cdc_ingest.sink.task.rekey import Cutover
from cdc_ingest.sink.task.swaps import swap_end_messages, swap_messages
from cdc_ingest.sink.task.table_resets import reset_messages
from cdc_ingest.sink.task.topics import SinkTopics
from cdc_ingest.sink.transaction import Consumed, Send, SinkTransaction

REGISTER_THREADS = 8  # transactional ids registered at once (committed_offsets)

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
            settings.max_message_bytes, compact=isinstance(settings.format, UpsertFormat))
    return topics


# What the sink produces without a transaction is sent at the next flush anyway, which
# ignores linger.ms: a long linger costs no latency and makes fewer, larger produce requests
# (less broker CPU), as TransactionalProducer's own default does for exactly-once.
# ``properties.linger.ms`` wins.
PLAIN_PRODUCER_DEFAULTS: dict[str, Any] = {"linger.ms": 50}


def _plain_config(settings: SinkSettings) -> dict[str, Any]:
    return {**PLAIN_PRODUCER_DEFAULTS, **settings.producer_config()}


def _transaction(settings: SinkSettings, partition: int) -> SinkTransaction:
    """A new owner of the partition's transactional id per task, registered: that fences any
    older attempt of this partition's task (in whatever worker it runs) and aborts what it
    left open, so the committed offset read next is final. Not cached: the partition's next
    task may run in another worker, whose registration would fence a cached one here."""
    return SinkTransaction.registered(settings.producer_config(),
                                      settings.transactional_id(partition))


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
    upsert = settings.format
    if isinstance(upsert, EventOptions):
        return EventSerde(settings.router, upsert, settings.with_headers, settings.transforms,
                          SchemaTopicLayouts(settings.kafka, settings.schema_topic)
                          if upsert.typed else None)
    options = UpsertOptions(upsert.except_key, settings.with_headers, settings.transforms,
                            upsert.jackson_keys)
    if (avro := upsert.avro) is not None:
        return AvroSinkSerde(settings.router.sink_topics, options,
                             (avro.key is not None, avro.value is not None),
                             SchemaTopicLayouts(settings.kafka, settings.schema_topic),
                             Registries(avro))
    return SinkSerde(settings.router.sink_topics, options)


def _serde(settings: SinkSettings, group: GroupOffsets,
           partition: int) -> tuple[Serde, Reset]:
    """The task's serde, and what it does at a DDL record that empties a table or cuts
    over a re-keyed one."""
    serde = make_serde(settings)

    def reset(ddl: DdlRecord, ts_ms: int, offset: int) -> list[SinkMessage] | Cutover:
        if ddl.action == REKEY_CUT:
            return Cutover(settings, serde, partition, offset, ddl, ts_ms)
        changelog_partitions = len(group.partitions(settings.changelog_topic))
        if ddl.action == SWAP:
            return swap_messages(settings, serde, changelog_partitions, partition, ddl, ts_ms)
        if ddl.action == SWAP_END:
            return swap_end_messages(settings, serde, changelog_partitions, partition, ddl,
                                     ts_ms, offset)
        return reset_messages(settings, serde, changelog_partitions, partition, ddl, ts_ms)

    return serde, reset


def committed_offsets(settings: SinkSettings) -> dict[int, int]:
    """The sink group's committed offset per changelog partition ({} when it has none).

    With ``exactly-once`` each partition's transactional id is registered first, as a task
    does before its own read: that aborts a transaction an earlier sink left open (killed
    between sending its offsets and committing), whose pending offsets otherwise hold this
    read (read_committed, KIP-447) until the broker aborts it after transaction.timeout.ms,
    60 s, longer than the read waits.
    """
    group = _group(settings)
    partitions = group.partitions(settings.changelog_topic)
    if settings.guarantee == "exactly-once" and partitions:
        # each registration waits for the transaction coordinator: all at once
        with ThreadPoolExecutor(min(REGISTER_THREADS, len(partitions))) as pool:
            registered = [pool.submit(_transaction, settings, p) for p in partitions]
        failures = [exc for f in registered if (exc := f.exception()) is not None]
        for done in registered:
            if done.exception() is None:
                done.result().close()
        if failures:
            raise failures[0]
    return group.committed(settings.changelog_topic, partitions)


# -- the task ----------------------------------------------------------------------------


def write_partition(settings: SinkSettings, rows: Records | Iterable[Any]) -> Counters:
    """Write one changelog partition's records to the sinks; what it did.

    ``rows``: :class:`~cdc_ingest.sink.task.columns.Records` (what a Spark task and the head
    start pass), or any rows with ``partition``, ``offset``, ``key``, ``value``, in offset
    order.
    """
    batches = rows.columns() if isinstance(rows, Records) else row_columns(rows)
    first = next(batches, None)
    counters = Counters()
    if first is None:
        return counters
    counters.partition = first[0]
    all_batches = chain([first], batches)
    if settings.guarantee == "exactly-once":
        _exactly_once(settings, counters, all_batches)
    else:
        _at_least_once(settings, counters, all_batches)
    return counters


# write(settings, records) -> what it did: what a task runs (write_partition)
Writer = Callable[[SinkSettings, Records], Counters]


def _produce(send: Send, settings: SinkSettings, counters: Counters,
             out: list[SinkMessage] | Cutover, last: int = -1,
             tally: TxTally | None = None) -> int:
    """Send a chunk's messages; returns the last changelog offset they cover (a cutover
    reads past its record). ``tally``: counts them per MySQL transaction."""
    if isinstance(out, Cutover):
        for part in out.parts():
            _produce(send, settings, counters, part)
        return out.last
    if not out:
        return last
    if settings.buffer_max_rows:
        out = last_per_key(out)
    if tally is not None:
        tally.count(out)
    events = settings.format
    partition = events.partition if isinstance(events, EventOptions) else -1
    counters.bytes_out += produce(send, _sink_topics(settings),
                                  settings.dead_letter_topic, out, counters.per_table,
                                  partition)
    counters.rows_out += len(out)
    return last


def _exactly_once(
    settings: SinkSettings, counters: Counters, batches: Iterator[tuple[int, Columns]]
) -> None:
    """Exactly-once hop 2 (docs/architecture.md) for one changelog partition."""
    partition = counters.partition
    # Our transactional id for this partition; registering it fences older attempts.
    began = time.monotonic()
    tx = _transaction(settings, partition)
    counters.setup_ms = (time.monotonic() - began) * 1000
    try:
        group = _group(settings)
        # What earlier attempts committed: rows below it are already in the sink topics.
        start = group.committed(settings.changelog_topic, [partition]).get(partition, 0)
        serde, reset = _serde(settings, group, partition)
        tally = TxTally(partition) if settings.tx_parts_topic else None
        for messages, upto in chunks(settings, serde, counters, batches, start, reset,
                                     tally):
            # One transaction: the sink records, what they were of which MySQL transaction
            # (transaction metadata), and the next input offset.
            def fill(send: Send, messages: list[SinkMessage] | Cutover = messages,
                     upto: int = upto) -> tuple[int, Consumed]:
                last = _produce(send, settings, counters, messages, upto, tally)
                for part in tally.parts() if tally is not None else ():
                    send(settings.tx_parts_topic or "", part, None, partition=0)
                return last, Consumed(settings.changelog_topic, partition, last + 1,
                                      group.group_metadata())

            try:
                counters.last_offset = tx.write(fill)
            except BaseException as exc:
                raise_named(exc, messages if isinstance(messages, list) else [])
                raise
    finally:
        counters.commit_ms = tx.commit_s * 1000
        tx.close()


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
        last = _produce(producer.send, settings, counters, messages, upto)
        began = time.monotonic()
        producer.flush()
        group.commit(settings.changelog_topic, partition, last + 1)
        counters.commit_ms += (time.monotonic() - began) * 1000
        counters.last_offset = last
