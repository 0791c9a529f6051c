"""DDL on captured tables, as the binlog phase meets it: a record to every changelog
partition, in order with the rows around it, and the schema topic told.

A statement that empties a table (TRUNCATE, DROP, CREATE OR REPLACE; DROP DATABASE for each
table of it the topics hold) makes the sink tombstone the table's keys. A rename empties
both names it touches: the old name holds no table any more (its keys are tombstoned as
after DROP TABLE), and the new name holds a table whose rows no binlog event carries. Those
tables (:attr:`TableDdl.arrived`, the names a captured table has after the statement) are
snapshotted as newly added tables from the position past it:
:meth:`TableDdl.snapshot_arrivals` commits that position together with the snapshot to take
and ends the binlog phase (:class:`Arrived`), and the run starts over. A swap (``RENAME
TABLE t TO t_old, t_new TO t``, as pt-online-schema-change and gh-ost do: a name one table
leaves and another arrives at) whose name has keys in the topics gets a ``swap`` record
instead of ``rename``: the sink keeps the keys (the new table's snapshot overwrites them), and
``swap-end`` after that snapshot's last row tombstones those it did not write
(capture/snapshot/phase.py, sink/task/swaps.py); a new table keyed otherwise gets a reset
before its first chunk instead.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from cdc_ingest.capture.binlog_schema import TableSchema
from cdc_ingest.capture.context import CaptureContext
from cdc_ingest.capture.ddl import action_of, arrivals, dropped_database, renames, tables_of
from cdc_ingest.capture.events import Ddl
from cdc_ingest.capture.notifications import INCREMENTAL, new_note
from cdc_ingest.capture.snapshot.filter import ChunkFilter
from cdc_ingest.capture.snapshot.state import SnapshotState
from cdc_ingest.capture.snapshot_control import refuse_while_paused
from cdc_ingest.errors import SourceError
from cdc_ingest.model.changelog import EMPTIES_TABLE, SWAP, ddl_value

log = logging.getLogger(__name__)


class Arrived(Exception):  # an outcome, raised out of the binlog phase's loop
    """The position past a rename is committed with a snapshot of ``tables``."""

    def __init__(self, tables: list[tuple[str, str]]) -> None:
        super().__init__(tables)
        self.tables = tuple(tables)


class TableDdl:
    def __init__(self, ctx: CaptureContext) -> None:
        self._catalog = ctx.catalog
        self._captured = ctx.options.captured
        self._guard = ctx.schemas
        self._tx = ctx.tx
        self._partitions = ctx.partitions
        self.arrived: list[tuple[str, str]] = []  # renamed to captured names, to snapshot
        # names a table left and another arrived at (a swap): [db, table, pos, ts_ms, key]
        self.swapped: dict[tuple[str, str], list[Any]] = {}
        self._gone: dict[int, tuple[TableSchema, bool]] = {}

    def gone(self, schema: TableSchema) -> bool:
        """Rows of a table that no longer exists, read when neither the binlog nor the
        catalog can say its key: a later statement in the binlog dropped it or renamed it
        away, and that statement's record tombstones every key of the name (a rename to a
        captured name snapshots the table there), so these rows are superseded: they are
        counted in the position and not written. A table that exists, or whose key the
        binlog gives, is written as always."""
        if schema.primary_key:
            return False
        hit = self._gone.get(id(schema))
        if hit is None or hit[0] is not schema:
            gone = not self._catalog.exists(schema.db, schema.table)
            if gone:
                log.warning("rows of %s.%s: the table no longer exists (dropped or renamed "
                            "since), so its key cannot be known; its rows up to the statement "
                            "that removed it are superseded by that statement's tombstones "
                            "and are not written", schema.db, schema.table)
            hit = self._gone[id(schema)] = (schema, gone)
        return hit[1]

    def follow(self, ev: Ddl, chunk_filter: ChunkFilter | None) -> None:
        """A DDL event: a record per captured table it touches (each once)."""
        action = action_of(ev.sql)
        swaps: set[tuple[str, str]] = set()
        if action == "rename":
            arriving = arrivals(ev.sql, ev.db)
            self.arrived += [t for t in arriving if self._captured(*t) and t not in self.arrived]
            leaving = {old for old, _ in renames(ev.sql, ev.db)}
            swaps = {t for t in arriving if t in leaving}
        # DROP DATABASE names no table: it drops every table of it the topics hold
        dropped = dropped_database(ev.sql)
        names = self._guard.keyed_tables(dropped) if dropped else tables_of(ev.sql, ev.db)
        for db, table in names:
            self._catalog.forget(db, table)
            if not self._captured(db, table):
                continue
            log.info("DDL on %s.%s at %s:%s: %s", db, table, ev.file, ev.pos, ev.sql[:200])
            if (action in EMPTIES_TABLE and chunk_filter is not None
                    and chunk_filter.reaches(db, table, (ev.file, ev.pos))):
                raise SourceError(
                    f"{action.upper()} of {db}.{table} at binlog {ev.file}:{ev.pos} ran while "
                    "the snapshot of that table was being read, so some of its snapshot rows "
                    "are from after the statement and cannot be put in order with it. Fix: "
                    "start the pipeline again from scratch (delete its state and sink topics; "
                    "scan.startup.mode: initial), without emptying or renaming tables during "
                    "the snapshot"
                )
            where = f"{ev.file}:{ev.pos}"
            key = self._guard.key_record(db, table) if action in EMPTIES_TABLE else None
            marked = action
            if (db, table) in swaps and self._guard.key_record(db, table) is not None:
                marked = SWAP  # keys it has live: the sink keeps those the new table has
                self.swapped[(db, table)] = [db, table, where, ev.ts * 1000,
                                             self._guard.key_record(db, table)]
            self._guard.ddl(db, table, ev.sql, action, where, ev.ts * 1000,
                            (db, table) in self.arrived)
            value = ddl_value(db, table, ev.sql, ev.ts * 1000, where, marked, key)
            # Every partition gets it, in order with the rows around it.
            self._tx.marker(value, range(self._partitions), ev.ts * 1000)
            self._tx.counted(f"{db}.{table}", "ddls")

    def snapshot_arrivals(self, chunk_filter: ChunkFilter | None) -> None:
        """Commit the position past the rename (the binlog phase has moved it there) with a
        snapshot of the tables it gave captured names, then raise :class:`Arrived`. The
        position and the snapshot to take commit together, so a kill on either side neither
        loses their rows nor snapshots them twice."""
        tables, self.arrived = self.arrived, []
        tx = self._tx
        refuse_while_paused(tx.position.snapshot, "the rename giving captured name(s) "
                            f"{', '.join('.'.join(t) for t in tables)} to a table with rows",
                            tx.position.describe())
        # no reset record: the rename's own records reset the names
        state = SnapshotState.again(chunk_filter.state if chunk_filter is not None else None,
                                    [list(t) for t in tables],
                                    self._catalog.server_identity(), resets=False,
                                    note=new_note(INCREMENTAL))
        state.prunes = [self.swapped[t] for t in tables if t in self.swapped]
        self.swapped = {}
        tx.position = replace(tx.position, snapshot=state.as_json())
        tx.commit(force=True)
        log.info("renamed to captured name(s) %s at %s: snapshotting them (their rows are in "
                 "no binlog event), then the binlog from there",
                 ", ".join(".".join(t) for t in tables), tx.committed.describe())
        raise Arrived(tables)
