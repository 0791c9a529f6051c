"""The binlog phase: events -> changelog records in Kafka transactions, position with them.

One event at a time, in binlog order: a transaction begins (:class:`TxBegin`), its rows are
decoded by the reader and encoded and sent by the table's encoder (:class:`Rows`), DDL goes to
every changelog partition (:class:`Ddl`), and the transaction ends (:class:`TxCommit`); after
each event the changelog transaction (capture/transaction.py) commits when it is full or old
enough. The position says which MySQL transaction capture is in and how many of its rows are
already in the changelog, so a commit in the middle of a large MySQL transaction resumes
exactly there.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from cdc_ingest import metrics
from cdc_ingest.capture.binlog import BinlogReader
from cdc_ingest.capture.binlog_errors import ReplicaTakenOver
from cdc_ingest.capture.binlog_schema import TableSchema
from cdc_ingest.capture.context import CaptureContext, Done, RekeyRequested, TablesArrived
from cdc_ingest.capture.encode import KEEP_ALL, KEEP_NEW, KEEP_OLD, Encoders, KeyPlan
from cdc_ingest.capture.events import Ddl, Heartbeat, Rows, TxBegin, TxCommit
from cdc_ingest.capture.key_schema import of_binlog
from cdc_ingest.capture.metadata_marks import MetadataMarks
from cdc_ingest.capture.progress import Progress
from cdc_ingest.capture.resume import MySqlTxTracker, same_server
from cdc_ingest.capture.schema_guard import RekeyNeeded
from cdc_ingest.capture.snapshot.filter import ChunkFilter
from cdc_ingest.capture.socket_reader import ReadStopped
from cdc_ingest.capture.table_ddl import Arrived, TableDdl
from cdc_ingest.capture.typed_layout import typed_from_binlog
from cdc_ingest.errors import SourceUnavailable
from cdc_ingest.model import Position
from cdc_ingest.model.table_stats import BY_KIND
from cdc_ingest.mysql.connection import retry_delay

log = logging.getLogger(__name__)

# Least time between two commits made because the binlog went quiet (BinlogPhase.idle): the
# most it adds to a change's latency, and at most 20 such Kafka transactions a second.
IDLE_COMMIT_GAP_S = 0.05

class BinlogPhase:
    """``mysql_tx``: the MySQL transaction being read, and what of the ones ahead an earlier
    run captured (``self._tx`` is capture's Kafka transaction);
    ``chunk_filter``: what the snapshot's rows hold already (None: nothing)."""

    def __init__(self, ctx: CaptureContext, mysql_tx: MySqlTxTracker, progress: Progress,
                 chunk_filter: ChunkFilter | None) -> None:
        self._ctx = ctx
        self._tx = ctx.tx
        self._topic = ctx.tx.changelog_topic
        self._partitions = ctx.partitions
        self._captured = ctx.options.captured
        self._catalog = ctx.catalog
        self._guard = ctx.schemas
        self._stopping = ctx.stopping
        self._mysql_tx = mysql_tx
        self._progress = progress
        self.chunk_filter = chunk_filter
        self._failures = 0  # failed reconnects in a row (kept across a re-key)
        self._encoders = Encoders(self._on_layout, self._guard.pinned)
        self._marks = MetadataMarks(ctx.options.transaction_metadata, ctx.partitions)
        self._ddl = TableDdl(ctx)

    def run(self, open_reader: Callable[[Position], BinlogReader],
            retries: int) -> Done | RekeyRequested | TablesArrived:
        """Until stopped (Done) or a table's key changes under ``evolve``
        (RekeyRequested: everything before is committed, the binlog closed); the last
        records and position are committed on the way out.

        When MySQL goes away (stopped, restarted, failed over to a server with the same GTID
        history) everything read so far is committed and the binlog is read again from
        there, with backoff; after ``retries`` (``connect.max-retries``) failed reconnects
        in a row :class:`SourceUnavailable` ends capture (``start`` restarts it).

        TablesArrived: a rename gave captured names to tables with rows; the position past
        it is committed with their snapshot to take (capture/table_ddl.py)."""
        outcome: Done | RekeyRequested | TablesArrived = Done(self.chunk_filter)
        while True:
            reader = open_reader(self._tx.position)
            try:
                if self._failures and self.chunk_filter is not None:
                    # file positions matter until the snapshot's window has passed
                    same_server(self.chunk_filter.state, self._catalog)
                self._consume(reader)
                break
            except ReadStopped:
                break  # asked to stop while the binlog was quiet
            except ReplicaTakenOver:
                # Usually a second capture of this pipeline: Kafka fencing is the authority,
                # and committing (even an unchanged position) raises FencedError if that is it.
                self._tx.commit(force=True)
                raise
            except SourceUnavailable as lost:
                self._failures = 1 if reader.received else self._failures + 1
                self._resume_after(lost, self._failures, retries)
            except RekeyNeeded as needed:  # raised at the table's first row under its new key
                outcome = RekeyRequested(needed)
                break
            except Arrived as arrived:
                outcome = TablesArrived(arrived.tables)
                break
            finally:
                reader.close()
        self._tx.commit()
        return outcome

    def rekeyed(self, chunk_filter: ChunkFilter | None) -> None:
        """A table was re-keyed in place (capture/rekey.py): read the binlog again from the
        committed position, with ``chunk_filter`` dropping what the re-key's rows hold."""
        self.chunk_filter = chunk_filter
        self._mysql_tx = self._mysql_tx.resumed_at(self._tx.committed)
        self._encoders = Encoders(self._on_layout, self._guard.pinned)

    def _resume_after(self, lost: SourceUnavailable, failures: int, retries: int) -> None:
        """Commit what was read before ``lost`` (the position says exactly that, even inside
        a MySQL transaction), then wait before reading again from there."""
        tx = self._tx
        tx.commit()
        at = tx.committed.describe() or "the binlog head"
        if failures > retries:
            raise SourceUnavailable(
                f"{str(lost).rstrip('.')}. Reconnecting failed {failures - 1} time(s) in a row "
                f"(connect.max-retries: {retries}). Everything read before is committed: "
                f"capture resumes at {at} when started again, and `cdc-ingest start` "
                "restarts it by itself.") from lost
        metrics.SOURCE_CONNECTED.set(0)
        delay = retry_delay(failures)
        log.warning("%s; everything read before is committed; reading again from %s in "
                    "%.0fs (reconnect %d of %d)", str(lost).rstrip("."), at, delay, failures,
                    retries)
        self._mysql_tx = self._mysql_tx.resumed_at(tx.committed)
        deadline = time.monotonic() + delay
        while time.monotonic() < deadline and not self._stopping():
            time.sleep(0.1)

    def _consume(self, reader: BinlogReader) -> None:
        tx = self._tx
        connected = False
        for ev in reader.events():
            if not connected:
                metrics.SOURCE_CONNECTED.set(1)
                connected = True
            if isinstance(ev, Rows):
                self._on_rows(ev)
            elif isinstance(ev, TxBegin):
                self._on_begin(ev)
            elif isinstance(ev, TxCommit):
                self._on_commit(ev.file, ev.pos, ev.ts)
            elif isinstance(ev, Ddl):
                if not self._mysql_tx.skipped:
                    self._ddl.follow(ev, self.chunk_filter)
                if ev.ends_tx:
                    self._on_commit(ev.file, ev.pos, ev.ts)
                if self._ddl.arrived and self._mysql_tx.current is None:
                    self._ddl.snapshot_arrivals(self.chunk_filter)  # raises Arrived
            elif isinstance(ev, Heartbeat) and self._mysql_tx.current is None:
                tx.position = replace(tx.position, file=ev.file, pos=ev.pos)
            tx.maybe_commit()
            self._progress.maybe_log(tx.committed)
            if self._stopping():
                break

    def idle(self) -> float | None:
        """The reader has everything the server sent and waits for more (a hook of
        :class:`~cdc_ingest.capture.socket_reader.SocketReader`, between two events). At the
        end of a MySQL transaction, commit what was read: a quiet binlog's changes become
        visible now, not at the next event, heartbeat or max-interval, and so does the end of
        a transaction an earlier commit (max-rows) holds part of. At most one such commit
        every IDLE_COMMIT_GAP_S: a binlog of many small transactions that capture keeps up
        with would otherwise be a Kafka transaction each. Returns when to be asked again."""
        tx = self._tx
        if self._mysql_tx.current is not None:
            return None  # inside a MySQL transaction: its end comes, or max-interval
        if not (tx.is_open or tx.committed.rows_done):
            return None
        wait = IDLE_COMMIT_GAP_S - (time.monotonic() - tx.last_commit)
        if wait > 0:
            return wait
        tx.commit()
        return None

    def _on_begin(self, ev: TxBegin) -> None:
        self._mysql_tx.begin(ev)
        self._marks.begin()
        self._tx.position = self._tx.position.begun(ev.gtid, ev.file, ev.pos, ev.ts * 1000)

    def _on_rows(self, ev: Rows) -> None:
        if self._mysql_tx.skipped:
            return
        tx = self._tx
        if not ev.schema.primary_key and self._ddl.gone(ev.schema):  # a keyed table: no call
            self._mysql_tx.rows_event(len(ev.rows))  # counted, not written
            tx.position = tx.position.after_rows(self._mysql_tx.rows, ev.ts * 1000)
            return
        encoder = self._encoders.get(ev.schema, ev.where)
        at = tx.position
        prefix = at.tx_gtid or f"{at.file}:{at.pos}"
        rows = ev.rows
        # rows of this MySQL transaction before this event; rows an earlier run captured
        before_event, i = self._mysql_tx.rows_event(len(rows))
        keep = self._keep(ev, encoder.plan)
        ts_ms = ev.ts * 1000
        delta = self._marks.rows(prefix, ev.schema.db, ev.schema.table, before_event,
                                 len(rows))
        name, what = f"{ev.schema.db}.{ev.schema.table}", BY_KIND[ev.kind]
        while i < len(rows):
            send, produce = tx.row_sender()
            take = min(len(rows) - i, tx.room)
            produced = encoder.produce_rows(send, self._topic, ev.kind, rows[i:i + take],
                                            before_event + i + 1, prefix, ts_ms, keep,
                                            produce, delta)
            i += take
            tx.rows_sent(produced, name, what)
            self._progress.rows += produced
            if tx.full:
                tx.position = replace(tx.position, rows_done=before_event + i)
                tx.commit()
        tx.position = tx.position.after_rows(self._mysql_tx.rows, ts_ms)
        self._progress.event_ts = ev.ts

    def _on_layout(self, schema: TableSchema, where: str) -> str:
        """The first rows of a table layout (after a start, or a DDL), at binlog ``where``:
        the schema topic records it, or capture stops when its key is not the one the topics
        hold. Returns the id of its typed layout (capture/typed_layout.py)."""
        key, layout = of_binlog(schema)
        typed = typed_from_binlog(layout, schema.columns,
                                  self._catalog.columns(schema.db, schema.table),
                                  self._guard.tinyint1_as_boolean)
        return self._guard.layout(schema.db, schema.table, key, layout, where,
                                  self._tx.position.ts_ms, typed)

    def _keep(self, ev: Rows, plan: KeyPlan) -> Callable[[Any, Any], int] | None:
        """Outside a snapshot's reach, every row; else the changes its key's snapshot row
        does not hold yet (after that key's chunk's high watermark). A key-changing update
        is two halves, each judged by its own key's chunk: the old key's delete may belong
        to a chunk already read while the new key's insert belongs to one read later."""
        chunks = self.chunk_filter
        if chunks is None:
            return None
        db, table, at = ev.schema.db, ev.schema.table, (ev.file, ev.pos)
        covered = chunks.covered
        key_of = plan.key

        def keep(before: list[Any] | None, after: list[Any] | None) -> int:
            old = key_of(before) if before is not None else None
            new = key_of(after) if after is not None else None
            if old is not None and old == new:  # an update that keeps its key: one question
                return 0 if covered(db, table, old, at) else KEEP_ALL
            halves = 0
            if old is not None and not covered(db, table, old, at):
                halves |= KEEP_OLD
            if new is not None and not covered(db, table, new, at):
                halves |= KEEP_NEW
            return halves

        return keep

    def _on_commit(self, file: str, pos: int, ts: int) -> None:
        marker = self._marks.end(ts * 1000)
        if marker is not None:  # after the transaction's last row, before its position
            self._tx.marker(marker, range(self._partitions), ts * 1000)
        gtid = self._mysql_tx.commit()
        tx = self._tx
        snapshot = tx.position.snapshot
        done = self.chunk_filter
        if done is not None and (file, pos) > done.last and (
                done.state.chunks or not done.paused):
            # past every chunk's high watermark: nothing left to drop, but what a paused
            # snapshot has not read yet
            self.chunk_filter = done.without_chunks() if done.paused else None
            snapshot = self.chunk_filter.state.as_json() if self.chunk_filter else None
            log.info("past the snapshot's binlog window (%s:%s): %s", file, pos,
                     "the paused snapshot's chunks filter nothing more" if snapshot
                     else "the snapshot is complete")
        tx.position = Position(
            gtid_set=self._mysql_tx.seen_gtid if gtid is not None else tx.position.gtid_set,
            file=file, pos=pos, ts_ms=ts * 1000, snapshot=snapshot,
            tables=tx.position.tables, signals=tx.position.signals,
        )
        self._progress.event_ts = ts
