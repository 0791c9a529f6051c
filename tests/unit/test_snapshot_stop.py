"""stop-snapshot applied to an unfinished snapshot's state (capture/snapshot_stop.py): which
tables stop, which go on, what the notifications say, and what is refused with why."""

from __future__ import annotations

import json

from cdc_ingest.capture.notifications import INCREMENTAL, new_note
from cdc_ingest.capture.signal_format import Signal
from cdc_ingest.capture.snapshot.state import SnapshotState
from cdc_ingest.capture.snapshot_stop import take_stops
from cdc_ingest.model import Position


def _state() -> SnapshotState:
    # s.a done, s.b half read (a chunk committed), s.c and s.d not begun; s.c's reset pending
    return SnapshotState([["s", "a"], ["s", "b"], ["s", "c"], ["s", "d"]], table=1,
                         after={"id": 50}, chunks=[["s", "a", None, None, "f", 1],
                                                   ["s", "b", None, {"id": 50}, "f", 2]],
                         resets=[["s", "c"]], note=new_note(INCREMENTAL, "r1"))


def _stop(state: SnapshotState, *tables: str, offset: int = 7) -> tuple[Position, list[dict]]:
    signal = Signal("k1", "stop-snapshot", offset,
                    tuple(tuple(t.split(".")) for t in tables))  # type: ignore[misc]
    at, notes = take_stops("shop", Position(file="f", pos=4, signals=offset), state, [signal])
    return at, [json.loads(n) for n in notes]


def test_stopping_the_table_being_read_goes_on_with_the_next() -> None:
    state = _state()
    at, notes = _stop(state, "s.b")
    assert state.tables == [["s", "a"], ["s", "c"], ["s", "d"]] and state.table == 1
    assert state.after is None and not state.done
    assert state.chunks[1][:2] == ["s", "b"]  # its committed chunk still filters the binlog
    assert at.signals == 8 and SnapshotState.from_json(at.snapshot).tables == state.tables
    assert [(n["aggregate_type"], n["type"]) for n in notes] == [
        ("Signal", "TAKEN"), ("Incremental Snapshot", "ABORTED")]
    assert notes[0]["additional_data"]["data_collections"] == "s.b (partly read)"
    assert "cdc-ingest snapshot writes them whole: s.b" in notes[1]["additional_data"]["reason"]
    assert notes[1]["id"] == "r1"


def test_stopping_everything_left_ends_the_snapshot_and_drops_pending_resets() -> None:
    state = _state()
    _, notes = _stop(state)
    assert state.tables == [["s", "a"]] and state.done and state.resets == []
    assert notes[0]["additional_data"]["data_collections"] == "s.b (partly read), s.c, s.d"


def test_tables_not_left_to_read_and_swapped_tables_are_refused_with_why() -> None:
    state = _state()
    state.prunes = [["s", "d", "f:9", 0, {}]]
    _, notes = _stop(state, "s.a", "s.d", "s.zz")
    assert notes == [notes[0]] and notes[0]["type"] == "REFUSED"
    reason = notes[0]["additional_data"]["reason"]
    assert "s.d was swapped in by a rename" in reason
    assert "s.a is not a table the snapshot has left to read" in reason
    assert "s.zz is not a table the snapshot has left to read" in reason
    assert state.tables == _state().tables
