"""Requests to a running pipeline: ``cdc-ingest snapshot`` asks capture to snapshot tables
again (Debezium's ``execute-snapshot`` signal, for a table whose topic must be rebuilt).

A request is one record in the pipeline's signal topic (``cdc-ingest.<name>.signals``, one
partition). Capture takes the requests from ``Position.signals`` on:

* at a start, before it reads anything (:func:`take_requests`): each requested table that
  it captures is added to the snapshot state, with a reset record to go before its first
  chunk (:attr:`SnapshotState.resets`); the new state and the signal offset are committed
  together with that chunk, so a request is carried out once, even across a crash;
* while it runs, a :class:`SignalWatch` thread notices a new request within a few seconds;
  capture then finishes its open transaction and starts over from what it committed, which
  takes the request as above.

Snapshotting a table again is the newly-added-table snapshot (chunks reconciled with the
binlog from the committed position on) preceded by the reset: in the sink topics, the
table's keys are tombstoned, then its rows are written again from the new snapshot. Until
the snapshot of the table ends, its topic holds only the rows read so far: the price of
never leaving a key behind that the table no longer has.

A request waits (stays in the topic, not taken) while a snapshot or a re-key is unfinished:
those are carried on first, then capture starts over to take it. ``stop-snapshot``,
``pause-snapshot`` and ``resume-snapshot`` steer the unfinished snapshot instead
(capture/snapshot_control.py); while it is paused, every other request is refused.

A ``set-binlog-position`` signal moves the position itself (capture/set_position.py), an
``add-table`` signal changes the selection (capture/add_table.py); the signals after either
are taken from there.

Requests come in Debezium's format too (capture/signal_format.py). Each, taken or refused
with why, is a notification (capture/notifications.py) committed with the position past it.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import replace
from typing import Any

import orjson

from cdc_ingest.capture.add_table import take_add_table
from cdc_ingest.capture.notifications import INCREMENTAL, new_note, signal_note
from cdc_ingest.capture.options import CaptureOptions
from cdc_ingest.capture.set_position import take_set_position
from cdc_ingest.capture.signal_format import (
    ADD_TABLE,
    EXECUTE_SNAPSHOT,
    PAUSE_SNAPSHOT,
    REPAIR,
    RESUME_SNAPSHOT,
    SET_POSITION,
    Signal,
    parse_signal,
)
from cdc_ingest.capture.snapshot.filtered import FilterRefused, filtered_keys
from cdc_ingest.capture.snapshot.repair import MAX_KEYS, REPAIRABLE_TYPES, spelled
from cdc_ingest.capture.snapshot.state import SnapshotState
from cdc_ingest.capture.snapshot_control import CONTROLS, take_controls
from cdc_ingest.kafka.consumer import read_topic
from cdc_ingest.kafka.signals import TopicEnd, send_one
from cdc_ingest.model import Position
from cdc_ingest.mysql import Catalog

log = logging.getLogger(__name__)

WATCH_INTERVAL_S = 2.0
ALONE = (SET_POSITION, ADD_TABLE)  # taken alone, those after them from where they leave capture


def send_repair(kafka: dict[str, Any], topic: str,
                keys: dict[tuple[str, str], list[str]]) -> tuple[str, int]:
    """Write a repair request (``keys`` per table); returns its id and offset."""
    request_id = uuid.uuid4().hex[:12]
    value = orjson.dumps({"type": REPAIR, "id": request_id,
                          "keys": {f"{db}.{table}": texts for (db, table), texts in keys.items()},
                          "requested_ms": int(time.time() * 1000)})
    return request_id, send_one(kafka, topic, request_id.encode(), value)


def send_request(kafka: dict[str, Any], topic: str, tables: list[tuple[str, str]],
                 where: str | None = None) -> str:
    """Write a snapshot request for ``tables`` (``where``: of the rows it selects in each);
    returns its id."""
    request_id = uuid.uuid4().hex[:12]
    names = [f"{db}.{table}" for db, table in tables]
    value = orjson.dumps({"type": EXECUTE_SNAPSHOT, "id": request_id, "tables": names,
                          **({"where": dict.fromkeys(names, where)} if where else {}),
                          "requested_ms": int(time.time() * 1000)})
    send_one(kafka, topic, request_id.encode(), value)
    return request_id


def read_requests(kafka: dict[str, Any], topic: str, start: int,
                  pipeline: str) -> list[Signal]:
    """The signals at offsets ``start`` and later, in order (refused ones with why)."""
    return [parse_signal(m.key, m.value, m.offset, pipeline)
            for m in read_topic(kafka, topic) if m.offset >= start and m.value is not None]


def adding_waits(options: CaptureOptions, start: Position | None) -> bool:
    """Whether an ``add-table`` signal waits to be taken after ``start``'s."""
    return start is not None and any(
        s.type == ADD_TABLE and s.refused is None
        for s in read_requests(options.kafka, options.signal_topic, start.signals,
                               options.pipeline))


def take_requests(options: CaptureOptions, start: Position, catalog: Catalog
                  ) -> tuple[Position, list[bytes]]:
    """``start`` with the pending signals taken: their tables in the snapshot state, with a
    reset each, and ``signals`` past them; and a notification per signal, taken or refused
    with why (capture writes them with the position that takes them). ``start`` itself and
    none while they must wait."""
    signals = read_requests(options.kafka, options.signal_topic, start.signals,
                            options.pipeline)
    if not signals:
        return start, []
    state = SnapshotState.from_json(start.snapshot) if start.snapshot is not None else None
    snapshot_only = options.startup.mode == "snapshot"
    if state is not None and state.rekey is None and not state.done and (
            state.paused or signals[0].type in CONTROLS):
        return take_controls(options.pipeline, start, state, signals, snapshot_only)
    if state is not None and (state.rekey is not None or not state.done):
        what = "re-key" if state.rekey is not None else "snapshot"
        log.warning("%d signal(s) wait until the unfinished %s is done", len(signals), what)
        return start, []
    moving = next((i for i, s in enumerate(signals) if s.type in ALONE), None)
    if moving == 0:  # alone: the signals after it are taken from where it moved capture
        return _move(options, start, signals[0], catalog)
    if moving is not None:  # taken once those before it are (after their snapshot, if any)
        signals = signals[:moving]
    # a pause after a request pauses the snapshot it plans (the signals from it are taken
    # as for a paused snapshot); one before any plan has nothing to pause
    pausing = next((i for i, s in enumerate(signals) if s.type == PAUSE_SNAPSHOT
                    and s.refused is None and _plans(signals[:i])), None)
    controls = signals[pausing:] if pausing is not None else []
    signals = signals[:pausing] if pausing is not None else signals
    wanted: list[list[str]] = []
    repairs: list[list[Any]] = []
    existing = set(catalog.tables())
    notes: list[bytes] = []
    whole: list[str] = []  # the signals that snapshot whole tables: the snapshot's id
    for signal in signals:
        why: list[str] = [] if signal.refused is None else [signal.refused]
        took: list[str] = []
        if signal.type in CONTROLS and signal.refused is None:
            why.append("no snapshot is paused" if signal.type == RESUME_SNAPSHOT
                       else "no snapshot is running")
        for db, table in () if signal.type in CONTROLS else signal.tables:
            if not options.captured(db, table) or (db, table) not in existing:
                why.append(f"{db}.{table} is not a table this pipeline captures now")
            elif signal.keys is not None:
                repairs += repair_chunks(catalog, db, table, signal.keys[(db, table)],
                                         signal.id)
                took.append(f"{db}.{table}")
            elif signal.where is not None and (db, table) in signal.where:
                where = signal.where[(db, table)]
                try:
                    keys = filtered_keys(catalog, db, table, where)
                except FilterRefused as exc:
                    why.append(str(exc))
                    continue
                repairs += repair_chunks(catalog, db, table, keys, signal.id)
                took.append(f"{db}.{table} where {where} ({len(keys)} "
                            f"row{'' if len(keys) == 1 else 's'})")
            else:
                took.append(f"{db}.{table}")
                if signal.id not in whole:
                    whole.append(signal.id)
                if [db, table] not in wanted:
                    wanted.append([db, table])
        for reason in why:
            log.warning("signal %s (%s, offset %d): %s", signal.id, signal.type,
                        signal.offset, reason)
        notes.append(signal_note(options.pipeline, signal, took, why))
    end = signals[-1].offset + 1
    repairs = [r for r in repairs if r[:2] not in wanted]  # snapshotted whole anyway
    if not wanted and not repairs:
        if moving is not None:
            rest, more = take_requests(options, replace(start, signals=end), catalog)
            return rest, notes + more
        return replace(start, signals=end), notes
    note = new_note(INCREMENTAL, ",".join(whole)) if wanted else None
    state = SnapshotState.again(state, wanted, catalog.server_identity(), resets=True,
                                note=note)
    state.repairs = repairs
    kinds = " and ".join(k for k, there in (("snapshot", wanted), ("repair", repairs)) if there)
    log.info("%s request(s) %s: %s, then the binlog from %s", kinds,
             ", ".join(r.id for r in signals),
             "; ".join([*(f"{'.'.join(t)} snapshotted again (its keys tombstoned first)"
                          for t in wanted),
                        *(f"{len(r[2])} key(s) of {r[0]}.{r[1]} read again" for r in repairs)]),
             start.describe())
    planned = replace(start, snapshot=state.as_json(), signals=end)
    if controls:
        planned, more = take_controls(options.pipeline, planned, state, controls,
                                      snapshot_only)
        notes += more
    return planned, notes


def _plans(signals: list[Signal]) -> bool:
    """Whether some of ``signals`` ask for a snapshot or a repair (one may be planned)."""
    return any(s.type in (EXECUTE_SNAPSHOT, REPAIR) and s.refused is None for s in signals)


def _move(options: CaptureOptions, start: Position, signal: Signal, catalog: Catalog
          ) -> tuple[Position, list[bytes]]:
    """A signal taken alone (it moves the position, or changes the selection), then those
    after it from there."""
    if signal.type == ADD_TABLE:
        moved, said = take_add_table(options, start, signal, catalog)
        options = options.selected(moved.tables)
    else:
        moved, took, why = take_set_position(start, signal, catalog)
        said = signal_note(options.pipeline, signal, took, why)
    moved, notes = take_requests(options, replace(moved, signals=signal.offset + 1), catalog)
    return moved, [said, *notes]


def repair_chunks(catalog: Catalog, db: str, table: str, texts: list[str], request: str
                  ) -> list[list[Any]]:
    """A repair's keys of one table in key chunks of at most :data:`MAX_KEYS`; none (with
    an error logged) when its key columns are not all integers or strings, or for keys that
    are not objects of exactly its key columns."""
    key = list(catalog.table_facts(db, table)[1])
    types = {c.name: c.data_type for c in catalog.columns(db, table)}
    odd = [c for c in key if types.get(c) not in REPAIRABLE_TYPES]
    if odd:
        log.error("repair request %s: %s.%s cannot be repaired by key (key column(s) %s are "
                  "not integers or strings); nothing done for it. Fix: cdc-ingest snapshot "
                  "%s.%s", request, db, table, ", ".join(odd), db, table)
        return []
    good = sorted({t for t in texts if spelled(t, key) is not None})
    if len(good) < len(set(texts)):
        log.error("repair request %s: %d key(s) of %s.%s are not objects of its key columns "
                  "%s; left out", request, len(set(texts)) - len(good), db, table, key)
    return [[db, table, good[i:i + MAX_KEYS]] for i in range(0, len(good), MAX_KEYS)]


class SignalWatch:
    """Notices, every :data:`WATCH_INTERVAL_S`, a request written after :attr:`seen` (the
    topic's end when the watch began)."""

    def __init__(self, kafka: dict[str, Any], topic: str) -> None:
        self.arrived = threading.Event()
        self._end = TopicEnd(kafka, topic)
        self.seen = self._end.end()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="signal-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(WATCH_INTERVAL_S):
            try:
                if self._end.end() > self.seen:
                    log.info("a request (snapshot or repair) arrived: finishing the open "
                             "transaction, then starting over to take it")
                    self.arrived.set()
                    return
            except Exception as exc:  # noqa: BLE001 - a watch failure must not stop capture
                log.warning("cannot look at the signal topic (%s); trying again", exc)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._end.close()
