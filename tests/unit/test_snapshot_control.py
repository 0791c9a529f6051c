"""stop-, pause- and resume-snapshot applied to an unfinished snapshot's state
(capture/snapshot_control.py): which tables stop, pausing and resuming, what the
notifications say, what is refused with why, and what a paused position keeps once the
binlog is past its chunks."""

from __future__ import annotations

import json

import pytest

from cdc_ingest.capture.notifications import INCREMENTAL, new_note
from cdc_ingest.capture.signal_format import Signal
from cdc_ingest.capture.snapshot.state import SnapshotState
from cdc_ingest.capture.snapshot_control import refuse_while_paused, take_controls
from cdc_ingest.errors import SourceError
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
    at, notes = take_controls("shop", Position(file="f", pos=4, signals=offset), state,
                              [signal])
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


def _take(state: SnapshotState, *kinds: str, snapshot_only: bool = False
          ) -> tuple[Position, list[dict]]:
    signals = [Signal(f"k{i}", kind, 7 + i) for i, kind in enumerate(kinds)]
    at, notes = take_controls("shop", Position(file="f", pos=4, signals=7), state, signals,
                              snapshot_only)
    return at, [json.loads(n) for n in notes]


def test_a_pause_is_committed_with_the_position_and_a_resume_clears_it() -> None:
    state = _state()
    at, notes = _take(state, "pause-snapshot")
    assert state.paused and at.signals == 8
    assert SnapshotState.from_json(at.snapshot).paused  # survives a restart
    assert [(n["aggregate_type"], n["type"]) for n in notes] == [
        ("Signal", "TAKEN"), ("Incremental Snapshot", "PAUSED")]
    assert notes[0]["additional_data"]["data_collections"] == "snapshot of s.b, s.c, s.d"
    assert notes[1]["id"] == "r1"
    at, notes = _take(state, "resume-snapshot")
    assert not state.paused and not SnapshotState.from_json(at.snapshot).paused
    assert [(n["aggregate_type"], n["type"]) for n in notes] == [
        ("Signal", "TAKEN"), ("Incremental Snapshot", "RESUMED")]


def test_while_paused_other_signals_are_refused_and_a_resume_behind_them_is_taken() -> None:
    state = _state()
    at, notes = _take(state, "pause-snapshot", "execute-snapshot", "set-binlog-position",
                      "pause-snapshot", "resume-snapshot", "execute-snapshot")
    # the last request waits for the snapshot's end (not paused any more): not taken
    assert at.signals == 12 and not state.paused
    assert [(n["id"], n["type"]) for n in notes if n["aggregate_type"] == "Signal"] == [
        ("k0", "TAKEN"), ("k1", "REFUSED"), ("k2", "REFUSED"), ("k3", "REFUSED"),
        ("k4", "TAKEN")]
    reasons = [n["additional_data"].get("reason") for n in notes
               if n["aggregate_type"] == "Signal"]
    assert "resume it first (cdc-ingest resume-snapshot)" in reasons[1]
    assert reasons[3] == "the snapshot is paused already"


def test_a_stop_while_paused_ends_the_snapshot_and_its_pause() -> None:
    state = _state()
    at, notes = _take(state, "pause-snapshot", "stop-snapshot")
    assert state.done and not state.paused
    assert not SnapshotState.from_json(at.snapshot).paused
    assert [n["type"] for n in notes] == ["TAKEN", "PAUSED", "TAKEN", "ABORTED"]


def test_pauses_refused_with_why() -> None:
    state = _state()
    _, notes = _take(state, "resume-snapshot")
    assert notes[0]["additional_data"]["reason"] == "the snapshot is not paused"
    _, notes = _take(state, "pause-snapshot", snapshot_only=True)
    assert "scan.startup.mode is snapshot" in notes[0]["additional_data"]["reason"]
    state.prunes = [["s", "d", "f:9", 0, {}]]
    _, notes = _take(state, "pause-snapshot")
    assert "s.d was swapped in by a rename" in notes[0]["additional_data"]["reason"]
    assert [n["type"] for n in notes] == ["REFUSED"] and not state.paused


def test_what_would_replace_a_paused_plan_stops_capture_naming_the_fix() -> None:
    state = _state()
    refuse_while_paused(state.as_json(), "x", "f:9")  # not paused: nothing to say
    refuse_while_paused(None, "x", "f:9")
    state.paused = True
    with pytest.raises(SourceError) as raised:
        refuse_while_paused(state.as_json(), "the key change of s.x", "mysql-bin.000003:77")
    text = str(raised.value)
    assert "the key change of s.x at binlog mysql-bin.000003:77 while the snapshot of s.b, " \
        "s.c, s.d is paused" in text
    assert "Fix: cdc-ingest resume-snapshot" in text
