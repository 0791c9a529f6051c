"""`cdc-ingest status` output and verify's column facts, without services."""

from __future__ import annotations

from cdc_ingest.commands.status import (
    CaptureStatus,
    PartitionLag,
    PipelineStatus,
    SinkStatus,
    render_text,
)
from cdc_ingest.model import Position
from cdc_ingest.mysql.columns import Column


def test_status_text_is_aligned_and_totals_the_lag() -> None:
    capture = CaptureStatus(
        position=Position(gtid_set="0-1-27", file="mysql-bin.000001", pos=11550,
                          ts_ms=1_700_000_000_000),
        head=Position(gtid_set="0-1-30", file="mysql-bin.000001", pos=12000),
        behind_bytes=450, behind_seconds=3.25,
    )
    sink = SinkStatus("cdc-ingest.p.changelog", "cdc-ingest.p.sink", [
        PartitionLag(0, end_offset=12, committed=8, lag=3, last_sink_event_ms=1_699_999_999_000),
        PartitionLag(1, end_offset=None, committed=None, lag=0),
    ])
    status = PipelineStatus("p", capture, sink)
    assert render_text(status) == [
        "pipeline          p",
        "capture position  gtid 0-1-27, binlog mysql-bin.000001:11550 "
        "(last event 2023-11-14 22:13:20.000Z)",
        "binlog head       gtid 0-1-30, binlog mysql-bin.000001:12000",
        "capture behind    450 bytes, 3.2 s",
        "changelog         cdc-ingest.p.changelog",
        "sink group        cdc-ingest.p.sink",
        "  partition  end offset  committed  lag (rows)",
        "          0          12          8           3",
        "          1           -          -           0",
        "      total                                  3",
        "last sink event   2023-11-14 22:13:19.000Z",
    ]
    data = status.as_dict()
    assert data["sink"]["lag"] == 3
    assert data["capture"]["head"] == {"gtid_set": "0-1-30", "file": "mysql-bin.000001",
                                       "pos": 12000}
    assert data["capture"]["position"]["ts"] == "2023-11-14 22:13:20.000Z"


def test_status_shows_an_unfinished_snapshot_and_requests_not_taken() -> None:
    from cdc_ingest.capture.snapshot.state import SnapshotState  # noqa: PLC0415
    from cdc_ingest.commands.status import _snapshot_progress  # noqa: PLC0415

    state = SnapshotState([["shop", "a"], ["shop", "b"]], table=1,
                          chunks=[["shop", "a", None, None, "f", 1]] * 3)
    text = _snapshot_progress(Position(snapshot=state.as_json()))
    assert text == "table 2 of 2 (shop.b), 3 chunk(s) committed"
    status = PipelineStatus("p", CaptureStatus(snapshot=text, requests_waiting=1),
                            SinkStatus("c", "g"))
    lines = render_text(status)
    assert "snapshot          table 2 of 2 (shop.b), 3 chunk(s) committed" in lines
    assert any(line.startswith("requests          1 signal(s) not taken yet")
               for line in lines)
    assert _snapshot_progress(Position(snapshot={**state.as_json(), "done": True})) is None
    paused = _snapshot_progress(Position(snapshot={**state.as_json(), "paused": True}))
    assert paused == ("paused (cdc-ingest resume-snapshot reads on): table 2 of 2 (shop.b), "
                      "3 chunk(s) committed")


def test_status_text_without_a_position_or_a_server() -> None:
    status = PipelineStatus("p", CaptureStatus(error="cannot connect"),
                            SinkStatus("c", "g", error="cannot read"))
    lines = render_text(status)
    assert "capture position  none committed yet" in lines
    assert "capture error     cannot connect" in lines
    assert "sink error        cannot read" in lines
    assert "last sink event   none yet" in lines


def test_column_facts_from_information_schema() -> None:
    row = ("st", "set", "set('X','it''s')", None, None, "utf8mb4", 20)
    column = Column.from_row(row)
    assert column.data_type == "set" and column.labels == ("X", "it's")
    assert Column.from_row(("b", "bit", "bit(10)", None, None, None, None)).bits == 10
    assert Column.from_row(("t", "tinyint", "tinyint(1) unsigned", None, 0, None, None)) \
        .is_tinyint1
    assert not Column.from_row(("t", "tinyint", "tinyint(4)", None, 0, None, None)).is_tinyint1
    tm = Column.from_row((b"tm", b"TIME", b"time(3)", 3, None, None, None))
    assert (tm.name, tm.data_type, tm.fsp) == ("tm", "time", 3)


def test_status_names_tables_the_file_selects_and_capture_does_not_yet() -> None:
    status = PipelineStatus("p", CaptureStatus(not_captured_yet=["shop.b", "shop.c"]),
                            SinkStatus("c", "g"))
    assert ("not captured yet  shop.b, shop.c: selected by the pipeline file, not by the "
            "running capture; cdc-ingest add-table takes them in (docs/operations.md)"
            ) in render_text(status)
