"""The reader's committed offsets and their metadata strings, both ways.

A commit (``Assembler.commit_plan``) stores, in the consumer group:

- each sink partition: offset S, metadata ``cdc-ingest-tx/1 standalone-from=N``;
- the metadata topic's partition 0: offset M', metadata ``cdc-ingest-tx/1 yielded-to=M``.

A start reads them back into where each partition is read from. A partition without a commit
is read from its beginning; with ``new_only`` (a first start that wants only what comes next)
the ENDs already in the metadata topic count as handed out and the messages without a
transaction id already in the sink partitions are skipped. An offset committed by something
else (no such metadata) is taken to mean that everything below it was handled.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

log = logging.getLogger(__name__)

TP = tuple[str, int]

PREFIX = "cdc-ingest-tx/1"
STANDALONE_FROM = "standalone-from"
YIELDED_TO = "yielded-to"

# (offset, metadata) as the group holds it; None: no commit
Committed = tuple[int, str] | None


@dataclass(frozen=True, slots=True)
class PartitionStart:
    """Where a sink partition is read from. ``offset``: the first offset read (0: the
    beginning); ``standalone_from``: messages without a transaction id below it are not handed
    out (an earlier run did); ``end``: the partition's end when it was assigned (every message
    committed before the reader started is below it), None if unknown."""

    offset: int = 0
    standalone_from: int = 0
    end: int | None = None


@dataclass(frozen=True, slots=True)
class MetadataStart:
    """Where the metadata partition is read from; ``yielded_to`` (M): ENDs below it were
    handed out by an earlier run (None: none were)."""

    offset: int = 0
    yielded_to: int | None = None


@dataclass(frozen=True, slots=True)
class CommitPlan:
    """What to commit: per sink partition (S, N), and (M', M) for the metadata partition."""

    sink: dict[TP, tuple[int, int]]
    metadata: tuple[int, int]



def sink_metadata(standalone_from: int) -> str:
    return f"{PREFIX} {STANDALONE_FROM}={standalone_from}"


def metadata_metadata(yielded_to: int) -> str:
    return f"{PREFIX} {YIELDED_TO}={yielded_to}"


def parse(metadata: str, name: str) -> int | None:
    """The number ``name`` in a metadata string this reader wrote; None for another's."""
    words = metadata.split()
    if not words or words[0] != PREFIX:
        return None
    for word in words[1:]:
        key, _, value = word.partition("=")
        if key == name and value.isdigit():
            return int(value)
    return None


def partition_start(where: str, committed: Committed, end: int | None,
                    new_only: bool = False, now: int = 0) -> PartitionStart:
    """A sink partition's start; ``end``: its end now (every committed message is below it);
    ``now``: the offset where "new" begins (``new_only`` without a commit)."""
    if committed is None:
        return PartitionStart(0, now if new_only else 0, end)
    offset, metadata = committed
    standalone_from = parse(metadata, STANDALONE_FROM)
    if standalone_from is None:
        log.warning("%s: the committed offset %d carries no %s metadata (committed by another "
                    "consumer of the group?): reading on from it", where, offset, PREFIX)
        standalone_from = offset
    return PartitionStart(offset, standalone_from, end)


def metadata_start(where: str, committed: Committed, new_only: bool = False,
                   now: int = 0) -> MetadataStart:
    """The metadata partition's start; ``now``: its end now (``new_only`` without a commit)."""
    if committed is None:
        return MetadataStart(0, now if new_only else None)
    offset, metadata = committed
    yielded_to = parse(metadata, YIELDED_TO)
    if yielded_to is None:
        log.warning("%s: the committed offset %d carries no %s metadata (committed by another "
                    "consumer of the group?): ENDs below it count as handed out",
                    where, offset, PREFIX)
        yielded_to = offset
    return MetadataStart(offset, yielded_to)
