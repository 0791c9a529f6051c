"""The order capture takes a batch of signals in when set-binlog-position is among them
(capture/signals.py): the position moves alone, the signals after it are taken from where it
moved capture; signals before it are taken first, and it waits behind a snapshot they start."""

from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from cdc_ingest.capture import signals
from cdc_ingest.capture.signal_format import Signal
from cdc_ingest.capture.snapshot.state import SnapshotState
from cdc_ingest.model import Position


class _Options:
    startup = SimpleNamespace(mode="initial")
    kafka: dict[str, Any] = {}
    signal_topic = "cdc-ingest.shop.signals"
    pipeline = "shop"

    @staticmethod
    def captured(db: str, table: str) -> bool:
        return db == "s"


class _Catalog:
    @staticmethod
    def tables() -> list[tuple[str, str]]:
        return [("s", "a"), ("s", "b")]

    @staticmethod
    def server_identity() -> str:
        return "server_id=1"


SNAP = Signal("snap", "execute-snapshot", 0, (("s", "a"),))
MOVE = Signal("move", "set-binlog-position", 0, gtid_set="0-1-5")


def _take(batch: list[Signal], monkeypatch: pytest.MonkeyPatch,
          start: Position | None = None) -> tuple[Position, list[dict[str, Any]]]:
    """take_requests over ``batch`` (offsets 10, 11, ...) with the position moves faked."""
    at = [replace(s, offset=10 + i) for i, s in enumerate(batch)]
    monkeypatch.setattr(signals, "read_requests",
                        lambda kafka, topic, start, pipeline: [s for s in at
                                                               if s.offset >= start])
    monkeypatch.setattr(signals, "take_set_position", lambda start, signal, catalog: (
        replace(start, gtid_set=signal.gtid_set, snapshot=None), [f"to {signal.gtid_set}"], []))
    moved, notes = signals.take_requests(
        _Options(), start or Position(gtid_set="0-1-9", signals=10), _Catalog())  # type: ignore[arg-type]
    return moved, [json.loads(n) for n in notes]


def test_a_position_first_moves_alone_and_what_follows_is_taken_from_there(
        monkeypatch: pytest.MonkeyPatch) -> None:
    moved, notes = _take([MOVE, SNAP], monkeypatch)
    assert moved.gtid_set == "0-1-5" and moved.signals == 12
    assert SnapshotState.from_json(moved.snapshot).tables == [["s", "a"]]
    assert [(n["id"], n["type"]) for n in notes] == [("move", "TAKEN"), ("snap", "TAKEN")]


def test_a_position_after_a_snapshot_waits_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    moved, notes = _take([SNAP, MOVE], monkeypatch)
    assert moved.gtid_set == "0-1-9" and moved.signals == 11  # the move stays in the topic
    assert SnapshotState.from_json(moved.snapshot).tables == [["s", "a"]]
    assert [n["id"] for n in notes] == ["snap"]
    # the next start, the snapshot unfinished: everything waits
    later, notes = _take([SNAP, MOVE], monkeypatch, start=moved)
    assert later == moved and notes == []


def test_a_position_after_signals_that_start_nothing_is_taken_with_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    refused = Signal("odd", "execute-snapshot", 0, (("other", "t"),))  # not captured
    moved, notes = _take([refused, MOVE, replace(MOVE, id="move2", gtid_set="0-1-7")],
                         monkeypatch)
    assert moved.gtid_set == "0-1-7" and moved.signals == 13 and moved.snapshot is None
    assert [(n["id"], n["type"]) for n in notes] == [
        ("odd", "REFUSED"), ("move", "TAKEN"), ("move2", "TAKEN")]


PAUSE = Signal("pause", "pause-snapshot", 0)
RESUME = Signal("resume", "resume-snapshot", 0)


def test_a_pause_behind_a_request_pauses_the_snapshot_it_plans(
        monkeypatch: pytest.MonkeyPatch) -> None:
    moved, notes = _take([SNAP, PAUSE, replace(SNAP, id="snap2"), RESUME], monkeypatch)
    state = SnapshotState.from_json(moved.snapshot)
    assert state.tables == [["s", "a"]] and not state.paused and moved.signals == 14
    assert [(n["id"], n["type"]) for n in notes] == [
        ("snap", "TAKEN"), ("pause", "TAKEN"), ("snap", "PAUSED"), ("snap2", "REFUSED"),
        ("resume", "TAKEN"), ("snap", "RESUMED")]
    assert "resume it first" in notes[3]["additional_data"]["reason"]


def test_a_pause_or_resume_with_no_snapshot_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    moved, notes = _take([PAUSE, RESUME], monkeypatch)
    assert moved.snapshot is None and moved.signals == 12
    assert [(n["type"], n["additional_data"]["reason"]) for n in notes] == [
        ("REFUSED", "no snapshot is running"), ("REFUSED", "no snapshot is paused")]


def test_a_paused_snapshot_takes_every_signal_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    paused = SnapshotState([["s", "a"]], note={"id": "n", "aggregate": "Initial Snapshot",
                                              "started": True, "scanned": 0}, paused=True)
    start = Position(gtid_set="0-1-9", signals=10, snapshot=paused.as_json())
    moved, notes = _take([MOVE, SNAP], monkeypatch, start=start)
    assert moved.signals == 12 and moved.gtid_set == "0-1-9"  # neither waits: refused
    assert [n["type"] for n in notes] == ["REFUSED", "REFUSED"]
    assert SnapshotState.from_json(moved.snapshot).paused
