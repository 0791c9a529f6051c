"""``TransactionReader``: the sink topics and the transaction metadata topic read
read_committed, handed out as whole MySQL transactions in commit order (the pure logic is
cdc_ingest/transactions/assemble.py, the commits' format resume.py)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import Any

from cdc_ingest.kafka.assigned import TP, AssignedConsumer
from cdc_ingest.transactions import resume
from cdc_ingest.transactions.assemble import Assembler
from cdc_ingest.transactions.model import Item

log = logging.getLogger(__name__)

REFRESH_S = 5.0  # how often topics that do not exist yet are looked for again
STALL_WARNING_S = 60.0  # the oldest END waits this long for its messages: a warning


class TransactionReader:
    """Whole MySQL transactions from a pipeline's sink topics, in commit order.

    ``topics``: the sink topics to read (a topic an END names is added when read);
    ``metadata_topic``: the pipeline's ``sink.transaction-metadata.topic`` (partition 0);
    ``group_id``: the consumer group whose committed offsets it resumes from and ``commit``
    commits to; None: no commits, every start reads from the beginning. ``new_only``: when
    the group has committed nothing yet (or without a group), hand out only the transactions
    whose END is committed after the reader starts, and only the messages without a
    transaction id written after it (the topics are still read from their beginning, to find
    the messages of those transactions).

    Iterate it (forever; one item at a time), or call ``poll(timeout)`` for the items ready
    (all of them count as handed out). Items: ``Transaction`` and ``Standalone``.
    """

    def __init__(self, kafka_config: dict[str, Any], topics: list[str], metadata_topic: str,
                 group_id: str | None = None, *, new_only: bool = False) -> None:
        self._consumer = AssignedConsumer(kafka_config, group_id)
        self.metadata_topic = metadata_topic
        self._meta_tp: TP = (metadata_topic, 0)
        self._wanted: list[str] = list(dict.fromkeys(topics))
        self._assigned: set[str] = set()
        self._paused: list[TP] = []
        self._head: tuple[str, float] | None = None
        self._refreshed = 0.0
        self._closed = False
        try:
            known = {t: self._consumer.partitions(t) for t in [metadata_topic, *self._wanted]}
            committed = self._consumer.committed([self._meta_tp]).get(self._meta_tp)
            self._new_only = new_only and committed is None
            now = 0
            if self._new_only and known[metadata_topic] is not None:
                now = self._consumer.ends([self._meta_tp], stable=True)[self._meta_tp]
            self._assembler = Assembler(resume.metadata_start(
                f"{metadata_topic} partition 0", committed, self._new_only, now))
            self._missing_at_start = {t for t, parts in known.items() if parts is None}
            self._refresh(known)
        except BaseException:
            self._consumer.close()
            raise

    # -- reading -------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Item]:
        while True:
            item = self._assembler.take()
            if item is None:
                self._fill(1.0)
            else:
                yield item

    def poll(self, timeout: float = 1.0) -> list[Item]:
        """The items ready within ``timeout`` seconds (an empty list if none), in order; all
        of them count as handed out for ``commit``."""
        self._fill(timeout)
        items = []
        while (item := self._assembler.take()) is not None:
            items.append(item)
        return items

    def commit(self) -> None:
        """Commit, synchronously, what has been handed out: a reader of the same group started
        after this goes on with the next item, nothing handed out again and nothing lost."""
        plan = self._assembler.commit_plan()
        offsets = {tp: (s, resume.sink_metadata(n)) for tp, (s, n) in plan.sink.items()}
        if self.metadata_topic in self._assigned:
            first, yielded_to = plan.metadata
            offsets[self._meta_tp] = (first, resume.metadata_metadata(yielded_to))
        if offsets:
            self._consumer.commit(offsets)

    @property
    def buffered(self) -> int:
        """Messages read and held for transactions not handed out yet."""
        return self._assembler.buffered

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._consumer.close()

    def __enter__(self) -> TransactionReader:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- inside --------------------------------------------------------------------------

    def _fill(self, timeout: float) -> None:
        """Read until an item is ready or ``timeout`` has passed."""
        deadline = time.monotonic() + timeout
        while not self._assembler.ready:
            if time.monotonic() - self._refreshed > REFRESH_S:
                self._refresh()
            left = deadline - time.monotonic()
            messages, at_end = self._consumer.poll(max(0.0, min(left, 0.5)))
            for m in messages:
                if (m.topic, m.partition) == self._meta_tp:
                    end = self._assembler.on_metadata(m)
                    if end is not None:
                        self._want(end.counts)
                else:
                    self._assembler.on_message(m)
            self._advance()
            if self._paused and (not self._assembler.replaying or self._meta_tp in at_end):
                self._consumer.resume(self._paused)
                self._paused = []
            self._watch_head()
            if time.monotonic() >= deadline:
                return

    def _advance(self) -> None:
        parts = [*self._assembler.partitions()]
        if self.metadata_topic in self._assigned:
            parts.append(self._meta_tp)
        for (topic, partition), position in self._consumer.positions(parts).items():
            if (topic, partition) == self._meta_tp:
                self._assembler.advance_metadata(position)
            else:
                self._assembler.advance(topic, partition, position)

    def _want(self, topics: Iterable[str]) -> None:
        new = [t for t in topics if t not in self._wanted]
        if new:
            log.info("reading %s too: named by an END record", ", ".join(new))
            self._wanted += new
            self._refresh()

    def _refresh(self, known: dict[str, list[int] | None] | None = None) -> None:
        """Assign the metadata partition and the wanted topics that exist now (``known``:
        partitions looked up a moment ago)."""
        self._refreshed = time.monotonic()
        known = known or {}

        def partitions(topic: str) -> list[int] | None:
            return known[topic] if topic in known else self._consumer.partitions(topic)

        if self.metadata_topic not in self._assigned and partitions(
                self.metadata_topic) is not None:
            start = self._assembler.metadata_start
            self._consumer.assign({self._meta_tp: start.offset or None})
            self._assigned.add(self.metadata_topic)
        found = {}
        for topic in self._wanted:
            if topic not in self._assigned and topic != self.metadata_topic:
                parts = partitions(topic)
                if parts is not None:
                    found[topic] = parts
        if found:
            self._assign(found)

    def _assign(self, found: dict[str, list[int]]) -> None:
        """Read the topics' partitions from the group's commits (or as a first start does)."""
        parts = [(topic, p) for topic, ps in found.items() for p in ps]
        committed = self._consumer.committed(parts)
        ends = self._consumer.ends(parts, stable=False)
        fresh = [tp for tp in parts if self._new_only and tp[0] not in self._missing_at_start]
        now = self._consumer.ends(fresh, stable=True) if fresh else {}
        starts: dict[TP, int | None] = {}
        for tp in parts:
            start = resume.partition_start(f"{tp[0]} partition {tp[1]}", committed.get(tp),
                                           ends[tp], tp in now, now.get(tp, 0))
            self._assembler.add_partition(tp[0], tp[1], start)
            starts[tp] = start.offset or None
        self._consumer.assign(starts)
        self._assigned.update(found)
        if self._assembler.replaying:
            # the ENDs handed out before first: their messages are then dropped as read
            self._consumer.pause(parts)
            self._paused += parts

    def _watch_head(self) -> None:
        head = self._assembler.head()
        if head is None:
            self._head = None
            return
        end, counts = head
        if self._head is None or self._head[0] != end.id:
            self._head = (end.id, time.monotonic())
        elif time.monotonic() - self._head[1] > STALL_WARNING_S:
            self._head = (end.id, float("inf"))  # once per transaction
            log.warning(
                "transaction %s (END at %s offset %d) has waited %.0f s for its messages: read "
                "%s of %s. Later transactions wait behind it. Causes: a topic it names "
                "cannot be read, or its messages are gone (a compacted or expired sink topic "
                "read from an old offset)", end.id, self.metadata_topic, end.offset,
                STALL_WARNING_S, counts, end.counts)
