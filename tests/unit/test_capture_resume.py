"""Capture's resume rules and its hop-1 checkpoint, without services: which transactions and
rows an earlier run already wrote, and what a commit puts into the Kafka transaction."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from cdc_ingest.capture.events import TxBegin
from cdc_ingest.capture.options import StartupSpec
from cdc_ingest.capture.positions import SOURCE_KEY, PositionStore
from cdc_ingest.capture.resume import MySqlTxTracker, first_position, same_server
from cdc_ingest.capture.snapshot.state import SnapshotState
from cdc_ingest.capture.transaction import ChangelogTransaction, Limits
from cdc_ingest.errors import ConfigError, SourceError
from cdc_ingest.model import Position


def _begin(gtid: str | None, ts: int = 100) -> TxBegin:
    return TxBegin(gtid, "bin.000001", 4, ts)


def test_committed_gtids_accumulate_and_a_resent_transaction_is_skipped() -> None:
    tx = MySqlTxTracker(Position(gtid_set="0-1-5"))
    tx.begin(_begin("0-1-6"))
    assert not tx.skipped
    assert tx.commit() == "0-1-6" and tx.seen_gtid == "0-1-6"
    tx.begin(_begin("0-1-6"))  # the library re-sent it after reconnecting on its own
    assert tx.skipped
    tx.commit()
    tx.begin(_begin("1-2-1"))
    tx.commit()
    assert tx.seen_gtid == "0-1-6,1-2-1"


def test_mysql_gtid_sets_merge() -> None:
    uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    tx = MySqlTxTracker(Position(gtid_set=f"{uuid}:1-5"))
    tx.begin(_begin(f"{uuid}:6"))
    tx.commit()
    assert tx.seen_gtid == f"{uuid}:1-6"
    tx.begin(_begin(f"{uuid}:3"))  # sent again after a reconnect: skipped, not a crash
    assert tx.skipped and tx.commit() == f"{uuid}:3" and tx.seen_gtid == f"{uuid}:1-6"


def test_rows_written_by_an_earlier_run_inside_its_transaction_are_skipped() -> None:
    tx = MySqlTxTracker(Position(gtid_set="0-1-5", tx_gtid="0-1-6", rows_done=1234))
    tx.begin(_begin("0-1-6"))
    assert [tx.rows_event(1000) for _ in range(3)] == [(0, 1000), (1000, 234), (2000, 0)]
    tx.commit()
    tx.begin(_begin("0-1-7"))
    assert tx.rows_event(10) == (0, 0)  # only the resumed transaction had rows done


def test_resuming_inside_one_transaction_refuses_another_first() -> None:
    tx = MySqlTxTracker(Position(tx_gtid="0-1-6", rows_done=3))
    with pytest.raises(SourceError, match="refusing to guess"):
        tx.begin(_begin("0-1-9"))


def test_timestamp_mode_skips_transactions_until_the_first_one_at_or_after_it() -> None:
    tx = MySqlTxTracker(Position(), skip_before_s=200)
    tx.begin(_begin(None, ts=150))
    assert tx.skipped
    tx.commit()
    tx.begin(_begin(None, ts=200))
    assert not tx.skipped
    tx.commit()
    tx.begin(_begin(None, ts=150))  # binlog time may step back; nothing is skipped any more
    assert not tx.skipped


def test_first_positions_that_need_no_server() -> None:
    spec = StartupSpec(mode="specific-offset", gtid_set="0-1-9", skip_rows=2)
    assert first_position(spec, None) == Position(gtid_set="0-1-9", rows_done=2)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="lacks its options"):
        first_position(StartupSpec(mode="specific-offset"), None)  # type: ignore[arg-type]


class _Producer:
    """Records what a checkpoint asks of its transactional producer."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def begin(self) -> None:
        self.calls.append(("begin",))

    def send(self, topic: str, value: bytes, key: bytes | None = None,
             timestamp: int = 0, headers: Any = None, partition: int = -1) -> None:
        self.calls.append(("send", topic, key, orjson.loads(value)))

    def commit(self) -> None:
        self.calls.append(("commit",))

    raw_produce = None


def _checkpoint(heartbeat_s: float = 60.0) -> tuple[ChangelogTransaction, _Producer]:
    producer = _Producer()
    store = PositionStore({}, "offsets")
    tx = ChangelogTransaction(producer, store, "changelog", "schema", "notes",  # type: ignore[arg-type]
                              Limits(10, 60.0, heartbeat_s))
    tx.start_run(Position(file="b.1", pos=4))
    return tx, producer


def test_a_commit_puts_the_position_into_the_same_transaction_as_the_records() -> None:
    checkpoint, producer = _checkpoint()
    send, _ = checkpoint.row_sender()
    send("changelog", b'{"r":1}', b'{"id":1}')
    checkpoint.rows_sent(1, "d.t", "inserts")
    checkpoint.position = Position(file="b.1", pos=99)
    checkpoint.commit()
    assert producer.calls == [
        ("begin",), ("send", "changelog", b'{"id":1}', {"r": 1}),
        ("send", "offsets", b'{"stats":"d.t"}', {"inserts": 1, "updates": 0, "deletes": 0,
                                                 "ddls": 0, "snapshot_rows": 0}),
        ("send", "offsets", SOURCE_KEY, orjson.loads(Position(file="b.1", pos=99).to_json())),
        ("commit",)]
    assert checkpoint.committed == Position(file="b.1", pos=99)


def test_nothing_new_commits_nothing_until_the_position_moves_and_a_heartbeat_is_due() -> None:
    checkpoint, producer = _checkpoint(heartbeat_s=0.0)
    checkpoint.commit()
    checkpoint.maybe_commit()
    assert producer.calls == []
    checkpoint.position = Position(file="b.1", pos=120)  # the binlog moved, nothing captured
    checkpoint.maybe_commit()
    assert [c[0] for c in producer.calls] == ["begin", "send", "commit"]
    checkpoint.commit(force=True)  # a fenced producer finds out on a forced commit
    assert [c[0] for c in producer.calls][3:] == ["begin", "send", "commit"]


def test_a_snapshot_window_is_refused_on_another_server() -> None:
    """Chunk positions are one server's binlog positions: after a failover before the
    snapshot's window has passed, capture stops rather than guess."""
    state = SnapshotState([["db", "t"]], server="server_id=1")
    same_server(state, SimpleNamespace(server_identity=lambda: "server_id=1"))  # type: ignore[arg-type]
    same_server(SnapshotState([["db", "t"]]),  # a state from before the field: no check
                SimpleNamespace(server_identity=lambda: "server_id=2"))  # type: ignore[arg-type]
    with pytest.raises(SourceError, match=r"another server \(server_id=1\).*\(server_id=2\)"):
        same_server(state, SimpleNamespace(server_identity=lambda: "server_id=2"))  # type: ignore[arg-type]
    assert SnapshotState.from_json(state.as_json()).server == "server_id=1"


def test_signal_offsets_and_snapshot_resets_survive_the_position_record() -> None:
    state = SnapshotState([["db", "t"]], resets=[["db", "t"]], server="s")
    position = Position(gtid_set="0-1-5", snapshot=state.as_json(), signals=7)
    again = Position.from_json(position.to_json())
    assert again.signals == 7
    assert SnapshotState.from_json(again.snapshot or {}).resets == [["db", "t"]]
    # a record written before either existed reads as none
    old = Position.from_json(b'{"gtid_set": "0-1-5", "snapshot": {"tables": [], "table": 0}}')
    assert old.signals == 0 and SnapshotState.from_json(old.snapshot or {}).resets == []
