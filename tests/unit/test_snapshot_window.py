"""The MySQL chunk window: which transactions it replays, and where the next one starts."""

from __future__ import annotations

from typing import Any

import pytest

from cdc_ingest.capture.binlog_schema import ColumnSpec, FieldType, TableSchema
from cdc_ingest.capture.events import Heartbeat, Rows, TxBegin, TxCommit
from cdc_ingest.capture.snapshot import window as window_module
from cdc_ingest.capture.snapshot.window import Window
from cdc_ingest.errors import SourceError
from cdc_ingest.model import Position

U = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
SCHEMA = TableSchema("db", "t", (ColumnSpec("id", FieldType.LONG),), ("id",))


def _tx(n: int, begin: int, rows_at: int, end: int) -> list[Any]:
    return [TxBegin(f"{U}:{n}", "b.1", begin, 0),
            Rows("I", SCHEMA, [(None, [n])], 0, f"b.1:{rows_at}", "b.1", rows_at),
            TxCommit(0, "b.1", end)]


def test_replays_up_to_high_and_the_next_window_starts_there() -> None:
    executed = iter([f"{U}:1-5", f"{U}:1-7"])
    window = Window(lambda: next(executed))
    assert window.start() == Position(gtid_set=f"{U}:1-5")  # the first: by GTID
    applied: list[int] = []
    events = [Heartbeat("b.1", 100), *_tx(6, 100, 150, 200), *_tx(7, 200, 250, 300),
              *_tx(8, 300, 350, 400)]
    count = window.replay(iter(events), ("b.1", 300),
                          lambda ev: applied.append(ev.rows[0][1][0]) or 1)
    assert (count, applied) == (2, [6, 7])  # transaction 8 begins at the high watermark
    assert window.start() == Position(file="b.1", pos=300)  # 6 and 7 are visible now
    assert window.empty(("b.1", 300)) and not window.empty(("b.1", 301))


def test_waits_until_what_the_last_window_passed_is_visible(monkeypatch: Any) -> None:
    answers = [f"{U}:1-5", f"{U}:1-6", f"{U}:1-6", f"{U}:1-7"]
    window = Window(lambda: answers.pop(0))
    window.start()
    window.replay(iter(_tx(6, 100, 150, 200) + _tx(7, 200, 250, 300)), ("b.1", 300),
                  lambda ev: 1)
    assert window.start() == Position(file="b.1", pos=300)
    assert answers == []  # asked until 7 (in the binlog, committing) was visible

    stuck = Window(lambda: f"{U}:1-5")
    stuck.start()
    stuck.replay(iter(_tx(6, 100, 150, 200)), ("b.1", 200), lambda ev: 1)
    monkeypatch.setattr(window_module, "VISIBLE_TIMEOUT_S", 0.01)
    with pytest.raises(SourceError, match=f"{U}:1-6 are in the binlog but not visible"):
        stuck.start()
