"""Snapshot notifications (capture/notifications.py) as a chunk sequence produces them: the
values in Debezium's format, the order, and what the snapshot state keeps so that a restart
from a committed state goes on where it was."""

from __future__ import annotations

import json
from typing import Any

from cdc_ingest.capture.notifications import INITIAL, SnapshotNotes, new_note
from cdc_ingest.capture.snapshot.state import Chunk, SnapshotState


class _Sink:
    def __init__(self) -> None:
        self.sent: list[tuple[bytes, dict[str, Any], int]] = []

    def notification(self, key: bytes, value: bytes, ts_ms: int) -> None:
        self.sent.append((key, json.loads(value), ts_ms))


def _run(state: SnapshotState, notes: SnapshotNotes, chunks: list[tuple[Chunk, int]]) -> None:
    for chunk, rows in chunks:
        state.chunk_done(chunk, ("b.1", 4))
        notes.chunk(state, chunk, rows, 1764672000000)


def test_a_snapshot_of_two_tables_notifies_in_debeziums_format() -> None:
    sink = _Sink()
    notes = SnapshotNotes(sink, "shop", lambda db, t: {"a": 25, "b": 7}[t])
    state = SnapshotState([["s", "a"], ["s", "b"]], note=new_note(INITIAL, "id1"))
    _run(state, notes, [(Chunk("s", "a", None, {"id": 10}), 10),
                        (Chunk("s", "a", {"id": 10}, None), 14),
                        (Chunk("s", "b", None, None), 7)])
    assert {key for key, _, _ in sink.sent} == {b"shop"}
    kinds = [(n["type"], n["additional_data"].get("current_collection_in_progress")
              or n["additional_data"].get("data_collection")) for _, n, _ in sink.sent]
    assert kinds == [("STARTED", None), ("IN_PROGRESS", "s.a"), ("IN_PROGRESS", "s.a"),
                     ("TABLE_SCAN_COMPLETED", "s.a"), ("IN_PROGRESS", "s.b"),
                     ("TABLE_SCAN_COMPLETED", "s.b"), ("COMPLETED", None)]
    first = sink.sent[1][1]
    assert first == {"id": "id1", "aggregate_type": "Initial Snapshot", "type": "IN_PROGRESS",
                     "additional_data": {"connector_name": "shop",
                                         "data_collections": "s.a, s.b",
                                         "current_collection_in_progress": "s.a",
                                         "rows_scanned": "10", "total_rows_estimate": "25"},
                     "timestamp": "1764672000000"}
    done_a = sink.sent[3][1]["additional_data"]
    assert done_a["total_rows_scanned"] == "24" and done_a["status"] == "SUCCEEDED"
    assert sink.sent[5][1]["additional_data"]["total_rows_scanned"] == "7"


def test_a_restart_from_the_committed_state_goes_on_without_repeating() -> None:
    sink = _Sink()
    notes = SnapshotNotes(sink, "shop", lambda db, t: 0)
    state = SnapshotState([["s", "a"]], note=new_note(INITIAL, "id1"))
    _run(state, notes, [(Chunk("s", "a", None, {"id": 10}), 10)])
    committed = state.as_json()
    # the next chunk's transaction is lost with the process; a new one reads it again
    again = SnapshotState.from_json(json.loads(json.dumps(committed)))
    _run(again, SnapshotNotes(sink, "shop", lambda db, t: 0),
         [(Chunk("s", "a", {"id": 10}, None), 5)])
    kinds = [n["type"] for _, n, _ in sink.sent]
    assert kinds == ["STARTED", "IN_PROGRESS", "IN_PROGRESS", "TABLE_SCAN_COMPLETED",
                     "COMPLETED"]
    assert [n["additional_data"].get("rows_scanned") for _, n, _ in sink.sent][1:3] == [
        "10", "15"]


def test_repairs_and_states_without_a_note_say_nothing() -> None:
    sink = _Sink()
    notes = SnapshotNotes(sink, "shop", lambda db, t: 0)
    plain = SnapshotState([["s", "a"]])
    _run(plain, notes, [(Chunk("s", "a", None, None), 3)])
    keyed = SnapshotState([], repairs=[["s", "a", ['{"id":1}']]], note=new_note(INITIAL))
    keyed.chunk_done(Chunk("s", "a", None, None, keys=['{"id":1}']), ("b.1", 4))
    notes.chunk(keyed, Chunk("s", "a", None, None, keys=['{"id":1}']), 1, 0)
    assert sink.sent == []
