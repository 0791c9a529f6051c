"""The capture process: binlog -> changelog topic, exactly once.

It reads as its topology: topics ready, transactional id registered (fencing whatever a
killed predecessor left open), the position to start from, the snapshot phase while one is
unfinished, then the binlog phase until stopped (re-keying a table in place when its key
changes under ``evolve``). Each phase gets the run's
:class:`~cdc_ingest.capture.context.CaptureContext` and writes through its
:class:`~cdc_ingest.capture.transaction.ChangelogTransaction` (exactly-once hop 1), and
returns how it ended.
"""

from __future__ import annotations

import logging
import signal
import time
from types import FrameType
from typing import Any

from cdc_ingest import metrics
from cdc_ingest.capture.binlog import BinlogReader, Replica
from cdc_ingest.capture.binlog_phase import BinlogPhase
from cdc_ingest.capture.context import (
    CaptureContext,
    Done,
    RekeyRequested,
    SnapshotRequested,
    Stopped,
    TablesArrived,
)
from cdc_ingest.capture.decoder import decoder_kind
from cdc_ingest.capture.options import CaptureOptions
from cdc_ingest.capture.positions import PositionStore
from cdc_ingest.capture.progress import Progress
from cdc_ingest.capture.rekey import Rekeying
from cdc_ingest.capture.resume import MySqlTxTracker, same_server, start_position
from cdc_ingest.capture.schema_guard import SchemaGuard, read_schema_topic
from cdc_ingest.capture.signals import SignalWatch, adding_waits, take_requests
from cdc_ingest.capture.snapshot.filter import ChunkFilter
from cdc_ingest.capture.snapshot.phase import SnapshotPhase
from cdc_ingest.capture.snapshot.state import SnapshotState
from cdc_ingest.capture.snapshot_control import refuse_while_paused
from cdc_ingest.capture.transaction import ChangelogTransaction, Limits
from cdc_ingest.kafka import TopicAdmin, TopicSpec, TransactionalProducer, fence
from cdc_ingest.kafka.admin import FIRST_CONTACT_S
from cdc_ingest.kafka.errors import KafkaAccessDenied
from cdc_ingest.kafka.limits import message_limit
from cdc_ingest.model import Position
from cdc_ingest.mysql import Catalog, TableFacts

log = logging.getLogger(__name__)

LOG_INTERVAL_S = 10.0  # the periodic progress line


class Capture:
    def __init__(self, options: CaptureOptions) -> None:
        self.options = options
        self._stop = False
        self._catalog = Catalog(options.connection, options.key_columns, options.connect_retries)
        # The changelog is internal: lz4 by default (decision 0012);
        # properties.compression.type overrides it.
        # The largest row the server accepts fits in a record (cdc_ingest.kafka.limits).
        packet = self._catalog.variable("max_allowed_packet")
        self._max_message_bytes = message_limit(int(packet or 0))
        producer = TransactionalProducer(
            {"compression.type": "lz4", "message.max.bytes": self._max_message_bytes,
             **options.kafka}, options.transactional_id)
        self._tx = ChangelogTransaction(
            producer, PositionStore(options.kafka, options.offsets_topic),
            options.changelog_topic, options.schema_topic, options.notification_topic,
            Limits(options.max_rows, options.max_interval_s, options.heartbeat_s))
        self._watch: SignalWatch | None = None

    def request_stop(self, signum: int = 0, frame: FrameType | None = None) -> None:
        log.info("stop requested (signal %s): finishing the open transaction", signum)
        self._stop = True

    def stopping(self) -> bool:
        return self._stop or (self._watch is not None and self._watch.arrived.is_set())

    def run(self) -> None:
        """Capture until stopped. Raises FencedError when another capture takes over."""
        o = self.options
        metrics.serve(o.metrics_port)
        metrics.SOURCE_CONNECTED.set(1)  # the catalog connected in __init__
        partitions = self._prepare_topics()
        # Registering the transactional id aborts whatever a killed predecessor left open,
        # so the position read next is the last one that really committed.
        self._tx.register()
        if o.old_transactional_id is not None:
            fence_old_capture(o.kafka, o.old_transactional_id)
        try:
            # A snapshot request (capture/signals.py) ends a run; the next one takes it.
            while (isinstance(self._run_once(partitions), SnapshotRequested)
                   and not self._stop):
                log.info("starting over from the committed position to take the request")
        finally:
            self._catalog.close()

    def _run_once(self, partitions: int) -> Stopped | SnapshotRequested:
        """One run from the committed position, until stopped or a request arrives."""
        tx = self._tx
        committed = tx.load_position()
        start, skip_before_s = start_position(self.options, committed, self._catalog,
                                              lambda: adding_waits(self.options, committed))
        # capture runs with the selection committed: an add-table signal changes it
        selection = start.tables
        start, notes = take_requests(self.options.selected(selection), start, self._catalog)
        if start.tables != selection:  # taken in: from now on this process's selection
            self.options = self.options.selected(start.tables)
        o = self.options.selected(start.tables)
        waiting = self._watch_signals(start)
        tx.start_run(start)
        for note in notes:  # committed with the position past their signals
            tx.notification(o.pipeline.encode(), note, int(time.time() * 1000))
        guard = SchemaGuard(tx, read_schema_topic(o.kafka, o.schema_topic),
                            o.schema_change_behavior, o.tinyint1_as_boolean)
        if not tx.resumed:
            guard.forget_all()  # what an earlier pipeline of this name left there
        ctx = CaptureContext(o, self._catalog, tx, guard, partitions, self.stopping)
        rekeying = Rekeying(ctx)
        snapshot = Done()
        if start.snapshot is not None:
            unfinished = SnapshotState.from_json(start.snapshot)
            outcome = self._snapshot_phase(ctx, rekeying, unfinished)
            if isinstance(outcome, Stopped):
                return self._ended()
            if waiting:  # requests that waited for this snapshot or re-key: take them now
                tx.commit()  # what this run took (a paused or stopped snapshot reads none)
                return SnapshotRequested()
            snapshot = outcome
        binlog = BinlogPhase(ctx, MySqlTxTracker(tx.position, skip_before_s),
                             Progress(LOG_INTERVAL_S, self._catalog), snapshot.chunk_filter)

        replica = Replica(o.connection, o.server_id, self._catalog.is_mariadb,
                          min(o.heartbeat_s, max(o.max_interval_s, 1.0)))

        def open_reader(at: Position) -> BinlogReader:
            return BinlogReader(replica, at, o.captured, self._table_facts,
                                stopping=self.stopping, idle=binlog.idle)

        log.info("capture %s starts at %s (row decoder: %s, transactional id %s)", o.pipeline,
                 tx.position.describe() or "binlog head", decoder_kind(), o.transactional_id)
        # a re-key (schema.change.behavior: evolve) runs with the binlog closed, which is
        # then read again from the committed position
        while isinstance(ended := binlog.run(open_reader, o.connect_retries), RekeyRequested):
            change = ended.change
            refuse_while_paused(tx.position.snapshot, f"the key change of {change.db}."
                                f"{change.table} (schema.change.behavior: evolve)",
                                change.where)
            rekeyed = rekeying.start(ended.change, binlog.chunk_filter)
            if isinstance(rekeyed, Stopped):
                tx.commit()
                break
            binlog.rekeyed(rekeyed.chunk_filter)
        if isinstance(ended, TablesArrived) and not self._stop:
            self._ended()
            return SnapshotRequested()  # the next run snapshots them
        log.info("capture stopped at %s", tx.committed.describe())
        return self._ended()

    def _snapshot_phase(self, ctx: CaptureContext, rekeying: Rekeying,
                        state: SnapshotState) -> Done | Stopped:
        """The unfinished snapshot (or re-key) the committed position holds."""
        o = self.options
        same_server(state, self._catalog)
        if state.rekey is not None:  # a re-key to finish before the binlog goes on
            outcome = rekeying.finish(state)
            if isinstance(outcome, Stopped):
                log.info("re-key interrupted; the next start finishes it")
            return outcome
        planner = ctx.snapshotter(0)
        if state.done:
            return Done(ChunkFilter(state, planner.info))
        if state.paused and o.startup.mode != "snapshot":
            log.info("snapshot paused (%d chunk(s) committed, %s left): the binlog goes on; "
                     "cdc-ingest resume-snapshot reads on", len(state.chunks),
                     ", ".join(".".join(t) for t in state.tables[state.table:]) or "repairs")
            return Done(ChunkFilter(state, planner.info))
        if state.chunks and state.table < len(state.tables):
            db, table = state.tables[state.table]
            log.info("snapshot goes on at %s.%s after key %s (%d chunk(s) committed)",
                     db, table, state.after, len(state.chunks))
        outcome = SnapshotPhase(ctx, planner, ctx.partitions).run(state)
        if isinstance(outcome, Stopped) or self.stopping() or o.startup.mode == "snapshot":
            log.info("snapshot %s", "done; stopping (scan.startup.mode: snapshot)"
                     if state.done else "interrupted")
            return Stopped()
        return outcome

    def _watch_signals(self, start: Position) -> bool:
        """Watch for requests after those ``start`` took; True when some are waiting."""
        if self._watch is not None:
            self._watch.close()
        self._watch = SignalWatch(self.options.kafka, self.options.signal_topic)
        return self._watch.seen > start.signals

    def _ended(self) -> Stopped | SnapshotRequested:
        """How a run ended: to take a request that arrived, or stopped."""
        arrived = self._watch is not None and self._watch.arrived.is_set()
        if self._watch is not None:
            self._watch.close()
            self._watch = None
        return SnapshotRequested() if arrived and not self._stop else Stopped()

    def _table_facts(self, db: str, table: str) -> TableFacts:
        facts = self._catalog.table_facts(db, table)
        return facts if self.options.tinyint1_as_boolean else facts._replace(booleans=frozenset())

    def _prepare_topics(self) -> int:
        """The changelog and the internal topics exist; returns the changelog's partitions."""
        o = self.options
        admin = TopicAdmin(o.kafka, first_contact_s=FIRST_CONTACT_S)
        counts = admin.ensure_all([
            TopicSpec(o.changelog_topic, o.partitions, o.replication_factor,
                      {"max.message.bytes": str(self._max_message_bytes)}),
            *(TopicSpec(internal, 1, o.replication_factor, {"cleanup.policy": "compact"})
              for internal in (o.offsets_topic, o.schema_topic, o.signal_topic)),
            TopicSpec(o.notification_topic, 1, o.replication_factor, {}),  # a log: kept
        ])
        return counts[o.changelog_topic]


def install_signal_handlers(capture: Capture) -> None:
    signal.signal(signal.SIGTERM, capture.request_stop)
    signal.signal(signal.SIGINT, capture.request_stop)


def fence_old_capture(kafka: dict[str, Any], transactional_id: str) -> None:
    """Fence the id an earlier release gave capture for this pipeline's name, so a capture of
    that release still running stops, and a transaction it left open no longer holds back
    the position read next. A principal refused the id never wrote under it."""
    try:
        fence(kafka, [transactional_id])
    except KafkaAccessDenied:
        log.debug("not fencing %s: this principal may not use it", transactional_id)
        return
    log.info("fenced %s, the transactional id earlier releases gave capture", transactional_id)
