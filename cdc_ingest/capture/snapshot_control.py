"""Signals that steer an unfinished snapshot: ``stop-snapshot``, ``pause-snapshot``,
``resume-snapshot`` (Debezium's; ``cdc-ingest stop-snapshot`` / ``pause-snapshot`` /
``resume-snapshot``).

**Stop**: the snapshot stops reading the tables named (none named: all it has left), and
capture goes on with the binlog. A table not started yet is simply left out (its request's
reset, if any, is never written, so its topic keeps what it had). A table stopped in the
middle keeps the chunks committed so far: their rows are in its topic, the binlog after each
chunk follows them exactly as always, and its other rows are written only when they change;
when its keys were tombstoned first (a requested snapshot), the topic lacks its unchanged rows
from there, so the notification says so and how to fill it (``cdc-ingest snapshot``, or
``verify`` to see it). A table swapped in by a rename (online schema change) is not stopped:
its keys the new table lacks are tombstoned only at its end.

**Pause** (decision 0018): a flag in the committed snapshot state, so a restart while paused
stays paused. No chunk is read; capture runs the binlog phase with the chunks read so far as
its filter (capture/snapshot/filter.py): it drops a change a chunk's rows already hold, and a
change of a key no chunk has read yet (the chunk that reads it after the resume holds it;
written now, a delete before that chunk would leave the key behind). capture/binlog_phase.py
keeps the plan once the binlog is past every chunk.
**Resume** reads on from the next chunk, reconciled with the binlog as every chunk is. While
paused every signal but these three is refused with the fix (a resume queued behind a
waiting request would never be taken); a re-key or a rename onto a captured name met while
paused stops capture (:func:`refuse_while_paused`). Refused: pausing while a table swapped in
by a rename is still to be read, and under ``scan.startup.mode: snapshot`` (no binlog to go
on with).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from cdc_ingest.capture.notifications import (
    ABORTED,
    PAUSED,
    RESUMED,
    signal_note,
    snapshot_note,
)
from cdc_ingest.capture.signal_format import (
    PAUSE_SNAPSHOT,
    RESUME_SNAPSHOT,
    STOP_SNAPSHOT,
    Signal,
)
from cdc_ingest.capture.snapshot.state import SnapshotState
from cdc_ingest.errors import SourceError
from cdc_ingest.model import Position

CONTROLS = (STOP_SNAPSHOT, PAUSE_SNAPSHOT, RESUME_SNAPSHOT)
RESUME_FIRST = ("the snapshot is paused: resume it first (cdc-ingest resume-snapshot), then "
                "send this again")


def take_controls(pipeline: str, start: Position, state: SnapshotState,
                  signals: list[Signal], snapshot_only: bool = False
                  ) -> tuple[Position, list[bytes]]:
    """The leading stop, pause and resume signals applied to the unfinished ``state`` in
    order, with their notifications. While it is paused every other signal is taken as
    refused; while it runs, the first other one waits with those after it (for the
    snapshot's end). ``snapshot_only``: ``scan.startup.mode: snapshot`` (no pause)."""
    notes: list[bytes] = []
    end = start.signals
    for signal in signals:
        if state.done:
            break  # the signals left are taken as after any snapshot
        if signal.type not in CONTROLS or signal.refused is not None:
            if not state.paused:
                break
            end = signal.offset + 1
            notes.append(signal_note(pipeline, signal, [], [signal.refused or RESUME_FIRST]))
            continue
        end = signal.offset + 1
        if signal.type == STOP_SNAPSHOT:
            notes += _stop_signal(pipeline, state, signal)
        else:
            took, why, kind = _pause_or_resume(state, signal.type, snapshot_only)
            notes.append(signal_note(pipeline, signal, took, why))
            if took and state.note is not None:
                notes.append(snapshot_note(pipeline, state.note, kind, {
                    "data_collections": ", ".join(".".join(t) for t in state.tables)}))
    if state.done:
        state.paused = False
    return replace(start, snapshot=state.as_json(), signals=end), notes


def _stop_signal(pipeline: str, state: SnapshotState, signal: Signal) -> list[bytes]:
    stopped, why = _stop(state, {tuple(t) for t in signal.tables} or None)
    notes = [signal_note(pipeline, signal, stopped, why)]
    if stopped and state.note is not None:
        data = {"data_collections": ", ".join(stopped)}
        partial = [t for t in stopped if t.endswith(" (partly read)")]
        if partial:
            data["reason"] = ("stopped in the middle, their topics hold the rows read so "
                              "far and what changed since; cdc-ingest snapshot writes them "
                              "whole: " + ", ".join(partial))
        notes.append(snapshot_note(pipeline, state.note, ABORTED, data))
    return notes


def _pause_or_resume(state: SnapshotState, kind: str, snapshot_only: bool
                     ) -> tuple[list[str], list[str], str]:
    """Pause or resume ``state``: what it applies to, why not, and its notification type."""
    left = [".".join(t) for t in state.tables[state.table:]]
    if state.repairs:
        left.insert(0, "repair keys")
    what = [f"snapshot of {', '.join(left)}"]
    if kind == RESUME_SNAPSHOT:
        if not state.paused:
            return [], ["the snapshot is not paused"], RESUMED
        state.paused = False
        return what, [], RESUMED
    swapped = sorted({".".join(p[:2]) for p in state.prunes})
    if state.paused:
        return [], ["the snapshot is paused already"], PAUSED
    if snapshot_only:
        return [], ["scan.startup.mode is snapshot: capture stops when the snapshot ends, "
                    "there is no binlog to go on with while it is paused"], PAUSED
    if swapped:
        return [], [f"{', '.join(swapped)} was swapped in by a rename (an online schema "
                    "change); its snapshot must finish before the snapshot can pause"], PAUSED
    state.paused = True
    return what, [], PAUSED


def refuse_while_paused(snapshot: dict[str, Any] | None, what: str, where: str) -> None:
    """Stop capture when ``what`` (at binlog ``where``) would replace the paused snapshot
    ``snapshot`` (the committed state), and with it silently drop the tables it has left."""
    if snapshot is None or not snapshot.get("paused"):
        return
    state = SnapshotState.from_json(snapshot)
    left = ", ".join(".".join(t) for t in state.tables[state.table:]) or "repair keys"
    raise SourceError(
        f"{what} at binlog {where} while the snapshot of {left} is paused: capture cannot "
        "take it without dropping what the paused snapshot has left to read. Fix: "
        "cdc-ingest resume-snapshot --config <pipeline file> --wait 0, then start capture "
        "again: it takes the resume first, finishes the snapshot, then reads this statement")


def _stop(state: SnapshotState, tables: set[tuple[str, ...]] | None
          ) -> tuple[list[str], list[str]]:
    """Stop ``tables`` (None: all left) in ``state``: what was stopped, and why not others."""
    stopped: list[str] = []
    why: list[str] = []
    keep = list(state.tables[:state.table])
    left = {tuple(t) for t in state.tables[state.table:]}
    swapped = {tuple(p[:2]) for p in state.prunes}
    for i, table in enumerate(state.tables[state.table:], start=state.table):
        name = ".".join(table)
        if tables is not None and tuple(table) not in tables:
            keep.append(table)
        elif tuple(table) in swapped:
            why.append(f"{name} was swapped in by a rename; its snapshot must finish")
            keep.append(table)
        else:
            begun = i == state.table and (state.after is not None or any(
                c[:2] == table for c in state.chunks))
            stopped.append(name + (" (partly read)" if begun else ""))
            if i == state.table:
                state.after = None
            state.resets = [r for r in state.resets if r != table]
    current = state.tables[state.table] if state.table < len(state.tables) else None
    if current is not None and current not in keep:  # the next kept table starts afresh
        state.after = None
    state.tables = keep
    state.done = state.table >= len(state.tables) and not state.repairs
    why += [f"{'.'.join(t)} is not a table the snapshot has left to read"
            for t in sorted((tables or set()) - left)]
    if not stopped and not why:
        why.append("the snapshot has no table left to read")
    return stopped, why
