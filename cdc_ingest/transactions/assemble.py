"""Whole MySQL transactions out of sink messages and END records: the reader's pure logic.

Feed it what the consumer reads (``on_message`` for sink topics, ``on_metadata`` for the
metadata topic, in each partition's order) and ``take`` what is ready. A transaction is ready
when its END has been read and, for every data collection (sink topic) of the END, the
messages read with its ``transaction.id`` are exactly as many as the END counts; transactions
are handed out in END order, so a whole transaction waits for an earlier one that is not whole
yet. A message without a ``transaction.id`` (snapshot rows, DDL tombstones) is ready when read.

Resuming (``commit_plan``, and ``PartitionStart`` / ``MetadataStart`` built from what was
committed, cdc_ingest/transactions/resume.py): for each sink partition the commit is
S = the lowest offset of a message read but not handed out, else the next offset to read, with
N = the same over messages without a transaction id (those below N were handed out); for the
metadata partition it is M' = the lowest END offset among handed-out transactions that may
still have a message at or above S in some partition (else M), with M = the offset after the
last handed-out END. After a restart from there, an END below M was handed out before: its
messages, read again, are dropped.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field

from cdc_ingest.kafka.consumer import Message
from cdc_ingest.transactions.model import (
    End,
    Item,
    Standalone,
    Transaction,
    TransactionContractError,
    TxMessage,
    parse_end,
    standalone,
    transaction_id,
    tx_message,
)
from cdc_ingest.transactions.resume import TP, CommitPlan, MetadataStart, PartitionStart

log = logging.getLogger(__name__)

BUFFER_WARNING = 100_000


@dataclass(slots=True)
class _Pending:
    messages: list[TxMessage] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    end: End | None = None


@dataclass(frozen=True, slots=True)
class _Done:
    """A transaction handed out (or, ``replayed``, by an earlier run) whose messages may still
    be read: ``maxima``, its highest offset per partition (unknown for a replayed one)."""

    end_offset: int
    topics: tuple[str, ...]
    maxima: dict[TP, int]
    replayed: bool


class Assembler:
    def __init__(self, metadata: MetadataStart | None = None) -> None:
        self._meta = metadata or MetadataStart()
        self._meta_next: int | None = None
        self._yielded_to = self._meta.yielded_to
        self._starts: dict[TP, PartitionStart] = {}
        self._next: dict[TP, int] = {}
        self._pending: dict[str, _Pending] = {}
        self._order: deque[str] = deque()  # ENDs read, not yet whole, in END order
        self._ready: deque[Item] = deque()
        self._released: set[str] = set()  # whole, in _ready
        self._done: dict[str, _Done] = {}
        self._prune_at = 10_000
        self.buffered = 0
        self._warned = False

    # -- input -------------------------------------------------------------------------

    def add_partition(self, topic: str, partition: int, start: PartitionStart) -> None:
        self._starts[(topic, partition)] = start
        self._next.setdefault((topic, partition), start.offset)

    def partitions(self) -> set[TP]:
        return set(self._starts)

    def on_message(self, m: Message) -> None:
        """One sink message, in its partition's order."""
        tp = (m.topic, m.partition)
        start = self._starts.get(tp) or PartitionStart()
        self._next[tp] = max(self._next.get(tp, start.offset), m.offset + 1)
        tx_id = transaction_id(m)
        if tx_id is None:
            if m.offset >= start.standalone_from:
                self._ready.append(standalone(m))
            return
        if tx_id in self._done or tx_id in self._released:
            done = self._done.get(tx_id)
            if done is None or not done.replayed:
                log.warning("%s partition %d offset %d: transaction %s was handed out whole "
                            "already; a message more than its END counts is dropped",
                            m.topic, m.partition, m.offset, tx_id)
            return
        pending = self._pending.setdefault(tx_id, _Pending())
        pending.messages.append(tx_message(m, tx_id))
        pending.counts[m.topic] = pending.counts.get(m.topic, 0) + 1
        self._count(1)
        if pending.end is not None:
            _check(tx_id, pending)
            self._release()

    def on_metadata(self, m: Message) -> End | None:
        """One record of the metadata topic, in its order; returns the END it holds."""
        self._meta_next = max(self._meta_next or 0, m.offset + 1)
        end = parse_end(m)
        if end is None:
            return None
        if self._yielded_to is not None and end.offset < self._yielded_to:
            dropped = self._pending.pop(end.id, None)
            if dropped is not None:
                self._count(-len(dropped.messages))
            self._done[end.id] = _Done(end.offset, tuple(end.counts), {}, replayed=True)
            return end
        pending = self._pending.setdefault(end.id, _Pending())
        if pending.end is not None or end.id in self._released or end.id in self._done:
            raise TransactionContractError(
                f"{m.topic} offset {end.offset}: a second END of transaction {end.id}")
        pending.end = end
        self._order.append(end.id)
        _check(end.id, pending)
        self._release()
        return end

    def advance(self, topic: str, partition: int, position: int) -> None:
        """The consumer's position in a sink partition: past commit markers and aborted
        records, which no message shows."""
        tp = (topic, partition)
        if tp in self._starts:
            self._next[tp] = max(self._next.get(tp, 0), position)

    def advance_metadata(self, position: int) -> None:
        self._meta_next = max(self._meta_next or 0, position)

    # -- output ------------------------------------------------------------------------

    def take(self) -> Item | None:
        """The next item ready, now counted as handed out; None if none is."""
        if not self._ready:
            return None
        item = self._ready.popleft()
        if isinstance(item, Transaction):
            self._released.discard(item.id)
            self._yielded_to = item.end_offset + 1
            maxima: dict[TP, int] = {}
            for m in item.messages:
                maxima[(m.topic, m.partition)] = max(
                    maxima.get((m.topic, m.partition), -1), m.offset)
            self._done[item.id] = _Done(item.end_offset, tuple(item.data_collections), maxima,
                                        replayed=False)
            if len(self._done) > self._prune_at:
                self.commit_plan()  # forgets what can no longer be read again
                self._prune_at = 2 * len(self._done) + 10_000
        return item

    @property
    def ready(self) -> bool:
        return bool(self._ready)

    @property
    def metadata_start(self) -> MetadataStart:
        return self._meta

    @property
    def replaying(self) -> bool:
        """ENDs an earlier run handed out are still to be read again."""
        return self._yielded_to is not None and self._meta_position() < self._yielded_to

    def head(self) -> tuple[End, dict[str, int]] | None:
        """The oldest END not yet whole, and the messages read for it per topic."""
        if not self._order:
            return None
        pending = self._pending[self._order[0]]
        assert pending.end is not None
        return pending.end, dict(pending.counts)

    def commit_plan(self) -> CommitPlan:
        """The offsets (and metadata) that resume exactly after what was handed out; forgets
        handed-out transactions none of whose messages can be read again."""
        low: dict[TP, int] = {}
        alone: dict[TP, int] = {}
        for pending in self._pending.values():
            _lowest(low, pending.messages)
        for item in self._ready:
            if isinstance(item, Standalone):
                _lowest(low, [item])
                _lowest(alone, [item])
            else:
                _lowest(low, item.messages)
        sink = {}
        for tp, start in self._starts.items():
            nxt = self._next.get(tp, start.offset)
            sink[tp] = (low.get(tp, nxt), max(alone.get(tp, nxt), start.standalone_from))
        yielded_to = self._meta.offset if self._yielded_to is None else self._yielded_to
        candidates = [yielded_to, self._meta_position()]
        for tx_id, done in list(self._done.items()):
            if self._may_come_again(done, sink):
                candidates.append(done.end_offset)
            else:
                del self._done[tx_id]
        return CommitPlan(sink, (min(candidates), yielded_to))

    # -- inside ------------------------------------------------------------------------

    def _meta_position(self) -> int:
        return self._meta.offset if self._meta_next is None else self._meta_next

    def _may_come_again(self, done: _Done, sink: dict[TP, tuple[int, int]]) -> bool:
        if not done.replayed:
            return any(offset >= sink.get(tp, (0, 0))[0] for tp, offset in done.maxima.items())
        # An earlier run's transaction: its messages were all committed before this run
        # started, so below each partition's end at assignment.
        for topic in done.topics:
            parts = [tp for tp in self._starts if tp[0] == topic]
            if not parts:
                return True
            for tp in parts:
                end = self._starts[tp].end
                if end is None or sink[tp][0] < end:
                    return True
        return False

    def _release(self) -> None:
        while self._order and _whole(self._pending[self._order[0]]):
            tx_id = self._order.popleft()
            pending = self._pending.pop(tx_id)
            end = pending.end
            assert end is not None
            self._count(-len(pending.messages))
            # binlog order; of a key-changing UPDATE's two messages (one row change, one
            # number) the old key's tombstone first, as MySQL changed it; then read order
            messages = sorted(pending.messages,
                              key=lambda m: (m.total_order, m.value is not None))
            self._ready.append(Transaction(end.id, end.ts_ms, end.event_count,
                                           dict(end.counts), messages, end.offset))
            self._released.add(tx_id)

    def _count(self, n: int) -> None:
        self.buffered += n
        if self.buffered > BUFFER_WARNING and not self._warned:
            self._warned = True
            head = self.head()
            log.warning("%d messages are buffered waiting for their transactions' END records "
                        "or for the rest of their messages (the oldest END waiting: %s)",
                        self.buffered, head[0].id if head else "none")
        elif self.buffered < BUFFER_WARNING // 2:
            self._warned = False


def _check(tx_id: str, pending: _Pending) -> None:
    end = pending.end
    assert end is not None
    for topic, n in pending.counts.items():
        if n > end.counts.get(topic, 0):
            raise TransactionContractError(
                f"transaction {tx_id} (END at metadata offset {end.offset}): {n} messages "
                f"read in {topic}, its END counts {end.counts.get(topic, 0)} there "
                f"(END: {end.counts})")


def _whole(pending: _Pending) -> bool:
    end = pending.end
    return end is not None and all(pending.counts.get(t, 0) == n for t, n in end.counts.items())


def _lowest(low: dict[TP, int], messages: list[TxMessage] | list[Standalone]) -> None:
    for m in messages:
        tp = (m.topic, m.partition)
        if m.offset < low.get(tp, m.offset + 1):
            low[tp] = m.offset
