"""The snapshot phase: chunks planned in key order, read by parallel readers, committed in
order, each chunk's rows together with the progress that includes it."""

from __future__ import annotations

import logging
import queue
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace

from cdc_ingest import metrics
from cdc_ingest.capture.context import CaptureContext, Done, Stopped
from cdc_ingest.capture.key_schema import KeySchema
from cdc_ingest.capture.notifications import SnapshotNotes
from cdc_ingest.capture.snapshot.filter import ChunkFilter
from cdc_ingest.capture.snapshot.progress import SnapshotProgress
from cdc_ingest.capture.snapshot.reader import Snapshotter
from cdc_ingest.capture.snapshot.repair import REPAIR_POS, absent_keys
from cdc_ingest.capture.snapshot.state import Chunk, ChunkRows, Key, SnapshotState
from cdc_ingest.model.changelog import (
    REKEY_CUT,
    RESNAPSHOT,
    SWAP_END,
    Op,
    ddl_value,
    snapshot_parts,
    value_head,
)

log = logging.getLogger(__name__)


class SnapshotPhase:
    """``resnapshot_partitions``: the changelog partitions a re-snapshot record goes to
    (the table's rows may be in any of them)."""

    def __init__(self, ctx: CaptureContext, planner: Snapshotter,
                 resnapshot_partitions: int = 1) -> None:
        self._ctx = ctx
        self._options = ctx.options
        self._partitions = resnapshot_partitions
        self._guard = ctx.schemas
        self._tx = ctx.tx
        self._planner = planner
        self._stopping = ctx.stopping
        self._notes = SnapshotNotes(ctx.tx, ctx.options.pipeline, planner.estimated_rows)

    def run(self, state: SnapshotState) -> Done | Stopped:
        """Read and commit chunks until the snapshot is done or a stop is requested; one
        chunk more than readers is in flight, so the next read overlaps this commit."""
        parallelism = self._options.snapshot_parallelism
        readers: queue.Queue[Snapshotter] = queue.Queue()
        for i in range(parallelism):
            readers.put(self._ctx.snapshotter(i))  # the planner's connection stays its own

        def read(chunk: Chunk, columns: list[str] | None) -> ChunkRows:
            reader = readers.get()
            try:
                return reader.read(chunk, columns)
            finally:
                readers.put(reader)

        progress = SnapshotProgress()
        while state.repairs and not self._stopping():  # verify --repair's keys first
            db, table, keys = state.repairs[0][:3]
            chunk = Chunk(db, table, None, None, keys=list(keys))
            rows = self._read_keys(read, chunk)
            if rows is None:  # the table is gone: its rows and keys are the binlog's
                log.warning("repair of %d key(s) of %s.%s: the table no longer exists; "
                            "nothing to read", len(keys), db, table)
                state.repairs.pop(0)
                self._tx.position = replace(self._tx.position, snapshot=state.as_json())
                continue
            self._commit_chunk(state, chunk, rows, progress, read, requested=keys)
        plan_table, plan_after = state.table, state.after
        # nothing to read (`initial` on a selection no table matches yet): done, not stopped
        state.done = state.done or (state.table >= len(state.tables) and not state.repairs)
        pending: deque[tuple[Chunk, Future[ChunkRows] | None]] = deque()
        with ThreadPoolExecutor(parallelism, "snapshot") as pool:
            while not self._stopping():
                while len(pending) <= parallelism and plan_table < len(state.tables):
                    db, table = state.tables[plan_table]
                    planned = self._plan(db, table, plan_after)
                    if planned is None:  # gone: skipped in its turn
                        pending.append((Chunk(db, table, plan_after, None), None))
                        plan_table, plan_after = plan_table + 1, None
                        continue
                    # the row's columns: schema.change.behavior ignore pins them
                    columns = self._guard.pinned(db, table)
                    pending.append((planned, pool.submit(read, planned, columns)))
                    plan_after = planned.upto
                    if planned.upto is None:
                        plan_table += 1
                if not pending:
                    break
                chunk, future = pending.popleft()
                rows = self._rows(chunk, future)
                if rows is None:
                    self._gone(state, chunk, pending)
                    if plan_table < len(state.tables) and state.tables[plan_table] == [
                            chunk.db, chunk.table]:
                        plan_table, plan_after = plan_table + 1, None
                    continue
                self._commit_chunk(state, chunk, rows, progress, read)
            for _, future in pending:
                if future is not None:
                    future.cancel()
        progress.close()
        while not readers.empty():
            readers.get().close()
        if not state.done:
            return Stopped()
        if self._notes.finish(state, int(time.time() * 1000)):
            self._tx.position = replace(self._tx.position, snapshot=state.as_json())
            self._tx.commit()
        log.info("snapshot done: %d chunks of %d table(s); streaming from %s",
                 len(state.chunks), len(state.tables), self._tx.position.describe())
        return Done(ChunkFilter(state, self._planner.info))

    def _plan(self, db: str, table: str, after: Key | None) -> Chunk | None:
        """The table's next chunk; None when the table no longer exists."""
        try:
            return self._planner.next_chunk(db, table, after)
        except Exception:
            if self._planner.exists(db, table):
                raise
            return None

    def _read_keys(self, read: Callable[[Chunk, list[str] | None], ChunkRows], chunk: Chunk
                   ) -> ChunkRows | None:
        """A key chunk's rows; None when its table no longer exists."""
        try:
            return read(chunk, self._guard.pinned(chunk.db, chunk.table))
        except Exception:
            if self._planner.exists(chunk.db, chunk.table):
                raise
            return None

    def _rows(self, chunk: Chunk, future: Future[ChunkRows] | None) -> ChunkRows | None:
        """The chunk's rows; None when its table no longer exists."""
        if future is None:
            return None
        try:
            return future.result()
        except Exception:
            if self._planner.exists(chunk.db, chunk.table):
                raise
            return None

    def _gone(self, state: SnapshotState, chunk: Chunk,
              pending: deque[tuple[Chunk, Future[ChunkRows] | None]]) -> None:
        """``chunk``'s table was dropped or renamed away since the snapshot took it in: the
        rest of it is skipped. Exact: its chunks read so far are before the statement that
        removed it (else that statement stops capture, binlog_phase.py), and from there
        the binlog carries the table's changes up to that statement, which tombstones its
        keys (a rename to a captured name snapshots the table under that name)."""
        db, table = chunk.db, chunk.table
        while pending and (pending[0][0].db, pending[0][0].table) == (db, table):
            _, later = pending.popleft()
            if later is not None:
                later.cancel()
        log.warning("snapshot: %s.%s no longer exists (dropped or renamed away since the "
                    "snapshot took it in); the rest of it is skipped, its changes and the "
                    "statement that removed it follow from the binlog", db, table)
        if [db, table] in state.resets:
            state.resets.remove([db, table])
        state.prunes = [p for p in state.prunes if p[:2] != [db, table]]
        state.table, state.after = state.table + 1, None
        if state.note is not None:
            state.note["scanned"] = 0
        state.done = state.table >= len(state.tables)
        self._tx.position = replace(self._tx.position, snapshot=state.as_json())

    def _commit_chunk(self, state: SnapshotState, chunk: Chunk, read: ChunkRows,
                      progress: SnapshotProgress,
                      reread: Callable[[Chunk, list[str] | None], ChunkRows],
                      requested: list[str] | None = None) -> None:
        """``requested``: a key chunk's keys (verify --repair): a key without a row gets a
        delete, so the sink tombstones it."""
        db, table = chunk.db, chunk.table
        log.info("snapshot chunk of %s.%s read: %d rows, %d binlog changes applied, "
                 "high watermark %s:%d", db, table, read.selected, read.reconciled, *read.high)
        tx = self._tx
        ts_ms = int(time.time() * 1000)
        info, at = self._planner.info(db, table), tx.position
        layout = self._guard.layout(db, table, info.key_schema, info.layout,
                                    f"{at.file}:{at.pos}", ts_ms, info.typed)
        send, produce = tx.row_sender()  # the chunk's transaction is open from here
        topic = tx.changelog_topic
        partition = -1  # the key's partition
        rekey = state.rekey
        if rekey is not None:  # re-keying in place (capture/rekey.py): one partition
            partition = int(rekey["partition"])
            if not rekey["cut"]:
                tx.marker(ddl_value(db, table, f"re-key {db}.{table}: rows under the new "
                                    "key", ts_ms, rekey["where"], REKEY_CUT),
                          [partition], ts_ms)
                rekey["cut"] = True
        prune = next((p for p in state.prunes if p[:2] == [db, table]), None)
        if (prune is not None and chunk.after is None and chunk.keys is None
                and KeySchema.from_json(prune[4]) != info.key_schema):
            # a swap brought a table keyed otherwise: its keys are spelled otherwise, so the
            # name's keys go first, as at any rename
            state.prunes.remove(prune)
            if [db, table] not in state.resets:
                state.resets.append([db, table])
            prune = None
        if [db, table] in state.resets:  # snapshotted again on request (capture/signals.py)
            key_schema = self._guard.key_record(db, table) or info.key_schema.as_json()
            reset = ddl_value(db, table, f"snapshot of {db}.{table} requested: its rows are "
                              "written again", ts_ms, f"{at.file}:{at.pos}", RESNAPSHOT,
                              key_schema)
            tx.marker(reset, range(self._partitions), ts_ms)  # before the rows, in each
            state.resets.remove([db, table])
        pinned = self._guard.pinned(db, table)  # schema.change.behavior: ignore
        if (pinned or list(info.names)) != (read.columns or list(info.names)):
            read = reread(chunk, pinned)  # pinned since it was read: read again (a reader)
        head, mid, tail = snapshot_parts(db, table, ts_ms, layout)
        join = b"".join
        for key, row in read.rows:
            value = join((head, key, mid, row, tail))
            try:
                produce(topic, value, key, partition=partition, timestamp=ts_ms)
            except Exception:  # noqa: BLE001 - send waits for room or reports the error
                send(topic, value, key, ts_ms, partition=partition)
        if requested is not None:
            gone = absent_keys(requested, [k for k, _ in read.rows], info.key)
            for key in gone:
                send(topic, join((value_head(Op.DELETE, db, table, layout), key,
                                  b',"before":', key, b',"after":null,"ts_ms":%d,"pos":"%b"}'
                                  % (ts_ms, REPAIR_POS.encode()))), key, ts_ms)
            log.info("repair of %s.%s: %d key(s) written again, %d deleted (MySQL has no "
                     "row for them)", db, table, len(read.rows), len(gone))
            tx.rows_sent(len(gone), f"{db}.{table}", "deletes")
        if prune is not None and chunk.upto is None and chunk.keys is None:
            # the swapped-in table is written whole: the name's other keys go now
            end = ddl_value(db, table, f"swap of {db}.{table} at binlog {prune[2]}: its "
                            "snapshot is written", prune[3], prune[2], SWAP_END)
            tx.marker(end, range(self._partitions), prune[3])
            state.prunes.remove(prune)
        state.chunk_done(chunk, read.high)
        self._notes.chunk(state, chunk, len(read.rows), ts_ms)
        tx.rows_sent(len(read.rows), f"{db}.{table}", "snapshot_rows")
        tx.position = replace(tx.position, snapshot=state.as_json())
        tx.commit()  # a chunk is one transaction: its rows with the progress that has it
        metrics.SNAPSHOT_ROWS.labels(f"{db}.{table}").inc(len(read.rows))
        progress.add(f"{db}.{table}", read.selected,
                     self._planner.estimated_rows(db, table))
