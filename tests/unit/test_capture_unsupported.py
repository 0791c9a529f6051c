"""Which binlog events capture refuses, and what its error says."""

from __future__ import annotations

import pytest

from cdc_ingest.capture.binlog_errors import ReplicaTakenOver, stream_error
from cdc_ingest.capture.unsupported import (
    has_tagged_gtids,
    partial_json_failed,
    unsupported_event,
)
from cdc_ingest.errors import PositionPurgedError
from cdc_ingest.model import Position

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


@pytest.mark.parametrize(("gtid_set", "tagged"), [
    (f"{UUID}:1-3051:mytag:1-3", True),
    (f"{UUID}:_t9:1", True),
    (f"{UUID}:1-5:7-9,\nab11fa47-71ca-11e1-9e33-c80aa9429562:1-5", False),
    ("0-1-5,1-2-3", False),
    ("", False),
])
def test_tagged_gtid_sets_are_told_apart(gtid_set: str, tagged: bool) -> None:
    assert has_tagged_gtids(gtid_set) is tagged


@pytest.mark.parametrize(("event_type", "words"), [
    (166, ["log_bin_compress=ON", "SET GLOBAL log_bin_compress=OFF"]),
])
def test_refused_events_say_what_where_and_the_fix(event_type: int, words: list[str]) -> None:
    error = unsupported_event(event_type, "binlog.000007:1234", f"{UUID}:77")
    assert error is not None and error.exit_code == 3
    text = str(error)
    assert "binlog.000007:1234" in text and f"{UUID}:77" in text and "new pipeline" in text
    assert all(w in text for w in words), text


def test_other_unknown_events_pass() -> None:
    # anonymous GTIDs (34), transaction context (36), heartbeat v2 (41): nothing to lose;
    # compressed transactions (40) and tagged GTIDs (42) are read (capture.binlog)
    assert all(unsupported_event(t, "b:4", None) is None for t in (34, 36, 40, 41, 42))


def test_a_partial_json_update_that_does_not_apply_names_table_column_and_fix() -> None:
    text = str(partial_json_failed("shop", "orders", "doc", "binlog.000002:99", f"{UUID}:5",
                                   ValueError("path $.a[3] not found")))
    assert "shop.orders.doc" in text and "binlog.000002:99" in text and f"{UUID}:5" in text
    assert "path $.a[3] not found" in text
    assert "binlog_row_value_options=''" in text


def test_mysql_dropping_a_stream_for_a_second_replica_is_a_takeover_not_a_purge() -> None:
    at = Position(gtid_set=f"{UUID}:1-5")
    same_id = stream_error(Exception(1236, "A replica with the same server_uuid/server_id as "
                                           "this replica has connected to the source; ..."),
                           at, 5400)
    assert isinstance(same_id, ReplicaTakenOver) and "server-id 5400" in str(same_id)
    purged = stream_error(Exception(1236, "Cannot replicate because the source purged "
                                          "required binary logs."), at, 5400)
    assert isinstance(purged, PositionPurgedError) and "purged" in str(purged)
    assert isinstance(stream_error(Exception(4052, "same id"), at, 1), ReplicaTakenOver)
