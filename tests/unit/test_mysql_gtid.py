"""MySQL GTID sets: what one set lacks of another (positions against gtid_purged and
gtid_executed)."""

from __future__ import annotations

from cdc_ingest.mysql.gtid import lacking, parse_gtid_set

A = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
B = "4e11fa47-71ca-11e1-9e33-c80aa9429562"


def test_sets_parse_with_tags_and_line_breaks() -> None:
    assert parse_gtid_set(f"{A.upper()}:1-5:7,\n{B}:1-3:mytag:4-9") == {
        A: [(1, 5), (7, 7)], B: [(1, 3)], f"{B}:mytag": [(4, 9)]}


def test_what_a_set_lacks() -> None:
    assert lacking(f"{A}:1-10", f"{A}:1-5") == ""
    assert lacking(f"{A}:1-5:6-10", f"{A}:2-9") == ""  # adjacent intervals join
    assert lacking(f"{A}:1-5", f"{A}:1-7") == f"{A}:1-7"
    assert lacking(f"{A}:1-5", f"{B}:1") == f"{B}:1-1"
    assert lacking(f"{A}:1-5", f"{A}:t:1") == f"{A}:t:1-1"  # a tag is a source of its own
    assert lacking("", "") == "" and lacking(f"{A}:1-3", "") == ""
