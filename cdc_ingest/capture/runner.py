"""The capture process: binlog -> changelog topic, exactly once (DESIGN section 5, hop 1)."""

from __future__ import annotations

import logging
import queue
import signal
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from types import FrameType
from typing import Any

from confluent_kafka import KafkaException

from cdc_ingest import metrics
from cdc_ingest.capture.binlog import (
    BinlogReader,
    ConnectionSettings,
    Ddl,
    Heartbeat,
    ReplicaTakenOver,
    Rows,
    TxBegin,
    TxCommit,
    advance_gtid_set,
)
from cdc_ingest.capture.catalog import Catalog, KeyColumns
from cdc_ingest.capture.changes import (
    KeyPlan,
    TableEncoder,
    ddl_message,
    snapshot_message,
    table_encoder,
)
from cdc_ingest.capture.ddl import tables_of
from cdc_ingest.capture.decoder import decoder_kind
from cdc_ingest.capture.positions import PositionStore
from cdc_ingest.capture.progress import Progress
from cdc_ingest.capture.schema import TableSchema
from cdc_ingest.capture.snapshot import (
    Chunk,
    ChunkFilter,
    ChunkRows,
    SnapshotProgress,
    SnapshotState,
    Snapshotter,
)
from cdc_ingest.capture.startup import StartupSpec, resolve_start
from cdc_ingest.errors import PositionPurgedError, SourceError
from cdc_ingest.kafka import TopicAdmin, TopicSpec, TransactionalProducer
from cdc_ingest.model import Position

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CaptureOptions:
    pipeline: str
    connection: ConnectionSettings
    server_id: int
    kafka: dict[str, Any] = field(repr=False)
    changelog_topic: str
    offsets_topic: str
    partitions: int
    captured: Callable[[str, str], bool]
    startup: StartupSpec
    key_columns: KeyColumns | None = None
    max_rows: int = 5000
    max_interval_s: float = 1.0
    heartbeat_s: float = 30.0
    connect_retries: int = 3
    log_interval_s: float = 10.0
    replication_factor: int = 1
    tinyint1_as_boolean: bool = True
    transactional_id_prefix: str = ""
    metrics_port: int | None = None
    snapshot_server_id: int = 0
    chunk_size: int = 8096
    fetch_size: int = 1024
    snapshot_parallelism: int = 1

    @property
    def transactional_id(self) -> str:
        return f"{self.transactional_id_prefix or 'cdc-ingest.' + self.pipeline}.capture"


class _Batch:
    """What the open Kafka transaction holds."""

    def __init__(self) -> None:
        self.rows = 0
        self.started = time.monotonic()
        self.open = False


class Capture:
    def __init__(self, options: CaptureOptions) -> None:
        self.o = options
        self._stop = False
        self._catalog = Catalog(options.connection, options.key_columns, options.connect_retries)
        # The changelog is internal: lz4 halves the broker's CPU for it (measured), costs
        # capture little; properties.compression.type overrides it.
        self._producer = TransactionalProducer(
            {"compression.type": "lz4", **options.kafka}, options.transactional_id)
        self._store = PositionStore(options.kafka, options.offsets_topic)
        self._plans: dict[int, tuple[TableSchema, KeyPlan]] = {}
        self._encoders: dict[int, tuple[TableSchema, TableEncoder]] = {}
        self._batch = _Batch()
        self._progress = Progress(options.log_interval_s, self._catalog)
        # Where capture stands: what the next position record will say.
        self._pos = Position()
        self._committed = Position()
        self._last_commit = time.monotonic()
        self._tx: TxBegin | None = None
        self._tx_rows = 0
        self._skip_rows = 0
        self._skip_tx = False
        self._seen_gtid = ""
        self._skip_before_ts = 0
        self._snapshotter: Snapshotter | None = None
        self._filter: ChunkFilter | None = None

    # -- lifecycle -----------------------------------------------------------------------

    def request_stop(self, signum: int = 0, frame: FrameType | None = None) -> None:
        log.info("stop requested (signal %s): finishing the open transaction", signum)
        self._stop = True

    def run(self) -> None:
        """Capture until stopped. Raises FencedError when another capture takes over."""
        metrics.serve(self.o.metrics_port)
        self._prepare_topics()
        # Registering the transactional id aborts whatever a killed predecessor left open,
        # so the position read next is the last one that really committed.
        self._producer.init()
        start = self._resume_position()
        if start.snapshot is not None:
            state = SnapshotState.from_json(start.snapshot)
            self._snapshotter = self._new_snapshotter(0)
            if not state.done:
                self._snapshot_phase(state)
                if self._stop or self.o.startup.mode == "snapshot":
                    log.info("snapshot %s", "done; stopping (scan.startup.mode: snapshot)"
                             if state.done else "interrupted")
                    self._catalog.close()
                    return
            self._filter = ChunkFilter(state, self._snapshotter.info)
            start = self._pos
        reader = BinlogReader(
            self.o.connection,
            self.o.server_id,
            start,
            self.o.captured,
            self._table_facts,
            self._catalog.is_mariadb,
            min(self.o.heartbeat_s, max(self.o.max_interval_s, 1.0)),
        )
        log.info("capture %s starts at %s (row decoder: %s)", self.o.pipeline,
                 start.describe() or "binlog head", decoder_kind())
        try:
            self._loop(reader)
        finally:
            reader.close()
            self._catalog.close()
        log.info("capture stopped at %s", self._committed.describe())

    # -- snapshot ------------------------------------------------------------------------

    def _new_snapshotter(self, index: int) -> Snapshotter:
        return Snapshotter(
            self.o.connection, self.o.snapshot_server_id + index,
            self.o.key_columns or (lambda d, t: None), self.o.tinyint1_as_boolean,
            self.o.chunk_size, self.o.fetch_size,
        )

    def _snapshot_phase(self, state: SnapshotState) -> None:
        """Chunks are planned in key order, read by ``snapshot_parallelism`` readers at once
        (each with its own connections and replica server-id), and committed in order: each
        chunk's rows together with the progress that includes it."""
        assert self._snapshotter is not None
        planner = self._snapshotter
        readers: queue.Queue[Snapshotter] = queue.Queue()
        for i in range(self.o.snapshot_parallelism):
            readers.put(self._new_snapshotter(i))  # the planner's connection stays its own

        def read(chunk: Chunk) -> ChunkRows:
            reader = readers.get()
            try:
                return reader.read(chunk)
            finally:
                readers.put(reader)

        plan_table, plan_after = state.table, state.after
        pending: deque[tuple[Chunk, Future[ChunkRows]]] = deque()
        progress = SnapshotProgress()
        with ThreadPoolExecutor(self.o.snapshot_parallelism, "snapshot") as pool:
            while not self._stop:
                # one chunk more than readers: the next read overlaps this commit
                while (len(pending) <= self.o.snapshot_parallelism
                       and plan_table < len(state.tables)):
                    db, table = state.tables[plan_table]
                    chunk = planner.next_chunk(db, table, plan_after)
                    pending.append((chunk, pool.submit(read, chunk)))
                    plan_after = chunk.upto
                    if chunk.upto is None:
                        plan_table += 1
                if not pending:
                    break
                chunk, future = pending.popleft()
                self._commit_chunk(state, chunk, future.result(), progress, planner)
            for _, future in pending:
                future.cancel()
        progress.close()
        while not readers.empty():
            readers.get().close()
        if state.done:
            log.info("snapshot done: %d chunks of %d table(s); streaming from %s",
                     len(state.chunks), len(state.tables), self._pos.describe())

    def _commit_chunk(self, state: SnapshotState, chunk: Chunk, read: ChunkRows,
                      progress: SnapshotProgress, planner: Snapshotter) -> None:
        db, table = chunk.db, chunk.table
        log.info("snapshot chunk of %s.%s read: %d rows, %d binlog changes applied, "
                 "high watermark %s:%d", db, table, read.selected, read.reconciled, *read.high)
        self._open()
        ts_ms = int(time.time() * 1000)
        for key, pk, row in read.rows:
            self._producer.produce(self.o.changelog_topic, key,
                                   snapshot_message(db, table, pk, row, ts_ms),
                                   timestamp_ms=ts_ms)
        state.chunks.append([db, table, chunk.after, chunk.upto, *read.high])
        if chunk.upto is None:
            state.table, state.after = state.table + 1, None
        else:
            state.after = chunk.upto
        state.done = state.table >= len(state.tables)
        self._batch.rows += len(read.rows)
        self._pos = replace(self._pos, snapshot=state.as_json())
        self._commit()
        metrics.SNAPSHOT_ROWS.labels(f"{db}.{table}").inc(len(read.rows))
        progress.add(f"{db}.{table}", read.selected, planner.estimated_rows(db, table))

    def _table_facts(self, db: str, table: str) -> tuple[frozenset[str], tuple[str, ...]]:
        booleans, keys = self._catalog.table_facts(db, table)
        return (booleans if self.o.tinyint1_as_boolean else frozenset()), keys

    def _prepare_topics(self) -> None:
        admin = TopicAdmin(self.o.kafka)
        admin.ensure(
            TopicSpec(self.o.changelog_topic, self.o.partitions, self.o.replication_factor)
        )
        admin.ensure(
            TopicSpec(self.o.offsets_topic, 1, self.o.replication_factor,
                      {"cleanup.policy": "compact"})
        )
        self._partitions = admin.partitions(self.o.changelog_topic) or self.o.partitions

    def _resume_position(self) -> Position:
        saved = self._store.load()
        if saved is not None:
            log.info("resuming from committed position %s", saved.describe())
            start = saved
        else:
            start = resolve_start(self.o.startup, self._catalog)
            if self.o.startup.mode == "timestamp" and self.o.startup.timestamp_ms:
                self._skip_before_ts = self.o.startup.timestamp_ms // 1000
            if self.o.startup.mode in ("initial", "snapshot"):
                tables = sorted(t for t in self._catalog.tables() if self.o.captured(*t))
                log.info("snapshot of %d table(s) first, then the binlog from %s",
                         len(tables), start.describe())
                state = SnapshotState([list(t) for t in tables])
                start = replace(start, snapshot=state.as_json())
        why = self._catalog.purged_before(start)
        if why is not None:
            raise PositionPurgedError(
                f"cannot resume capture of pipeline {self.o.pipeline!r} at "
                f"{start.describe()!r}: {why}. Fix: restart with scan.startup.mode: "
                "latest-offset and a new pipeline.name (changes made meanwhile are missed "
                "unless you snapshot again), and raise binlog_expire_logs_seconds."
            )
        self._pos = start
        self._committed = start
        self._seen_gtid = start.gtid_set or ""
        self._skip_rows = start.rows_done
        return start

    # -- the loop ------------------------------------------------------------------------

    def _loop(self, reader: BinlogReader) -> None:
        try:
            self._consume(reader)
        except ReplicaTakenOver:
            # Usually a second capture of this pipeline: Kafka fencing is the authority, and
            # committing (even an unchanged position) raises FencedError if that is it.
            self._commit(force=True)
            raise
        self._commit()

    def _consume(self, reader: BinlogReader) -> None:
        for ev in reader.events():
            if isinstance(ev, Rows):
                self._on_rows(ev)
            elif isinstance(ev, TxBegin):
                self._on_begin(ev)
            elif isinstance(ev, TxCommit):
                self._on_commit(ev.file, ev.pos, ev.ts)
                reader.set_resume_gtid(self._committed.gtid_set or "")
            elif isinstance(ev, Ddl):
                self._on_ddl(ev)
                if ev.ends_tx:
                    self._on_commit(ev.file, ev.pos, ev.ts)
            elif isinstance(ev, Heartbeat) and self._tx is None:
                self._pos = replace(self._pos, file=ev.file, pos=ev.pos)
            self._maybe_commit()
            if self._stop:
                break

    def _on_begin(self, ev: TxBegin) -> None:
        self._tx = ev
        self._tx_rows = 0
        self._skip_tx = (ev.gtid is not None and self._already_done(ev.gtid)) or (
            ev.ts < self._skip_before_ts
        )
        if not self._skip_tx:
            self._skip_before_ts = 0
        if self._skip_rows and self._pos.tx_gtid not in (None, ev.gtid):
            raise SourceError(
                f"resumed inside transaction {self._pos.tx_gtid} but the server sent "
                f"{ev.gtid} first; refusing to guess which rows are already captured. "
                "Fix: report this with the binlog around that position."
            )
        self._pos = replace(self._pos, tx_gtid=ev.gtid, file=ev.file, pos=ev.pos,
                            rows_done=0, ts_ms=ev.ts * 1000)

    def _already_done(self, gtid: str) -> bool:
        """A transaction the library re-sent after reconnecting on its own."""
        return advance_gtid_set(self._seen_gtid, gtid) == self._seen_gtid and bool(
            self._seen_gtid
        )

    def _on_rows(self, ev: Rows) -> None:
        if self._skip_tx:
            return
        encoder = self._encoder(ev.schema, ev.where)
        prefix = self._pos.tx_gtid or f"{self._pos.file}:{self._pos.pos}"
        rows = ev.rows
        before_event = self._tx_rows  # rows of this MySQL transaction before this event
        self._tx_rows += len(rows)
        # rows an earlier run already captured (it stopped inside this transaction)
        i = min(len(rows), max(0, self._skip_rows - before_event))
        keep = None
        if self._filter is not None:
            plan = encoder.plan

            def keep(before: list[Any] | None, after: list[Any] | None) -> bool:
                return not self._in_snapshot(ev, plan, before, after)

        ts_ms = ev.ts * 1000
        producer = self._producer
        topic = self.o.changelog_topic
        while i < len(rows):
            self._open()
            take = min(len(rows) - i, self.o.max_rows - self._batch.rows)
            try:
                produced = encoder.produce_rows(
                    producer.client.produce, producer.wait_for_room, topic, ev.kind,
                    rows[i:i + take], before_event + i + 1, prefix, ts_ms, keep,
                )
            except KafkaException as exc:
                producer.failed(exc, f"producing to {topic}")
                raise
            i += take
            self._batch.rows += produced
            self._progress.rows += produced
            if self._batch.rows >= self.o.max_rows:
                self._pos = replace(self._pos, rows_done=before_event + i)
                self._commit()
        self._pos = replace(self._pos, rows_done=self._tx_rows, ts_ms=ts_ms)
        self._progress.event_ts = ev.ts

    def _encoder(self, schema: TableSchema, where: str) -> TableEncoder:
        # keyed by identity: schemas are cached objects; holding one keeps its id unique
        hit = self._encoders.get(id(schema))
        if hit is None or hit[0] is not schema:
            hit = (schema, table_encoder(schema, self._plan(schema, where)))
            self._encoders[id(schema)] = hit
        return hit[1]

    def _in_snapshot(self, ev: Rows, plan: KeyPlan, before: list[Any] | None,
                     after: list[Any] | None) -> bool:
        """A change its key's snapshot row already holds (at or before the chunk's high
        watermark). A key-changing update counts by its new key."""
        assert self._filter is not None
        key = plan.key(after if after is not None else before)  # type: ignore[arg-type]
        return self._filter.covered(ev.schema.db, ev.schema.table, key, (ev.file, ev.pos))

    def _plan(self, schema: TableSchema, where: str) -> KeyPlan:
        hit = self._plans.get(id(schema))
        if hit is None or hit[0] is not schema:
            hit = (schema, KeyPlan(schema, where))
            self._plans[id(schema)] = hit
        return hit[1]

    def _on_commit(self, file: str, pos: int, ts: int) -> None:
        gtid = self._tx.gtid if self._tx is not None else None
        if gtid is not None:
            self._seen_gtid = advance_gtid_set(self._seen_gtid, gtid)
        snapshot = self._pos.snapshot
        if self._filter is not None and (file, pos) > self._filter.last:
            self._filter = None  # past every chunk's high watermark: nothing left to drop
            snapshot = None
        self._pos = Position(
            gtid_set=self._seen_gtid if gtid is not None else self._pos.gtid_set,
            file=file, pos=pos, ts_ms=ts * 1000, snapshot=snapshot,
        )
        self._tx = None
        self._skip_rows = 0
        self._skip_tx = False
        self._progress.event_ts = ts

    def _on_ddl(self, ev: Ddl) -> None:
        if self._skip_tx:
            return
        for db, table in tables_of(ev.sql, ev.db):
            self._catalog.forget(db, table)
            if not self.o.captured(db, table):
                continue
            log.info("DDL on %s.%s at %s:%s: %s", db, table, ev.file, ev.pos, ev.sql[:200])
            value = ddl_message(db, table, ev.sql, ev.ts, f"{ev.file}:{ev.pos}")
            self._open()
            # Every partition gets it, in order with the rows around it.
            for partition in range(self._partitions):
                self._producer.produce(self.o.changelog_topic, None, value,
                                       partition=partition, timestamp_ms=ev.ts * 1000)

    # -- transactions --------------------------------------------------------------------

    def _open(self) -> None:
        if not self._batch.open:
            self._producer.begin()
            self._batch = _Batch()
            self._batch.open = True

    def _maybe_commit(self) -> None:
        now = time.monotonic()
        if self._batch.open:
            if now - self._batch.started >= self.o.max_interval_s:
                self._commit()
        elif self._pos != self._committed and now - self._last_commit >= self.o.heartbeat_s:
            # Nothing captured, but the binlog moved on: advance the committed position so
            # a restart never needs binlog files the server may purge meanwhile.
            self._commit()
        self._progress.maybe_log(self._committed)

    def _commit(self, force: bool = False) -> None:
        """Exactly-once hop 1: the records and the position they lead to, atomically."""
        if not force and not self._batch.open and self._pos == self._committed:
            return
        # 1. A transaction is open (begin it if only the position moves).
        self._open()
        # 2. The position record joins the records already produced in it.
        self._store.produce(self._producer, self._pos)
        # 3. Commit: records and position become visible together, or neither does.
        began = time.monotonic()
        self._producer.commit()
        metrics.COMMIT_TIME.labels("capture").observe(time.monotonic() - began)
        metrics.NUM_RECORDS_OUT.labels("capture").inc(self._batch.rows)
        if self._pos.ts_ms:
            metrics.FETCH_LAG.set(max(0, time.time() * 1000 - self._pos.ts_ms))
        self._batch.open = False
        self._committed = self._pos
        self._last_commit = time.monotonic()


def install_signal_handlers(capture: Capture) -> None:
    signal.signal(signal.SIGTERM, capture.request_stop)
    signal.signal(signal.SIGINT, capture.request_stop)
