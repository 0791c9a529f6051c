"""MySQL GTID sets: what one set lacks of another (positions against gtid_purged and
gtid_executed); adding one GTID and printing a set exactly as MySQL 9.7 prints it."""

from __future__ import annotations

import pytest

from cdc_ingest.mysql.gtid import (
    add_gtid,
    format_gtid_set,
    gtid_in_set,
    lacking,
    parse_gtid,
    parse_gtid_set,
    parse_gtid_set_strict,
)

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


# --- tagged GTIDs: text as MySQL prints it (observed on MySQL 9.7.4 with
# scripts/dev/check_gtid_wire.py) ------------------------------------------------------------

SRV = "8bf12fe9-e7d5-11f1-857f-02fc00000001"  # the server's uuid in those observations
LOW = "00000000-0000-0000-0000-00000000c0de"
HIGH = "ffffffff-0000-0000-0000-00000000c0de"


@pytest.mark.parametrize(("text", "mysql"), [
    # SELECT GTID_SUBTRACT(text, '') on MySQL 9.7.4
    (f"{HIGH}:5:1-3, {LOW.upper()}:Tag_2:4:tag_1:9-10:2,{SRV}:7-9:1-6",
     f"{LOW}:tag_1:2:9-10:tag_2:4,\n{SRV}:1-9,\n{HIGH}:1-3:5"),
    (f"{SRV}:z:3-4:1:a:2-2:1,{SRV}:10-12:tag_1:3:20-19,{LOW}:q",
     f"{SRV}:10-12:a:1-2:tag_1:3:z:1:3-4"),
    (f"{HIGH}:1-5:7:6,,{HIGH}:t:1-9223372036854775806",
     f"{HIGH}:1-7:t:1-9223372036854775806"),
    ("", ""),
    (" , ", ""),
])
def test_sets_print_as_mysql_prints_them(text: str, mysql: str) -> None:
    assert format_gtid_set(parse_gtid_set_strict(text)) == mysql


def test_format_takes_parsed_intervals_merges_and_orders() -> None:
    assert format_gtid_set({f"{SRV}:Tag_B": [(1, 1)], SRV.upper(): [(7, 9), (1, 5), (6, 6)],
                            f"{SRV}:tag_a": [(3, 4), (1, 2), (9, 9)], HIGH: [], LOW: [(2, 2)]}) \
        == f"{LOW}:2,\n{SRV}:1-9:tag_a:1-4:9:tag_b:1"
    assert format_gtid_set({}) == ""


# add_gtid, one GTID after another, against SELECT @@gtid_executed after each transaction
FF, F1 = "00000000-0000-0000-0000-0000000000ff", "ffffffff-0000-0000-0000-000000000001"
EXECUTED = [
    (None, f"{FF}:x:5,\n{SRV}:1-7:tag_a:1-2:tag_b:1,\n{F1}:9"),
    (f"{SRV}:chk_a:1", f"{FF}:x:5,\n{SRV}:1-7:chk_a:1:tag_a:1-2:tag_b:1,\n{F1}:9"),
    (f"{SRV}:chk_a:2", f"{FF}:x:5,\n{SRV}:1-7:chk_a:1-2:tag_a:1-2:tag_b:1,\n{F1}:9"),
    (f"{SRV}:8", f"{FF}:x:5,\n{SRV}:1-8:chk_a:1-2:tag_a:1-2:tag_b:1,\n{F1}:9"),
    (f"{SRV}:chk_b:1", f"{FF}:x:5,\n{SRV}:1-8:chk_a:1-2:chk_b:1:tag_a:1-2:tag_b:1,\n{F1}:9"),
    (f"{LOW}:chk_z:2",
     f"{FF}:x:5,\n{LOW}:chk_z:2,\n{SRV}:1-8:chk_a:1-2:chk_b:1:tag_a:1-2:tag_b:1,\n{F1}:9"),
    (f"{HIGH}:1", f"{FF}:x:5,\n{LOW}:chk_z:2,\n{SRV}:1-8:chk_a:1-2:chk_b:1:tag_a:1-2:tag_b:1,"
                  f"\n{F1}:9,\n{HIGH}:1"),
    (f"{SRV}:chk_a:3", f"{FF}:x:5,\n{LOW}:chk_z:2,\n{SRV}:1-8:chk_a:1-3:chk_b:1:tag_a:1-2:"
                       f"tag_b:1,\n{F1}:9,\n{HIGH}:1"),
    (f"{LOW}:chk_z:1", f"{FF}:x:5,\n{LOW}:chk_z:1-2,\n{SRV}:1-8:chk_a:1-3:chk_b:1:tag_a:1-2:"
                       f"tag_b:1,\n{F1}:9,\n{HIGH}:1"),
    (f"{SRV}:9", f"{FF}:x:5,\n{LOW}:chk_z:1-2,\n{SRV}:1-9:chk_a:1-3:chk_b:1:tag_a:1-2:"
                 f"tag_b:1,\n{F1}:9,\n{HIGH}:1"),
]


def test_add_gtid_gives_what_mysql_reports_after_each_transaction() -> None:
    executed = EXECUTED[0][1]
    assert format_gtid_set(parse_gtid_set_strict(executed)) == executed
    for gtid, mysql in EXECUTED[1:]:
        assert gtid is not None and not gtid_in_set(executed, gtid)
        executed = add_gtid(executed, gtid)
        assert executed == mysql
        assert gtid_in_set(executed, gtid)


def test_add_gtid_to_an_empty_set_and_merging() -> None:
    assert add_gtid("", f"{SRV.upper()}:TAG:3") == f"{SRV}:tag:3"
    assert add_gtid(f"{SRV}:1-5:7-9", f"{SRV}:6") == f"{SRV}:1-9"
    assert add_gtid(f"{SRV}:1-5:t:7-9", f"{SRV}:t:6") == f"{SRV}:1-5:t:6-9"
    assert add_gtid(f"{SRV}:2", f"{SRV}:1") == f"{SRV}:1-2"
    assert add_gtid(f"{SRV}:3", f"{SRV}:1") == f"{SRV}:1:3"


def test_add_gtid_already_in_the_set_returns_the_input_itself() -> None:
    messy = f" {SRV.upper()}:1-3:6-2 ,{SRV}:T:4 "
    assert add_gtid(messy, f"{SRV}:2") is messy
    assert add_gtid(messy, f"{SRV}:t:4") is messy
    assert add_gtid(messy, f"{SRV}:4") == f"{SRV}:1-4:t:4"


def test_gtid_in_set() -> None:
    executed = f"{SRV}:1-5:tag_a:1-2:7,\n{HIGH}:9"
    assert gtid_in_set(executed, f"{SRV}:5")
    assert not gtid_in_set(executed, f"{SRV}:6")
    assert gtid_in_set(executed, f"{SRV}:TAG_A:7")
    assert not gtid_in_set(executed, f"{SRV}:tag_a:5")  # 5 is untagged only
    assert not gtid_in_set(executed, f"{SRV}:tag_b:1")
    assert gtid_in_set(executed, f"{HIGH.upper()}:9")
    assert not gtid_in_set("", f"{HIGH}:9")


def test_parse_gtid() -> None:
    assert parse_gtid(f"{SRV}:12") == (SRV, 12)
    assert parse_gtid(f"{SRV.upper()}:My_Tag:9223372036854775806") == (f"{SRV}:my_tag",
                                                                       9223372036854775806)


@pytest.mark.parametrize("gtid", [
    SRV, f"{SRV}:0", f"{SRV}:tag", f"{SRV}:a:b:1", f"{SRV}:1-3", f"{SRV}:9223372036854775807",
    f"{SRV[:-1]}:1", f"{SRV}:1tag:1", f"{SRV}:{'t' * 33}:1", "", f"{SRV}:-1",
])
def test_malformed_gtids_are_refused(gtid: str) -> None:
    with pytest.raises(ValueError):
        parse_gtid(gtid)
    with pytest.raises(ValueError):
        add_gtid(f"{SRV}:1", gtid)


@pytest.mark.parametrize(("text", "why"), [
    (f"{SRV}:", "tag or an interval"),  # MySQL: Expected number
    (f"{SRV}::1", "tag or an interval"),
    (f"{SRV}:0", "transaction number"),  # MySQL: Interval start out of range
    (f"{SRV}:9223372036854775807", "transaction number"),
    (f"{SRV}:{'a' * 33}:1", "GTID tag"),  # MySQL: Expected number (tags have <= 32 chars)
    (f"{SRV}:1-x", "tag or an interval"),
    (f"{SRV}:1-2-3", "tag or an interval"),
    ("not-a-uuid:1", "UUID"),
    (f"{SRV}x:1", "UUID"),
    (f"{SRV}:t@g:1", "GTID tag"),
    (f"{SRV}:\u00b2", "tag or an interval"),  # a unicode digit is not a number here
])
def test_strict_parse_refuses_what_mysql_refuses(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_gtid_set_strict(text)


def test_strict_parse_takes_what_mysql_takes() -> None:
    assert parse_gtid_set_strict(f" {SRV} : 1 - 3 ,{SRV}:{'a' * 32}:010") == {
        SRV: [(1, 3)], f"{SRV}:{'a' * 32}": [(10, 10)]}
    assert parse_gtid_set_strict(f"{SRV}:tag_a:tag_b:1") == {f"{SRV}:tag_b": [(1, 1)]}
    assert format_gtid_set(parse_gtid_set_strict(f"{SRV}:5-3:tag")) == ""


@pytest.mark.parametrize("intervals", [
    {SRV: [(0, 3)]}, {SRV: [(4, 3)]}, {SRV: [(1, 2**63 - 1)]}, {"nope": [(1, 1)]},
    {f"{SRV}:9tag": [(1, 1)]},
])
def test_format_refuses_bad_intervals(intervals: dict[str, list[tuple[int, int]]]) -> None:
    with pytest.raises(ValueError):
        format_gtid_set(intervals)
