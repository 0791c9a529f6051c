"""What every phase of one capture run works with, and how a phase says it ended.

A run (capture/runner.py) builds one :class:`CaptureContext` and hands it to each phase
(snapshot, binlog, re-key) instead of their collaborators one by one. A phase returns an
outcome instead of a flag: :class:`Done` (go on, with the chunk filter the binlog phase
needs), :class:`Stopped` (asked to stop, or a request arrived, before the end),
:class:`RekeyRequested` (the binlog phase met a table whose key changed, under
``schema.change.behavior: evolve``), :class:`TablesArrived` (a rename gave captured names to
tables whose rows must be snapshotted); the runner turns a stop that a request caused, and
an arrival, into
:class:`SnapshotRequested`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cdc_ingest.capture.options import CaptureOptions
from cdc_ingest.capture.schema_guard import RekeyNeeded, SchemaGuard
from cdc_ingest.capture.snapshot.filter import ChunkFilter
from cdc_ingest.capture.snapshot.reader import Snapshotter
from cdc_ingest.capture.transaction import ChangelogTransaction
from cdc_ingest.mysql import Catalog


@dataclass(frozen=True)
class CaptureContext:
    options: CaptureOptions
    catalog: Catalog  # the source's metadata (one connection)
    tx: ChangelogTransaction  # the only writer of capture's Kafka transactions
    schemas: SchemaGuard  # what the schema topic says of each table, and what it may say
    partitions: int  # the changelog topic's
    stopping: Callable[[], bool]  # a stop was asked for, or a request arrived

    def snapshotter(self, index: int) -> Snapshotter:
        """Snapshot reader ``index`` (0 .. snapshot_parallelism - 1), with its own
        connections; its windows replicate as server-id ``snapshot_server_id + index``, an
        id of the configured range (ServerIdRange.capture_ids). The planner is a reader 0
        too: it plans chunks and never replicates, so the id is never used twice at once."""
        o = self.options
        assert 0 <= index < o.snapshot_parallelism, index
        return Snapshotter(o.connection, o.snapshot_server_id + index, o.key_columns,
                           o.tinyint1_as_boolean, o.chunk_size, o.fetch_size)


@dataclass(frozen=True)
class Done:
    """The phase finished. ``chunk_filter``: what the binlog phase drops because snapshot
    rows hold it already (None: nothing)."""

    chunk_filter: ChunkFilter | None = None


@dataclass(frozen=True)
class Stopped:
    """Asked to stop (or a request arrived) before the phase's end; what it committed is
    where the next run goes on."""


@dataclass(frozen=True)
class RekeyRequested:
    """A captured table's key changed under ``evolve``; everything before it is committed."""

    change: RekeyNeeded


@dataclass(frozen=True)
class TablesArrived:
    """The binlog phase read a ``RENAME TABLE`` that gave captured names to tables with rows:
    the position past it, committed, holds a snapshot of them (capture/binlog_phase.py)."""

    tables: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class SnapshotRequested:
    """A run ended to take a request from the signal topic (capture/signals.py)."""


PhaseOutcome = Done | Stopped | RekeyRequested
