"""``verify --repair`` reads capture's answer to its request: a refusal (a snapshot is paused)
ends the command with capture's reason instead of saying the keys were read again."""

from __future__ import annotations

import orjson

from cdc_ingest.capture.notifications import signal_note
from cdc_ingest.capture.signal_format import Signal
from cdc_ingest.commands.repair import refusal
from cdc_ingest.kafka.consumer import Message


def _message(value: bytes | None, offset: int) -> Message:
    return Message("cdc-ingest.p.notifications", 0, offset, b"p", value, (), 0)


def test_a_refused_repair_is_told_with_capture_s_reason() -> None:
    request = Signal("r7", "repair", 3)
    other = Signal("r6", "repair", 2)
    notes = [_message(signal_note("p", other, [], ["not this one"]), 0),
             _message(None, 1),
             _message(orjson.dumps({"id": "r7", "aggregate_type": "Incremental Snapshot",
                                    "type": "STARTED"}), 2),
             _message(signal_note("p", request, [], ["the snapshot is paused: resume it "
                                                     "first"]), 3)]
    assert refusal(notes, "r7") == "the snapshot is paused: resume it first"
    assert refusal(notes, "r6") == "not this one"
    assert refusal(notes, "r9") is None  # no answer: not refused
    taken = [_message(signal_note("p", request, ["s.t"], ["s.u is not captured"]), 0)]
    assert refusal(taken, "r7") is None  # taken, in part: carried out
