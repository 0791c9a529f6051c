"""The signal topic's records read as requests (capture/signal_format.py): Debezium's format
keyed by the pipeline's name, cdc-ingest's own, and every way a record is refused, with why."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from cdc_ingest.capture.signal_format import parse_signal
from cdc_ingest.capture.snapshot.filtered import MAX_FILTERED

ROOT = Path(__file__).resolve().parents[2]


def _parse(value: object, key: bytes | None = b"shop", offset: int = 7) -> object:
    raw = value if isinstance(value, bytes) else orjson.dumps(value)
    return parse_signal(key, raw, offset, "shop")


def test_debeziums_execute_snapshot_keyed_by_the_pipeline() -> None:
    signal = _parse({"type": "execute-snapshot", "id": "s1",
                     "data": {"data-collections": ["db.a", "db.b"], "type": "INCREMENTAL"}})
    assert signal.refused is None and signal.id == "s1"  # type: ignore[attr-defined]
    assert signal.tables == (("db", "a"), ("db", "b"))  # type: ignore[attr-defined]
    # data as JSON text (a signalling table's column); no id: the record's offset names it
    text = _parse({"type": "execute-snapshot",
                   "data": '{"data-collections": ["db.a"], "type": "blocking"}'})
    assert text.refused is None and text.id == "kafka-7"  # type: ignore[attr-defined]


def test_a_filtered_snapshot_in_either_format() -> None:
    dbz = _parse({"type": "execute-snapshot", "data": {
        "data-collections": ["db.a", "db.b"],
        "additional-conditions": [{"data-collection": "db.a", "filter": "id > 5"}]}})
    assert dbz.refused is None and dbz.where == {("db", "a"): "id > 5"}  # type: ignore[attr-defined]
    own = _parse({"type": "execute-snapshot", "id": "r9", "tables": ["db.a"],
                  "where": {"db.a": "v = 'x'"}}, key=b"r9")
    assert own.where == {("db", "a"): "v = 'x'"}  # type: ignore[attr-defined]
    for bad, why in (
            ([{"data-collection": "db.c", "filter": "1"}], "name a table that data-collections"),
            ([{"data-collection": "db.a", "filter": " "}], "malformed additional-conditions"),
            ([{"filter": "id > 1"}], "malformed additional-conditions")):
        refused = _parse({"type": "execute-snapshot", "data": {
            "data-collections": ["db.a"], "additional-conditions": bad}})
        assert why in (refused.refused or ""), refused  # type: ignore[attr-defined]


def test_the_docs_say_how_many_rows_a_filtered_snapshot_reads() -> None:
    text = " ".join((ROOT / "docs" / "operations.md").read_text().split())
    assert f"at most {MAX_FILTERED:,} rows" in text


def test_cdc_ingests_own_requests() -> None:
    snap = _parse({"type": "execute-snapshot", "id": "r1", "tables": ["db.a"]}, key=b"r1")
    assert snap.refused is None and snap.tables == (("db", "a"),)  # type: ignore[attr-defined]
    repair = _parse({"type": "repair", "id": "r2", "keys": {"db.a": ['{"id":1}']}}, key=b"r2")
    assert repair.keys == {("db", "a"): ['{"id":1}']}  # type: ignore[attr-defined]


@pytest.mark.parametrize(("value", "key", "why"), [
    (b"not json", b"shop", "the value is not JSON"),
    ([1, 2], b"shop", "not a JSON object"),
    ({"type": "execute-snapshot", "data": {"data-collections": ["db.a"]}}, b"other",
     "the key 'other': a signal in Debezium's format is keyed by the pipeline's name; send "
     "it keyed 'shop'"),
    ({"type": "execute-snapshot", "data": {"data-collections": ["db.a"]}}, None, "no key"),
    ({"type": "log", "data": {"message": "hi"}}, b"shop",
     "signal type 'log' is not one capture takes"),
    ({"type": "execute-snapshot", "data": {"data-collections": []}}, b"shop",
     "data.data-collections must list the tables"),
    ({"type": "execute-snapshot", "data": {"data-collections": ["nodot"]}}, b"shop",
     "malformed execute-snapshot data"),
    ({"type": "execute-snapshot", "data": {"data-collections": ["db.a"], "type": "x"}},
     b"shop", "data.type 'x': incremental or blocking"),
    ({"type": "stop", "id": "r3"}, b"r3", "signal type 'stop' is not one capture takes"),
    ({"type": "execute-snapshot", "id": "r4"}, b"r4", "malformed execute-snapshot request"),
])
def test_what_capture_does_not_take_is_refused_with_why(value: object, key: bytes | None,
                                                        why: str) -> None:
    signal = _parse(value, key)
    assert signal.refused is not None and why in signal.refused, signal  # type: ignore[attr-defined]
    assert signal.tables == ()  # type: ignore[attr-defined]


def test_pause_and_resume_in_either_format() -> None:
    for kind in ("pause-snapshot", "resume-snapshot"):
        dbz = _parse({"type": kind, "id": "d1", "data": {}})
        assert (dbz.type, dbz.id, dbz.refused) == (kind, "d1", None)  # type: ignore[attr-defined]
        assert _parse({"type": kind, "data": ""}).refused is None  # type: ignore[attr-defined]
        assert _parse({"type": kind, "data": {}}, key=b"x").refused is not None  # type: ignore[attr-defined]
        own = _parse({"type": kind, "id": "o1"}, key=b"o1")
        assert (own.type, own.id, own.refused) == (kind, "o1", None)  # type: ignore[attr-defined]


def test_set_binlog_position_in_either_format() -> None:
    dbz = _parse({"type": "set-binlog-position",
                  "data": {"binlog_filename": "mysql-bin.000003", "binlog_position": 1234}})
    assert dbz.refused is None and dbz.binlog == ("mysql-bin.000003", 1234)  # type: ignore[attr-defined]
    gtid = _parse({"type": "set-binlog-position", "data": '{"gtid_set": "0-1-100,1-2-7"}'})
    assert gtid.refused is None and gtid.gtid_set == "0-1-100,1-2-7"  # type: ignore[attr-defined]
    own = _parse({"type": "set-binlog-position", "id": "p1",
                  "gtid_set": "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-100\n"}, key=b"p1")
    assert own.id == "p1" and own.gtid_set == (  # type: ignore[attr-defined]
        "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-100")


@pytest.mark.parametrize(("data", "why"), [
    ({}, "it needs gtid_set, or binlog_filename"),
    ({"gtid_set": "0-1-5", "binlog_filename": "b.000001", "binlog_position": 4},
     "name one of them"),
    ({"binlog_filename": "b.000001"}, "binlog_position is a position in the file"),
    ({"binlog_filename": "b.000001", "binlog_position": 2}, "4 or more"),
    ({"binlog_filename": "b.000001", "binlog_position": True}, "4 or more"),
    ({"binlog_filename": "../etc/b", "binlog_position": 4}, "binlog_filename"),
    ({"gtid_set": ""}, "gtid_set is a GTID set"),
    ("[1]", "not a JSON object"),
])
def test_a_malformed_set_binlog_position_is_refused_with_why(data: object, why: str) -> None:
    signal = _parse({"type": "set-binlog-position", "data": data})
    assert signal.refused is not None and why in signal.refused, signal  # type: ignore[attr-defined]
    assert "set-binlog-position" in signal.refused  # type: ignore[attr-defined]


def _documented(kind: str) -> list[dict[str, object]]:
    text = (ROOT / "docs" / "output-contract.md").read_text()
    block = text.split(f"<!-- signals: {kind} -->\n```json\n", 1)[1].split("```", 1)[0]
    return [orjson.loads(line) for line in block.splitlines() if line.strip()]


def test_every_signal_output_contract_md_shows_is_taken_as_it_says() -> None:
    debezium, own = _documented("debezium"), _documented("own")
    assert {s["type"] for s in debezium} == {"execute-snapshot", "stop-snapshot",
                                             "pause-snapshot", "resume-snapshot",
                                             "set-binlog-position"}
    assert {s["type"] for s in own} == {"execute-snapshot", "set-binlog-position", "repair",
                                          "add-table"}
    for body in debezium:
        signal = _parse(body, key=b"shop")
        assert signal.refused is None and signal.id == body["id"], signal  # type: ignore[attr-defined]
        assert _parse(body, key=b"other").refused is not None  # type: ignore[attr-defined]
    for body in own:
        signal = _parse(body, key=str(body["id"]).encode())
        assert signal.refused is None and signal.id == body["id"], signal  # type: ignore[attr-defined]


def test_add_table_in_cdc_ingests_own_format_only() -> None:
    own = _parse({"type": "add-table", "id": "a1", "tables": ["db.b", "db.c"],
                  "snapshot": False, "config_sha256": "ab" * 32}, key=b"a1")
    assert own.refused is None and own.tables == (("db", "b"), ("db", "c"))  # type: ignore[attr-defined]
    assert own.with_rows is False and own.config_sha256 == "ab" * 32  # type: ignore[attr-defined]
    rows = _parse({"type": "add-table", "id": "a2", "tables": ["db.b"], "config_sha256": "x"})
    assert rows.refused is None and rows.with_rows is True  # type: ignore[attr-defined]
    for bad in ({"tables": ["db.b"]}, {"tables": [], "config_sha256": "x"},
                {"tables": ["db.b"], "config_sha256": "x", "snapshot": "no"},
                {"tables": ["b"], "config_sha256": "x"}):
        refused = _parse({"type": "add-table", "id": "a3", **bad})
        assert refused.refused.startswith("malformed add-table request")  # type: ignore[attr-defined]
    # Debezium adds a table by a configuration change: no such signal in its format
    dbz = _parse({"type": "add-table", "data": {"data-collections": ["db.b"]}})
    assert "is not one capture takes" in dbz.refused  # type: ignore[attr-defined]
    assert "add-table" in dbz.refused  # type: ignore[attr-defined]
