"""``stop-snapshot`` (Debezium's signal; ``cdc-ingest stop-snapshot``): the unfinished
snapshot stops reading the tables named (none named: all it has left), and capture goes on
with the binlog.

A table not started yet is simply left out (its request's reset, if any, is never written,
so its topic keeps what it had). A table stopped in the middle keeps the chunks committed so
far: their rows are in its topic, the binlog after each chunk follows them exactly as
always, and its other rows are written only when they change; when its keys were
tombstoned first (a requested snapshot), the topic lacks its unchanged rows from there, so
the notification says so and how to fill it (``cdc-ingest snapshot``, or ``verify`` to see
it). A table swapped in by a rename (online schema change) is not stopped: its keys the new
table lacks are tombstoned only at its end.
"""

from __future__ import annotations

from dataclasses import replace

from cdc_ingest.capture.notifications import ABORTED, signal_note, snapshot_note
from cdc_ingest.capture.signal_format import STOP_SNAPSHOT, Signal
from cdc_ingest.capture.snapshot.state import SnapshotState
from cdc_ingest.model import Position


def take_stops(pipeline: str, start: Position, state: SnapshotState,
               signals: list[Signal]) -> tuple[Position, list[bytes]]:
    """The leading stop-snapshot signals applied to ``state``, and their notifications; the
    signals after them wait for the snapshot's end as before."""
    notes: list[bytes] = []
    end = start.signals
    for signal in signals:
        if signal.type != STOP_SNAPSHOT or signal.refused is not None:
            break
        end = signal.offset + 1
        stopped, why = _stop(state, {tuple(t) for t in signal.tables} or None)
        notes.append(signal_note(pipeline, signal, stopped, why))
        if stopped and state.note is not None:
            data = {"data_collections": ", ".join(stopped)}
            partial = [t for t in stopped if t.endswith(" (partly read)")]
            if partial:
                data["reason"] = ("stopped in the middle, their topics hold the rows read so "
                                  "far and what changed since; cdc-ingest snapshot writes them "
                                  "whole: " + ", ".join(partial))
            notes.append(snapshot_note(pipeline, state.note, ABORTED, data))
    return replace(start, snapshot=state.as_json(), signals=end), notes


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
