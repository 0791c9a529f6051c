"""MySQL GTIDs on the wire: the binary GTID set of COM_BINLOG_DUMP_GTID and the body of
GTID_TAGGED_LOG_EVENT. Known bytes are what MySQL 9.7.4 sent (scripts/dev/check_gtid_wire.py):
event bodies of type 42 and the Previous_gtids events MySQL encodes itself."""

from __future__ import annotations

import struct

import pytest

from cdc_ingest.mysql.gtid import format_gtid_set, parse_gtid_set_strict
from cdc_ingest.mysql.gtid_wire import (
    TaggedGtidEvent,
    decode_gtid_set,
    encode_gtid_set,
    parse_tagged_gtid_event,
    read_varint,
    signed_varint,
    varint,
)

SRV = "8bf12fe9-e7d5-11f1-857f-02fc00000001"
LOW = "00000000-0000-0000-0000-00000000c0de"
HIGH = "ffffffff-0000-0000-0000-00000000c0de"
FF, F1 = "00000000-0000-0000-0000-0000000000ff", "ffffffff-0000-0000-0000-000000000001"

# Previous_gtids of mysql-bin.000002 after FLUSH BINARY LOGS: MySQL's tagged encoding
PREVIOUS_TAGGED_TEXT = (f"{FF}:x:5,\n{LOW}:chk_z:1-2,\n{SRV}:1-9:chk_a:1-3:chk_b:1:tag_a:1-2:"
                        f"tag_b:1,\n{F1}:9,\n{HIGH}:1")
PREVIOUS_TAGGED = bytes.fromhex(
    "0109000000000001000000000000000000000000000000ff027801000000000000000500000000000000060000"
    "00000000000000000000000000000000000000c0de0a63686b5f7a010000000000000001000000000000000300"
    "0000000000008bf12fe9e7d511f1857f02fc0000000100010000000000000001000000000000000a0000000000"
    "00008bf12fe9e7d511f1857f02fc000000010a63686b5f61010000000000000001000000000000000400000000"
    "0000008bf12fe9e7d511f1857f02fc000000010a63686b5f620100000000000000010000000000000002000000"
    "000000008bf12fe9e7d511f1857f02fc000000010a7461675f6101000000000000000100000000000000030000"
    "00000000008bf12fe9e7d511f1857f02fc000000010a7461675f62010000000000000001000000000000000200"
    "000000000000ffffffff00000000000000000000000100010000000000000009000000000000000a0000000000"
    "0000ffffffff00000000000000000000c0de00010000000000000001000000000000000200000000000000")
# Previous_gtids on a server that never saw a tag: the classic format
PREVIOUS_UNTAGGED_TEXT = ("35f63339-e7d6-11f1-bf87-02fc00000001:1-2,\n"
                          "3e11fa47-71ca-11e1-9e33-c80aa9429562:1:7")
PREVIOUS_UNTAGGED = bytes.fromhex(
    "020000000000000035f63339e7d611f1bf8702fc00000001010000000000000001000000000000000300000000"
    "0000003e11fa4771ca11e19e33c80aa942956202000000000000000100000000000000020000000000000007000"
    "000000000000800000000000000")

# GTID_TAGGED_LOG_EVENT bodies (after the 19-byte header, checksum off) and what
# SHOW BINLOG EVENTS said of them
TAG_B_1 = bytes.fromhex("0276000000022d02c5035ea5039d03550322c5031502fe04f103000000020404060a7461"
                        "675f6208100a140c7f7d0966590061061095041283120b")
X_5 = bytes.fromhex("026000000202000000000000000000000000000000fd03041406027808100a240c7f3654665900"
                    "61061059031283120b")
CHK_Z_2 = bytes.fromhex("026a000002020000000000000000000000000000010379030408060a63686b5f7a08300a44"
                        "0c7f41a8c366006106106d031283120b")


# --- variable-length integers -----------------------------------------------------------------


def test_varints_as_in_mysql_serialization_readme() -> None:
    # readme.md: 65535 is "00000111 11111111 11111011", signed 65535 "00001111 11111111
    # 11110011", -65535 "... 11101011", -65536 "... 11111011" (big-endian bit pictures)
    assert varint(65535) == bytes.fromhex("fbff07")
    assert signed_varint(65535) == bytes.fromhex("f3ff0f")
    assert signed_varint(-65535) == bytes.fromhex("ebff0f")
    assert signed_varint(-65536) == bytes.fromhex("fbff0f")


@pytest.mark.parametrize(("value", "size"), [
    (0, 1), (1, 1), (127, 1), (128, 2), (2**14 - 1, 2), (2**14, 3), (2**56 - 1, 8), (2**56, 9),
    (2**63, 9), (2**64 - 1, 9),
])
def test_varint_sizes_and_round_trip(value: int, size: int) -> None:
    encoded = varint(value)
    assert len(encoded) == size
    assert read_varint(b"\x00" + encoded + b"\x00", 1) == (value, 1 + size)


def test_varint_range_and_truncation() -> None:
    for bad in (-1, 2**64):
        with pytest.raises(ValueError):
            varint(bad)
    with pytest.raises(ValueError):
        signed_varint(2**63)
    with pytest.raises(ValueError, match="runs past the end"):
        read_varint(varint(2**20)[:-1], 0)
    with pytest.raises(ValueError, match="ends there"):
        read_varint(b"", 0)


# --- GTID sets ----------------------------------------------------------------------------------


def test_tagged_set_encodes_byte_for_byte_as_mysql_does() -> None:
    assert encode_gtid_set(PREVIOUS_TAGGED_TEXT) == PREVIOUS_TAGGED
    assert decode_gtid_set(PREVIOUS_TAGGED) == PREVIOUS_TAGGED_TEXT
    # n_sids: format 1 in the top byte, 9 sources in bytes 1..6, format 1 again in byte 0
    assert struct.unpack_from("<Q", PREVIOUS_TAGGED)[0] == 1 << 56 | 9 << 8 | 1


def test_untagged_set_uses_the_classic_format() -> None:
    assert encode_gtid_set(PREVIOUS_UNTAGGED_TEXT) == PREVIOUS_UNTAGGED
    assert decode_gtid_set(PREVIOUS_UNTAGGED) == PREVIOUS_UNTAGGED_TEXT
    assert encode_gtid_set("") == bytes(8)
    assert encode_gtid_set(f"{SRV}:5-3") == bytes(8)  # an empty interval is no source
    assert encode_gtid_set(f"{SRV}:1-3") == (
        struct.pack("<Q", 1) + bytes.fromhex(SRV.replace("-", "")) + struct.pack("<Qqq", 1, 1, 4))


def test_one_tag_switches_the_whole_set_to_the_tagged_format() -> None:
    encoded = encode_gtid_set(f"{SRV}:1-3:T:5")
    assert encoded == (struct.pack("<Q", 1 << 56 | 2 << 8 | 1)
                       + bytes.fromhex(SRV.replace("-", "")) + b"\x00"
                       + struct.pack("<Qqq", 1, 1, 4)
                       + bytes.fromhex(SRV.replace("-", "")) + b"\x02t"
                       + struct.pack("<Qqq", 1, 5, 6))


@pytest.mark.parametrize("text", [
    "", f"{SRV}:1", f"{SRV}:1-9223372036854775806", f"{HIGH}:1-3:5,{SRV.upper()}:tag_b:2:Tag_A:1-4",
    f"{LOW}:{'z' * 32}:7:9:11-20,{LOW}:3", PREVIOUS_TAGGED_TEXT,
])
def test_round_trip(text: str) -> None:
    assert decode_gtid_set(encode_gtid_set(text)) == format_gtid_set(parse_gtid_set_strict(text))


def _untagged(*intervals: tuple[int, int]) -> bytes:
    return (struct.pack("<Q", 1) + bytes(16) + struct.pack("<Q", len(intervals))
            + b"".join(struct.pack("<qq", *iv) for iv in intervals))


@pytest.mark.parametrize(("data", "why"), [
    (b"\x00" * 7, "at least 8 bytes"),
    (struct.pack("<Q", 2 << 56 | 1), "unknown GTID set format"),
    (struct.pack("<Q", 1 << 56 | 1 << 8), "unknown GTID set format"),
    (struct.pack("<Q", 1) + bytes(10), "inside a uuid"),
    (struct.pack("<Q", 1) + bytes(16) + b"\x01", "before an interval count"),
    (_untagged((1, 2))[:-1], "too short"),
    (_untagged((3, 3)), "bad interval"),
    (_untagged((0, 3)), "bad interval"),
    (_untagged((1, 3), (3, 5)), "bad interval"),  # MySQL wants a gap between intervals
    (_untagged((5, 6), (1, 2)), "bad interval"),
    (_untagged((1, 2)) + b"\x00", "1 bytes after"),
    (struct.pack("<Q", 1 << 56 | 1 << 8 | 1) + bytes(16) + b"\x06a-b" + bytes(8), "bad tag"),
    (struct.pack("<Q", 1 << 56 | 1 << 8 | 1) + bytes(16) + b"\x42" + b"a" * 33 + bytes(8),
     "bad tag"),
])
def test_malformed_binary_sets(data: bytes, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        decode_gtid_set(data)


def test_encode_refuses_malformed_text() -> None:
    with pytest.raises(ValueError, match="UUID"):
        encode_gtid_set("3e11fa47-71ca-11e1-9e33:1")
    with pytest.raises(ValueError, match="transaction number"):
        encode_gtid_set(f"{SRV}:0")


# --- GTID_TAGGED_LOG_EVENT --------------------------------------------------------------------


def test_tagged_event_from_the_server() -> None:
    assert parse_tagged_gtid_event(TAG_B_1) == TaggedGtidEvent(
        uuid=SRV, tag="tag_b", gno=1, flags=0, last_committed=4, sequence_number=5,
        immediate_commit_timestamp=1795503988017533, original_commit_timestamp=1795503988017533,
        transaction_length=293, immediate_server_version=90704, original_server_version=90704,
        commit_group_ticket=0)


@pytest.mark.parametrize(("body", "gtid", "flags", "clock", "length"), [
    (TAG_B_1, f"{SRV}:tag_b:1", 0, (4, 5), 293),
    (X_5, f"{FF}:x:5", 1, (4, 9), 214),  # BEGIN; COMMIT: statements, may have SBR
    (CHK_Z_2, f"{LOW}:chk_z:2", 1, (12, 17), 219),
])
def test_gtids_are_what_show_binlog_events_says(body: bytes, gtid: str, flags: int,
                                               clock: tuple[int, int], length: int) -> None:
    event = parse_tagged_gtid_event(body)
    assert event.gtid == gtid
    assert (event.flags, event.may_have_sbr) == (flags, bool(flags))
    assert (event.last_committed, event.sequence_number) == clock
    assert event.transaction_length == length


def _message(fields: list[tuple[int, bytes]], last_needed: int = 0) -> bytes:
    """A serialization message the way MySQL frames it: version, size of it all, last
    non-ignorable field id, then ``varint id`` + value per field."""
    body = b"".join(varint(field) + value for field, value in fields)
    head = varint(1)
    for size in range(1, 1000):  # the size counts itself
        if len(head + varint(size) + varint(last_needed) + body) == size:
            return head + varint(size) + varint(last_needed) + body
    raise AssertionError("no size fits")


UUID_FIELD = b"".join(varint(b) for b in bytes.fromhex(LOW.replace("-", "")))
BASE = [(0, varint(0)), (1, UUID_FIELD), (2, signed_varint(7)), (3, b"\x06grp"),
        (4, signed_varint(10)), (5, signed_varint(11)), (6, varint(1_700_000_000_000_000))]


def test_optional_fields_and_defaults() -> None:
    event = parse_tagged_gtid_event(_message(BASE))  # a body stops after any field
    assert event.gtid == f"{LOW}:grp:7"
    assert event.original_commit_timestamp == event.immediate_commit_timestamp == 1_700_000_000_000_000
    assert (event.transaction_length, event.immediate_server_version,
            event.original_server_version, event.commit_group_ticket) == (0, 0, 0, 0)
    replicated = parse_tagged_gtid_event(_message([
        *BASE, (7, varint(1_600_000_000_000_000)), (8, varint(2**40)), (9, varint(90704)),
        (10, varint(80036)), (11, varint(2**64 - 1)), (12, b"\x05"), (30, varint(2**60))]))
    assert (replicated.original_commit_timestamp, replicated.transaction_length,
            replicated.immediate_server_version, replicated.original_server_version,
            replicated.commit_group_ticket) == (1_600_000_000_000_000, 2**40, 90704, 80036,
                                                2**64 - 1)
    assert replicated.immediate_commit_timestamp == 1_700_000_000_000_000
    assert parse_tagged_gtid_event(_message([(1, UUID_FIELD), (2, signed_varint(3))])).gtid \
        == f"{LOW}:3"  # no tag field: an untagged GTID text
    assert parse_tagged_gtid_event(_message([*BASE[:3], (3, b"\x06GrP")])).tag == "grp"


def _replace(field: int, value: bytes) -> list[tuple[int, bytes]]:
    return [(f, value if f == field else v) for f, v in BASE]


@pytest.mark.parametrize(("body", "why"), [
    (b"", "data ends there"),
    (TAG_B_1[:-1], "says 59 bytes, the body has 58"),
    (TAG_B_1 + bytes.fromhex("a1b2c3d4"), "checksum left on"),
    (b"\x04" + TAG_B_1[1:], "serialization format 2"),
    (_message(BASE, last_needed=13), "unknown fields that must not be skipped"),
    (_message([f for f in BASE if f[0] != 1]), "without its uuid"),
    (_message([f for f in BASE if f[0] != 2]), "without its gno"),
    (_message(_replace(2, signed_varint(0))), "gno 0 is not within"),
    (_message(_replace(2, signed_varint(-5))), "gno -5 is not within"),
    (_message(_replace(3, b"\x06g-p")), "bad tag"),
    (_message(_replace(3, b"\x42" + b"g" * 33)), "bad tag"),
    (_message(_replace(3, b"\x06\xe9ab")), "bad tag"),
    (_message(_replace(1, varint(256) + UUID_FIELD[1:])), "uuid byte 256"),
    (_message(_replace(0, varint(256))), "field 0 = 256 is out of range"),
    (_message([*BASE, (9, varint(2**32))]), "field 9 = 4294967296 is out of range"),
    (_message([*BASE[:4], BASE[5], BASE[4]]), "field 4 out of order"),
    (_message([*BASE, (6, varint(1))]), "field 6 out of order"),
    (_message([*BASE[:2], (2, b"\x07\x01")]), "runs past the end"),
    (_message([*BASE[:3], (3, b"\x08ab")]), "bad tag"),
])
def test_malformed_events(body: bytes, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_tagged_gtid_event(body)
