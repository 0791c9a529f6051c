"""Re-keying a table in place (``pipeline.schema.change.behavior: evolve``).

When a captured table's key changes (``DROP PRIMARY KEY, ADD PRIMARY KEY (id, k2)``, a key
column retyped so its values are spelled differently), its messages in the sink topics are
keyed by the old key. Re-keying replaces them all with the table as it is now under the new
key, so that a read_committed reader of a sink topic sees the table's old messages or its new
ones, never both and never neither, and every key's changes stay in order
(docs/output-contract.md, "Primary-key changes"):

1. **begin**: at the first row under the new key (binlog P), everything before is committed,
   the schema topic records the new key, and a ``rekey`` record goes to every changelog
   partition. Capture then waits until the sink has passed it on every partition: every
   old-key message is in the sink topics, and no task writes one again.
2. **snapshot**: the table is read again in chunks under its new key (the snapshot
   machinery: read views and binlog windows), every row into one changelog partition (the
   table's cutover partition) after a ``rekey-cut`` record. The binlog waits meanwhile.
3. **end**: a ``rekey-end`` record closes those rows. The sink task of the cutover partition
   writes, in ONE transaction, a tombstone for every live key of the table and every row
   between the cut and the end (sink/task/rekey.py). Capture waits until the sink has passed the
   end, then reads the binlog again from P: changes of the table its chunks already hold are
   dropped (ChunkFilter), later ones go to their keys' partitions as always.

Each step's progress is committed with the position (``SnapshotState.rekey``): a capture
killed anywhere finishes the step it was in when started again. The waits need the sink
running; capture says what it waits for every :data:`WAIT_LOG_S`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import replace

from cdc_ingest.capture.context import CaptureContext, Done, Stopped
from cdc_ingest.capture.schema_guard import RekeyNeeded
from cdc_ingest.capture.snapshot.filter import ChunkFilter
from cdc_ingest.capture.snapshot.phase import SnapshotPhase
from cdc_ingest.capture.snapshot.reader import Snapshotter
from cdc_ingest.capture.snapshot.state import SnapshotState
from cdc_ingest.errors import SourceError
from cdc_ingest.kafka.consumer import end_offsets
from cdc_ingest.kafka.offsets import GroupOffsets, OffsetsPending
from cdc_ingest.kafka.partition import java_partition
from cdc_ingest.model.changelog import REKEY, REKEY_END, ddl_value

log = logging.getLogger(__name__)

WAIT_LOG_S = 30.0
WAIT_POLL_S = 0.5


class Rekeying:
    def __init__(self, ctx: CaptureContext) -> None:
        self._ctx = ctx
        self._options = ctx.options
        self._tx = ctx.tx
        self._guard = ctx.schemas
        self._catalog = ctx.catalog
        self._partitions = ctx.partitions
        self._stopping = ctx.stopping
        self._planner: Snapshotter | None = None
        self._group: GroupOffsets | None = None

    def start(self, change: RekeyNeeded, current: ChunkFilter | None) -> Done | Stopped:
        """Re-key ``change``'s table at the committed position. Done: with the chunk filter
        the binlog phase goes on with; Stopped: before the end (the next start of capture
        finishes the re-key before it reads the binlog)."""
        db, table, where = change.db, change.table, change.where
        file, _, pos = where.rpartition(":")
        if current is not None and current.reaches(db, table, (file, int(pos))):
            raise SourceError(
                f"the key of {db}.{table} changed at binlog {where}, while the snapshot of "
                "that table was being read, so its snapshot rows cannot be put in order with "
                "the change. Fix: start the pipeline again from scratch (delete its state and "
                "sink topics; scan.startup.mode: initial)")
        # the chunks of other tables still filter the binlog; the table's own are for its
        # old key, and all before the change (reaches above)
        kept = [c for c in current.state.chunks if (c[0], c[1]) != (db, table)] if current else []
        cutover = java_partition(f"{db}.{table}".encode(), self._partitions)
        # where each partition ends before the re-key record: the sink must pass those
        ends = end_offsets(self._options.kafka, self._options.changelog_topic,
                           list(range(self._partitions)))
        state = SnapshotState([[db, table]], chunks=kept, server=self._catalog.server_identity(),
                              rekey={"db": db, "table": table, "where": where,
                                     "partition": cutover, "cut": False, "end": None,
                                     "begin": {str(p): end for p, end in ends.items()}})
        ts_ms = self._tx.position.ts_ms or int(time.time() * 1000)
        self._guard.rekeyed(db, table, change.key, change.columns, where, ts_ms)
        self._mark(state, f"re-key {db}.{table} under {change.key.describe()}", REKEY, ts_ms,
                   range(self._partitions))
        log.warning("the key of %s.%s changed to %s: re-keying it in place "
                    "(pipeline.schema.change.behavior: evolve); the binlog waits meanwhile",
                    db, table, change.key.describe())
        return self.finish(state)

    def finish(self, state: SnapshotState) -> Done | Stopped:
        """Go on with a re-key from the step ``state`` says it reached."""
        rekey = state.rekey
        assert rekey is not None
        name, cutover = f"{rekey['db']}.{rekey['table']}", int(rekey["partition"])
        planner = self._planner = self._planner or self._ctx.snapshotter(0)
        if rekey.get("end") is None:
            begin = {int(p): int(end) for p, end in rekey["begin"].items()}
            if not rekey.get("cut") and not self._sink_past(begin, name, "the re-key record"):
                return Stopped()
            # every row into the cutover partition (no re-snapshot record to spread)
            if isinstance(SnapshotPhase(self._ctx, planner).run(state), Stopped):
                return Stopped()
            rekey["end"] = end_offsets(self._options.kafka, self._options.changelog_topic,
                                       [cutover])[cutover]
            self._mark(state, f"re-key {name} done", REKEY_END, int(time.time() * 1000),
                       [cutover])
        if not self._sink_past({cutover: int(rekey["end"])}, name, "the table under its new key"):
            return Stopped()
        log.info("%s is re-keyed: the sink topics hold it under its new key; reading the "
                 "binlog again from %s", name, rekey["where"])
        return Done(ChunkFilter(state, planner.info))

    def _mark(self, state: SnapshotState, text: str, action: str, ts_ms: int,
              partitions: Iterable[int]) -> None:
        """Commit a re-key record in ``partitions`` with ``state`` as the re-key's progress."""
        rekey = state.rekey
        assert rekey is not None
        tx = self._tx
        tx.marker(ddl_value(rekey["db"], rekey["table"], text, ts_ms, rekey["where"], action),
                  partitions, ts_ms)
        tx.position = replace(tx.position, snapshot=state.as_json())
        tx.commit()  # the record and the step it completes, together

    def _sink_past(self, ends: dict[int, int], name: str, what: str) -> bool:
        """Wait until the sink group's committed offset of each partition is past ``ends``
        (the end offsets read before capture wrote what the sink must pass; capture is the
        changelog's only writer, so its next record there is the first at or after them).
        False when capture is asked to stop first."""
        group = self._group = self._group or GroupOffsets(self._options.kafka,
                                                          self._options.sink_group)
        topic = self._options.changelog_topic
        began = logged = time.monotonic()
        while not self._stopping():
            try:
                committed = group.committed(topic, sorted(ends))
            except OffsetsPending as exc:
                # a sink killed mid-transaction holds the read until Kafka aborts it or the
                # sink starts again: not past yet, whatever the pending offsets say
                log.info("re-keying %s: %s", name, exc)
                committed = {}
            behind = sorted(p for p, end in ends.items() if committed.get(p, 0) <= end)
            if not behind:
                return True
            if time.monotonic() - logged >= WAIT_LOG_S:
                logged = time.monotonic()
                log.warning("re-keying %s: waiting %.0fs so far for the sink (group %s) to "
                            "write %s (changelog %s partitions %s). Is the sink running?",
                            name, logged - began, group.group_id, what, topic, behind)
            time.sleep(WAIT_POLL_S)
        return False
