"""The compiled snapshot row reader (``_textrows.pyx``) on hand-made packets.

Each fast kind against PyMySQL's conversion plus the snapshot's (the path the reader must
equal, byte for byte), over fuzzed fields; and the packet framing: rows split at every byte,
payloads of 16 MiB and more, the end and error packets, and bytes that break the protocol.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from cdc_ingest.capture.snapshot import values as V
from cdc_ingest.capture.snapshot.table import _textrows
from cdc_ingest.mysql import Column

pytestmark = pytest.mark.skipif(_textrows is None, reason="compiled extension not built")
RNG = random.Random(20261125)
EOF = b"\xfe\x00\x00\x02\x00"  # warnings 0, status: autocommit
MAX = 0xFFFFFF


def lenenc(field: bytes | None) -> bytes:
    if field is None:
        return b"\xfb"
    n = len(field)
    if n < 0xFB:
        head = bytes([n])
    elif n < 1 << 16:
        head = b"\xfc" + struct.pack("<H", n)
    elif n < 1 << 24:
        head = b"\xfd" + struct.pack("<I", n)[:3]
    else:
        head = b"\xfe" + struct.pack("<Q", n)
    return head + field


def packets(payloads: list[bytes], seq: int = 1) -> bytes:
    """Payloads framed as the server frames them (16 MiB pieces, then a shorter one)."""
    out = []
    for payload in payloads:
        at = 0
        while True:
            piece = payload[at:at + MAX]
            out.append(struct.pack("<I", len(piece))[:3] + bytes([seq % 256]) + piece)
            seq += 1
            at += MAX
            if len(piece) < MAX:
                break
    return b"".join(out)


def reader(kinds: list[int], generic: list[Callable[[bytes], bytes]], names: list[str],
           key: list[str], out: list[str] | None = None, seq: int = 1) -> tuple[Any, dict]:
    index = {n: i for i, n in enumerate(names)}
    rows: dict[bytes, tuple[bytes, bytes]] = {}
    parser = _textrows.TextRows(
        kinds, generic, [(orjson.dumps(n) + b":", index.get(n, -1)) for n in out or names],
        [(orjson.dumps(k) + b":", index[k]) for k in key], seq, rows)
    return parser, rows


# -- each fast kind equals PyMySQL's value after the snapshot's conversion -----------------


def _column(data_type: str, scale: int = 0, column_type: str | None = None) -> Column:
    return Column("c", data_type, column_type or data_type, scale=scale)


# (column, PyMySQL's encoding and converter for its field)
KINDS: list[tuple[Column, str, Any, bool]] = [
    (_column("int"), "ascii", int, False),
    (_column("bigint", column_type="bigint unsigned"), "ascii", int, False),
    (_column("year"), "ascii", int, False),
    (_column("tinyint", column_type="tinyint(1)"), "ascii", int, True),
    (_column("varchar"), "utf8", None, False),
    (_column("json"), "utf8", None, False),
    (_column("date"), "ascii", None, False),
    (_column("datetime"), "ascii", None, False),
    (_column("timestamp"), "ascii", None, False),
    (_column("decimal", scale=2), "ascii", None, False),
    (_column("decimal"), "ascii", None, False),
]


def _fields(data_type: str) -> list[bytes]:
    """Fields a server sends for the type, and bytes it never sends (refused or converted
    the same way as by the Python path all the same)."""
    ints = [b"0", b"-0", b"7", b"-7", b"000", b"0042", b"-0042", b"18446744073709551615",
            b"-9223372036854775808", b"123456789012345678901234567890", b"", b"-", b"1.5",
            b" 1", b"1e3", b"\xd9\xa4"]
    ints += [str(RNG.randrange(-10**20, 10**20)).encode() for _ in range(200)]
    if data_type in ("int", "bigint", "year", "tinyint", "decimal"):
        return [*ints, b"12.50", b"-0.01", b"000.10", b"5."]
    if data_type in ("date", "datetime", "timestamp"):
        days = [b"2024-01-31", b"0000-00-00", b"2024-00-10", b"2024-05-00", b"1000-01-01",
                b"0000-00-00 00:00:00", b"2024-05-06 07:08:09.123456", b"2024-5-6",
                b"2024-05-06T07", b"202", b"", b"2024-05-06 00:00:00"]
        return days + [
            f"{RNG.randrange(10000):04d}-{RNG.randrange(13):02d}-{RNG.randrange(32):02d} "
            f"{RNG.randrange(24):02d}:00:00".encode() for _ in range(100)]
    texts = [bytes([c]) for c in range(256)] + [b"", "é中😀\u2028".encode(), b"\xed\xa0\x80",
                                               b"\xc0\xaf", b"\xf4\x90\x80\x80", b"\xe0\x80"]
    alphabet = b'ab"\\\x00\x1f\x7f\x80\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80\xed\xa0\xff'
    texts += [bytes(RNG.choice(alphabet) for _ in range(RNG.randrange(12)))
              for _ in range(2000)]
    return texts


def _reference(convert: Callable[[bytes], bytes], field: bytes) -> bytes | type:
    try:
        return convert(field)
    except Exception as exc:  # noqa: BLE001 - the Python path's failure is the expected one
        return type(exc)


@pytest.mark.parametrize(("column", "encoding", "converter", "booleans"), KINDS,
                         ids=[f"{c.column_type}/{c.scale}" for c, *_ in KINDS])
def test_each_fast_kind_writes_what_the_python_path_writes(
        column: Column, encoding: str, converter: Any, booleans: bool) -> None:
    kind = V.text_kind(column, booleans, encoding, converter)
    assert kind != V.TEXT_GENERIC
    fix = V.snapshot_converter(column, booleans)
    convert = V.json_converter(encoding, converter, fix)
    checked = 0
    for field in _fields(column.data_type):
        want = _reference(convert, field)
        parser, rows = reader([V.TEXT_INT, kind], [convert, convert], ["id", "c"], ["id"])
        payload = lenenc(b"1") + lenenc(field)
        if isinstance(want, type):
            with pytest.raises(want):
                parser.feed(packets([payload, EOF]))
            continue
        assert parser.feed(packets([payload, EOF])) == 1
        assert rows == {b'{"id":1}': (b'{"id":1}', b'{"id":1,"c":' + want + b"}")}, field
        checked += 1
    assert checked > 10


def test_a_string_field_that_is_not_utf8_fails_as_pymysql_does() -> None:
    convert = V.json_converter("utf8", None, None)
    parser, _ = reader([V.TEXT_INT, V.TEXT_STR], [convert, convert], ["id", "c"], ["id"])
    with pytest.raises(UnicodeDecodeError):
        parser.feed(packets([lenenc(b"1") + lenenc(b"\xff"), EOF]))


def test_kinds_follow_what_pymysql_does_with_the_field() -> None:
    # a conversion PyMySQL would run, or an encoding other than UTF-8, is the Python path's
    assert V.text_kind(_column("varchar"), False, "latin1", None) == V.TEXT_GENERIC
    assert V.text_kind(_column("varchar"), False, None, None) == V.TEXT_GENERIC
    assert V.text_kind(_column("date"), False, "ascii", object()) == V.TEXT_GENERIC
    assert V.text_kind(_column("int"), False, "ascii", float) == V.TEXT_GENERIC
    assert V.text_kind(_column("float"), False, "ascii", float) == V.TEXT_GENERIC
    assert V.text_kind(_column("time"), False, "ascii", object()) == V.TEXT_GENERIC
    assert V.text_kind(_column("set"), False, "utf8", None) == V.TEXT_GENERIC
    assert V.text_kind(_column("tinyint", column_type="tinyint(1)"), False, "ascii",
                       int) == V.TEXT_INT


# -- framing -----------------------------------------------------------------------------


def _table() -> tuple[list[int], list[Callable[[bytes], bytes]], list[str]]:
    names = ["id", "name", "note", "at"]
    kinds = [V.TEXT_INT, V.TEXT_STR, V.TEXT_GENERIC, V.TEXT_DATE]
    generic = [V.json_converter("utf8", None, lambda v: v.upper())] * 4
    return kinds, generic, names


ROWS = [[b"1", b"ann", b"x", b"2024-01-02"], [b"2", None, b"y" * 300, None],
        [b"3", "é\"".encode(), b"", b"0000-00-00"]]
WANT = {
    b'{"id":1}': (b'{"id":1}', b'{"id":1,"name":"ann","note":"X","at":"2024-01-02"}'),
    b'{"id":2}': (b'{"id":2}', b'{"id":2,"name":null,"note":"' + b"Y" * 300
                  + b'","at":null}'),
    b'{"id":3}': (b'{"id":3}', '{"id":3,"name":"é\\"","note":"","at":null}'.encode()),
}


def test_rows_split_at_every_byte_parse_the_same() -> None:
    stream = packets([b"".join(lenenc(f) for f in row) for row in ROWS] + [EOF], seq=5)
    for cut in range(1, len(stream)):
        parser, rows = reader(*_table(), ["id"], seq=5)
        first = parser.feed(stream[:cut])
        assert (first, parser.feed(stream[cut:])) == (0, 1)
        assert rows == WANT
        assert parser.seq == 9 and parser.last == EOF and parser.count == 3
    parser, rows = reader(*_table(), ["id"], seq=5)
    assert [parser.feed(bytes([b])) for b in stream][-1] == 1
    assert rows == WANT


def test_projection_and_key_order() -> None:
    parser, rows = reader(*_table(), ["at", "id"], out=["note", "gone", "id"])
    parser.feed(packets([b"".join(lenenc(f) for f in ROWS[0]), EOF]))
    key = b'{"at":"2024-01-02","id":1}'
    assert rows == {key: (key, b'{"note":"X","gone":null,"id":1}')}


def test_payloads_of_16_mib_and_more() -> None:
    names = ["id", "big"]
    plain = V.json_converter("utf8", None, None)
    for size in (MAX - 1 - 4 - 2, MAX - 4 - 2, MAX + 10, 2 * MAX + 3):
        # the payload: id (2 bytes), the big field's 8- or 4-byte length, the field
        field = b"z" * size
        payload = lenenc(b"7") + lenenc(field)
        stream = packets([payload, EOF])
        framed = len(payload) // MAX + 1
        parser, rows = reader([V.TEXT_INT, V.TEXT_STR], [plain, plain], names, ["id"])
        at, state = 0, 0
        while state == 0:
            state = parser.feed(stream[at:at + 1_000_003])
            at += 1_000_003
        assert state == 1 and parser.seq == (1 + framed + 1) % 256
        assert rows[b'{"id":7}'][1] == b'{"id":7,"big":"' + field + b'"}'


def test_error_packet_ends_the_result_with_the_server_error() -> None:
    error = b"\xff\x10\x04#HY000boom"
    parser, rows = reader(*_table(), ["id"])
    stream = packets([b"".join(lenenc(f) for f in ROWS[0]), error])
    assert parser.feed(stream) == 2
    assert parser.last == error and len(rows) == 1


@pytest.mark.parametrize(("stream", "message"), [
    (packets([lenenc(b"1") + lenenc(b"a") + lenenc(b"b") + lenenc(None), EOF], seq=2),
     "sequence number wrong - got 2 expected 1"),
    (packets([lenenc(b"1") + lenenc(b"a"), EOF]), "has 2 of 4 fields"),
    (packets([lenenc(b"1") + lenenc(b"a") + lenenc(b"b") + lenenc(None) + b"x", EOF]),
     "1 bytes after its 4 fields"),
    (packets([lenenc(b"1") + b"\x09abc", EOF]), "runs past its end"),
    (packets([lenenc(b"1") + b"\xfc\x01", EOF]), "cut short"),
    (packets([EOF]) + b"\x01", "came after the result set's last packet"),
])
def test_bytes_that_break_the_protocol_are_refused(stream: bytes, message: str) -> None:
    parser, _ = reader(*_table(), ["id"])
    with pytest.raises(_textrows.PacketError, match=message):
        parser.feed(stream)
