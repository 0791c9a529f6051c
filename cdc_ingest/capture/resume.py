"""Where capture starts, and which binlog rows an earlier run already captured.

* :func:`start_position`: the committed position, or on a first start the one
  ``scan.startup.mode`` names (with a snapshot state for ``initial`` / ``snapshot``); refused
  when the server no longer has its binlog.
* :class:`MySqlTxTracker`: follows the MySQL transaction capture is in, and says what of it to
  skip: a transaction whose GTID is already in the committed set (the replication library
  re-sends after reconnecting on its own), one older than ``scan.startup.timestamp-millis``,
  and the rows of a transaction that an earlier run stopped inside (``Position.rows_done``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from dataclasses import replace
from typing import Any

from cdc_ingest.capture.events import TxBegin
from cdc_ingest.capture.notifications import INCREMENTAL, INITIAL, new_note
from cdc_ingest.capture.options import CaptureOptions, StartupSpec, selection_matcher
from cdc_ingest.capture.schema_guard import read_schema_topic
from cdc_ingest.capture.snapshot.state import SnapshotState
from cdc_ingest.errors import (
    PURGED_FIX,
    ConfigError,
    ConfigProblem,
    PositionPurgedError,
    SourceError,
)
from cdc_ingest.model import Position
from cdc_ingest.mysql import Catalog
from cdc_ingest.mysql.gtid import advance_gtid_set, has_gtid

log = logging.getLogger(__name__)


def first_position(spec: StartupSpec, catalog: Catalog) -> Position:
    """Where a first start begins, from ``scan.startup.mode`` and its options."""
    if spec.mode in ("initial", "snapshot"):
        # the binlog phase starts where the snapshot starts
        return catalog.snapshot_start()
    if spec.mode == "latest-offset":
        return catalog.latest()
    if spec.mode == "earliest-offset":
        return catalog.earliest()
    if spec.mode == "specific-offset":
        if spec.gtid_set:
            return Position(gtid_set=spec.gtid_set, rows_done=spec.skip_rows)
        if spec.file and spec.pos is not None:
            return catalog.at(spec.file, spec.pos)
    if spec.mode == "timestamp" and spec.timestamp_ms is not None:
        # Transactions older than the timestamp are skipped (MySqlTxTracker.skip_before_s).
        return catalog.earliest()
    raise ConfigError(
        ConfigProblem("source.scan.startup.mode", f"'{spec.mode}' lacks its options",
                      "see the scan.startup.* options")
    )


def start_position(options: CaptureOptions, committed: Position | None, catalog: Catalog,
                   adding: Callable[[], bool] = lambda: False) -> tuple[Position, int]:
    """The ``committed`` position (None: a first start), else the first one; raises when its
    binlog is gone. Also the binlog time (s) before which transactions are skipped (a first
    start in ``timestamp`` mode; else 0)."""
    skip_before_s = 0
    start = committed
    if start is not None:
        log.info("resuming from committed position %s", start.describe())
        if start.tables is None:  # a release before selections were recorded
            known = read_schema_topic(options.kafka, options.schema_topic).tables
            unseen_tables(options, catalog, known)
        start = added_tables(options, start, catalog, adding)
    else:
        start = first_position(options.startup, catalog)
        if options.startup.mode == "timestamp" and options.startup.timestamp_ms:
            skip_before_s = options.startup.timestamp_ms // 1000
        if options.startup.mode in ("initial", "snapshot"):
            tables = sorted(t for t in catalog.tables() if options.captured(*t))
            log.info("snapshot of %d table(s) first, then the binlog from %s",
                     len(tables), start.describe())
            state = SnapshotState([list(t) for t in tables], server=catalog.server_identity(),
                                  note=new_note(INITIAL))
            start = replace(start, snapshot=state.as_json())
        start = replace(start, tables=options.selection)
    why = catalog.purged_before(start)
    if why is not None:
        raise PositionPurgedError(
            f"cannot resume capture of pipeline {options.pipeline!r} at "
            f"{start.describe()!r}: {why}. Fix: {PURGED_FIX}."
        )
    return start, skip_before_s


def unseen_tables(options: CaptureOptions, catalog: Catalog,
                  known: Collection[tuple[str, str]]) -> list[tuple[str, str]]:
    """Warn of captured tables the schema topic never heard of, at the first start on a
    position that does not say which tables its run selected: a table added to
    ``source.tables`` at this very start cannot be told apart from one that never changed,
    and its existing rows would be missing without a word."""
    unseen = sorted(t for t in catalog.tables() if options.captured(*t) and t not in known)
    if unseen:
        names = ", ".join(f"{db}.{table}" for db, table in unseen)
        log.warning("this pipeline has never written %s (no record in its schema topic). If "
                    "it was added to source.tables at this start, its existing rows are not "
                    "in the sink topics: snapshot it with `cdc-ingest snapshot --config <file> "
                    "%s` (the committed position is from a release that did not record the "
                    "table selection; later starts detect added tables themselves)",
                    names, " ".join(f"{db}.{table}" for db, table in unseen))
    return unseen


def added_tables(options: CaptureOptions, start: Position, catalog: Catalog,
                 adding: Callable[[], bool] = lambda: False) -> Position:
    """``start`` with a snapshot of the tables the selection took in since the run that
    committed it (``scan.newly-added-table.enabled``), and the selection now. A table the old
    selection took in is in the changelog from its first row (snapshot, or created later
    and read from the binlog), so only the others are read. ``adding``: whether an
    ``add-table`` signal waits in the signal topic; then ``start`` keeps its selection and
    the signal takes the tables in, as it says (capture/add_table.py)."""
    before = start.tables
    if before is None or before == options.selection:
        return replace(start, tables=options.selection)
    old = selection_matcher(before)
    added = sorted(t for t in catalog.tables() if options.captured(*t) and not old(*t))
    if not added:
        return replace(start, tables=options.selection)
    names = ", ".join(f"{db}.{table}" for db, table in added)
    if adding():
        log.info("source.tables now also selects %s: capture goes on with the tables it ran "
                 "with until it takes the add-table signal waiting for it", names)
        return start
    if not options.newly_added_tables:
        raise ConfigError(ConfigProblem(
            "source.tables", f"now also selects {names}, whose existing rows were never "
            "captured (the pipeline ran with another selection)",
            "set scan.newly-added-table.enabled: true to snapshot them at this start while "
            "the binlog goes on, or `cdc-ingest add-table` them while the pipeline runs "
            "(docs/operations.md), or restore the earlier tables / tables.exclude"))
    log.info("scan.newly-added-table.enabled: snapshot of %d added table(s) (%s) first, then "
             "the binlog from %s", len(added), names, start.describe())
    return replace(start, snapshot=snapshot_of_added(options, start, added, catalog),
                   tables=options.selection)


def snapshot_of_added(options: CaptureOptions, start: Position,
                      added: list[tuple[str, str]], catalog: Catalog,
                      snapshot_id: str | None = None) -> dict[str, Any]:
    """The snapshot state of ``start`` with the ``added`` tables to read as newly added
    tables: after what an unfinished snapshot has left, or filtered by the chunks of a
    finished one whose binlog window is still open. A table this pipeline captured before
    (the schema topic knows it) gets its keys tombstoned before its first chunk, as a
    requested snapshot does: its topic may hold keys of rows deleted while it was not
    captured."""
    state = SnapshotState.from_json(start.snapshot) if start.snapshot is not None else None
    if state is not None and state.rekey is not None:
        raise SourceError(
            f"{', '.join('.'.join(t) for t in added)} were added to source.tables while a "
            f"re-key of {state.rekey['db']}.{state.rekey['table']} is unfinished. Fix: start "
            "once with the earlier tables until capture logs that the re-key is done, then "
            "add them")
    known = read_schema_topic(options.kafka, options.schema_topic).tables
    again = [list(t) for t in added if t in known]
    if again:
        log.info("%s captured before: their keys are tombstoned before their snapshot rows "
                 "are written", ", ".join(".".join(t) for t in again))
    server = catalog.server_identity()
    if state is None:
        state = SnapshotState([list(t) for t in added], server=server,
                              note=new_note(INCREMENTAL, snapshot_id), resets=again)
    elif state.done:  # the earlier snapshot's chunks still filter the binlog
        state = SnapshotState([list(t) for t in added], chunks=state.chunks,
                              server=state.server or server,
                              note=new_note(INCREMENTAL, snapshot_id), resets=again)
    else:  # unfinished: the added tables come after its own
        state.tables.extend(list(t) for t in added if list(t) not in state.tables)
        state.resets.extend(t for t in again if t not in state.resets)
    return state.as_json()


def same_server(state: SnapshotState, catalog: Catalog) -> None:
    """Raise when the snapshot's chunk positions are another server's binlog positions:
    after a failover they cannot say which changes the snapshot rows already hold."""
    now = catalog.server_identity()
    if state.server is not None and state.server != now:
        raise SourceError(
            f"the snapshot was read from another server ({state.server}) than the one capture "
            f"is connected to now ({now}), and its chunks' binlog positions are that "
            "server's, so which changes the snapshot rows already hold cannot be told on "
            "this one. Fix: point source.hostname at the server the snapshot was read from "
            "until capture logs that the snapshot's binlog window has passed; else start a "
            "new pipeline (new pipeline.name, scan.startup.mode: initial)."
        )


class MySqlTxTracker:
    """The MySQL transaction in progress, and what of it an earlier run already captured."""

    def __init__(self, start: Position, skip_before_s: int = 0) -> None:
        self.seen_gtid = start.gtid_set or ""  # GTIDs of every transaction fully captured
        self.current: TxBegin | None = None
        self.rows = 0  # rows of the current transaction seen so far
        self.skipped = False  # the whole current transaction is left out
        self._skip_rows = start.rows_done  # rows of the resumed transaction already captured
        self._resumed_gtid = start.tx_gtid
        self._skip_before_s = skip_before_s

    def resumed_at(self, position: Position) -> MySqlTxTracker:
        """What to skip when the binlog is read again from ``position`` (committed by this
        run, so a timestamp start's skip still holds until its first transaction)."""
        return MySqlTxTracker(position, self._skip_before_s)

    def begin(self, ev: TxBegin) -> None:
        already = ev.gtid is not None and bool(self.seen_gtid) and has_gtid(
            self.seen_gtid, ev.gtid)
        self.current, self.rows = ev, 0
        self.skipped = already or ev.ts < self._skip_before_s
        if not self.skipped:
            self._skip_before_s = 0  # the first transaction at or after the timestamp
        if self._skip_rows and self._resumed_gtid not in (None, ev.gtid):
            raise SourceError(
                f"resumed inside transaction {self._resumed_gtid} but the server sent "
                f"{ev.gtid} first; refusing to guess which rows are already captured. "
                "Fix: report this with the binlog around that position."
            )

    def rows_event(self, count: int) -> tuple[int, int]:
        """A rows event of ``count`` rows: (rows of the transaction before it, how many of
        its first rows an earlier run already captured)."""
        before = self.rows
        self.rows += count
        return before, min(count, max(0, self._skip_rows - before))

    def commit(self) -> str | None:
        """The current transaction ended; returns its GTID (now in :attr:`seen_gtid`)."""
        gtid = self.current.gtid if self.current is not None else None
        if gtid is not None:
            self.seen_gtid = advance_gtid_set(self.seen_gtid, gtid)
        self.current = None
        self._skip_rows = 0
        self.skipped = False
        return gtid
