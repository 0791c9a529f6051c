"""verify's fast path writes each row's expected key and value as exactly the bytes ``dumps``
gives for what the ordinary conversion expects (verify/rowbytes.py), for fields its fast
forms take and for the ones they leave to the conversion; without a server (row packets
made here, PyMySQL's own decoders per field)."""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

import pytest
from pymysql import converters

from cdc_ingest.mysql.columns import Column
from cdc_ingest.mysql.raw_rows import RawRows, split_fields
from cdc_ingest.verify import rowbytes
from cdc_ingest.verify.mysql import RowConverter, TableShape
from cdc_ingest.verify.rowbytes import RowBytes
from cdc_ingest.verify.values import dumps

DT, D = converters.convert_datetime, converters.convert_date
# (column, PyMySQL's (encoding, converter) for its field, field texts to try)
COLUMNS: list[tuple[Column, tuple[str | None, Any], list[bytes]]] = [
    (Column("id", "bigint", "bigint(20)", nullable=False), ("ascii", int),
     [b"1", b"0", b"-5", b"9223372036854775807", b"-9223372036854775808",
      b"18446744073709551615", b"123456789012345678901234567890"]),
    (Column("n", "int", "int(10) unsigned zerofill"), ("ascii", int),
     [b"0000000007", b"0", b"-0", b"00", b"12"]),
    (Column("flag", "tinyint", "tinyint(1)"), ("ascii", int),
     [b"0", b"1", b"5", b"-3", b"00", b"-0"]),
    (Column("small", "tinyint", "tinyint(4)"), ("ascii", int), [b"0", b"-128", b"127"]),
    (Column("y", "year", "year(4)"), ("ascii", int), [b"2024", b"0000", b"1901"]),
    (Column("amount", "decimal", "decimal(12,2)", scale=2), ("ascii", Decimal),
     [b"0.50", b"-0.00", b"31.37", b"-1234567890.12", b"1.5", b"00.50", b".50", b"1.500"]),
    (Column("whole", "decimal", "decimal(65,0)"), ("ascii", Decimal),
     [b"0", b"-0", b"12", b"99999999999999999999999999999999999999999999999999999999999999999"]),
    (Column("created", "datetime", "datetime(6)", fsp=6), ("ascii", DT),
     [b"2024-01-01 00:00:01.000003", b"2024-01-31 23:59:59.999999", b"2024-02-29 12:00:00.5",
      b"2023-02-29 00:00:00.000000", b"0000-00-00 00:00:00.000000", b"2024-00-10 00:00:00.0",
      b"0001-01-01 00:00:00.000000", b"9999-12-28 23:59:59.000001"]),
    (Column("plain", "datetime", "datetime"), ("ascii", DT),
     [b"2024-01-01 00:00:01", b"2024-01-01 00:00:01.5", b"2024-04-30 10:11:12"]),
    (Column("updated", "timestamp", "timestamp(3)", fsp=3), ("ascii", DT),
     [b"2024-01-01 00:00:01.501", b"1970-01-01 00:00:01.000", b"0000-00-00 00:00:00.000"]),
    (Column("day", "date", "date"), ("ascii", D),
     [b"2024-02-28", b"2024-02-29", b"2023-02-29", b"0000-00-00", b"2024-13-01"]),
    (Column("note", "varchar", "varchar(255)"), ("utf8", None),
     [s.encode() for s in ['plain', 'qu"ote\\back', 'tab\tnew\nline\x00\x1f\x7f',
                           'caf\u00e9 \U0001f600', '', '/slash </script>']]),
    (Column("payload", "json", "json"), ("utf8", None), [b'{"a": [1, 2.50]}']),
    (Column("ratio", "double", "double"), ("ascii", float), [b"0.1", b"1e300", b"-0"]),
    (Column("f", "float", "float"), ("ascii", float), [b"1.100000023841858", b"3"]),
    (Column("t", "time", "time(2)", fsp=2), ("ascii", converters.convert_timedelta),
     [b"-838:59:59.00", b"12:00:00.50"]),
]


def _lenenc(field: bytes | None) -> bytes:
    if field is None:
        return b"\xfb"
    n = len(field)
    if n < 251:
        return bytes([n]) + field
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little") + field
    if n < 1 << 24:
        return b"\xfd" + n.to_bytes(3, "little") + field
    return b"\xfe" + n.to_bytes(8, "little") + field


def _raw(decoders: list[tuple[str | None, Any]]) -> RawRows:
    raw = object.__new__(RawRows)
    raw.decoders = decoders
    return raw


@pytest.mark.parametrize("boolean", [True, False])
@pytest.mark.parametrize("except_key", [False, True])
def test_row_bytes_are_dumps_of_the_ordinary_conversion(boolean: bool, except_key: bool) -> None:
    shape = TableShape("db", "t", tuple(c for c, _, _ in COLUMNS), ("id", "note"))
    raw = _raw([d for _, d, _ in COLUMNS])
    build = RowBytes(shape, raw, boolean, except_key)
    convert = RowConverter(shape, boolean)
    rng = random.Random(45)
    choices = [[*texts, None] for _, _, texts in COLUMNS]
    rows = [[texts[i % len(texts)] for texts in choices] for i in range(12)]
    rows += [[rng.choice(texts) for texts in choices] for _ in range(400)]
    for fields in rows:
        fields[0] = fields[0] or b"1"
        fields[11] = fields[11] if fields[11] is not None else b"k"
        packet = b"".join(_lenenc(f) for f in fields)
        assert split_fields(packet, len(fields)) == fields
        values = tuple(raw.value(i, f) for i, f in enumerate(fields))
        key, row = convert(values)
        if except_key:
            row = {k: v for k, v in row.items() if k not in shape.key}
        assert build(packet) == (key, dumps(row)), fields


def test_long_fields_are_split_by_their_length_prefix() -> None:
    fields = [b"x" * 250, b"y" * 251, b"z" * 70_000, None, b"", b"w" * (1 << 24)]
    packet = b"".join(_lenenc(f) for f in fields)
    assert split_fields(packet, len(fields)) == fields


def _mutants(rng: random.Random, text: bytes) -> bytes:
    """``text`` with a byte changed, dropped or added (digits and separators mostly)."""
    alphabet = b"0123456789-.: Z\"\\\x00\x1f\x7fa\xc3\xa9\xed\xa0\x80\xf4\x90"
    at = rng.randrange(len(text) + 1)
    byte = bytes([rng.choice(alphabet)])
    how = rng.randrange(3)
    if how == 0 and at < len(text):
        return text[:at] + byte + text[at + 1:]
    if how == 1 and at < len(text):
        return text[:at] + text[at + 1:]
    return text[:at] + byte + text[at:]


def _both(build: RowBytes, packet: bytes) -> tuple[Any, Any]:
    outcomes = []
    for run in (lambda: build(packet), lambda: tuple(x[0] for x in build.batch([packet]))):
        try:
            outcomes.append(run())
        except Exception as exc:  # noqa: BLE001 - the same failure on both is what is held
            outcomes.append(type(exc))
    return outcomes[0], outcomes[1]


@pytest.mark.skipif(rowbytes._rowbytes is None, reason="the compiled writer is not built")
@pytest.mark.parametrize("boolean", [True, False])
@pytest.mark.parametrize("except_key", [False, True])
def test_the_compiled_writer_writes_the_same_bytes(boolean: bool, except_key: bool) -> None:
    """Field by field, fields of each fast form and every near miss of it (a byte changed,
    dropped or added) through the compiled writer and the Python one: the same bytes (or the
    same failure, for text that is not UTF-8)."""
    shape = TableShape("db", "t", tuple(c for c, _, _ in COLUMNS), ("id", "note"))
    raw = _raw([d for _, d, _ in COLUMNS])
    build = RowBytes(shape, raw, boolean, except_key)
    assert build._compiled is not None
    rng = random.Random(7 + boolean + 2 * except_key)
    texts = [[*t, None] for _, _, t in COLUMNS]
    texts[COLUMNS.index(next(c for c in COLUMNS if c[0].name == "note"))][0:0] = [
        "\u2028 \u00ff \"\\ \x08\x0c\r".encode(), bytes(range(32)), b"\xc3", b"\xed\xa0\x80"]
    batch: list[bytes] = []
    expected: list[tuple[bytes, bytes]] = []
    for _ in range(6000):
        fields = [rng.choice(t) for t in texts]
        col = rng.randrange(len(fields))
        if fields[col] is not None and rng.random() < 0.8:
            fields[col] = _mutants(rng, fields[col])
        packet = b"".join(_lenenc(f) for f in fields)
        python, compiled = _both(build, packet)
        assert python == compiled, fields
        if isinstance(python, tuple):
            batch.append(packet)
            expected.append(python)
    keys, values = build.batch(batch)  # many rows at once: the same as one by one
    assert list(zip(keys, values, strict=True)) == expected


@pytest.mark.skipif(rowbytes._rowbytes is None, reason="the compiled writer is not built")
def test_the_compiled_writer_reads_long_fields_and_refuses_short_packets() -> None:
    shape = TableShape("db", "t", (Column("id", "bigint", "bigint(20)", nullable=False),
                                   Column("note", "longtext", "longtext")), ("id",))
    build = RowBytes(shape, _raw([("ascii", int), ("utf8", None)]), False, False)
    for size in (250, 251, 70_000, 1 << 24):
        packet = _lenenc(b"12") + _lenenc(b"x" * size)
        assert build.batch([packet]) == ([b'{"id":12}'], [build(packet)[1]])
    with pytest.raises(Exception, match="ends before"):
        build.batch([_lenenc(b"12") + b"\x05ab"])


def _packets(payloads: list[bytes], seq: int) -> bytes:
    """Payloads as the server sends them: 3-byte size, sequence number, payload; a payload
    of 0xFFFFFF bytes or more in packets of 0xFFFFFF bytes, then a shorter one."""
    out = []
    for whole in payloads:
        payload = whole
        while True:
            part, payload = payload[:0xFFFFFF], payload[0xFFFFFF:]
            out.append(len(part).to_bytes(3, "little") + bytes([seq]) + part)
            seq = (seq + 1) % 256
            if len(part) < 0xFFFFFF:
                break
    return b"".join(out)


@pytest.mark.skipif(rowbytes._rowbytes is None, reason="the compiled writer is not built")
def test_a_row_stream_frames_the_sockets_bytes_however_they_come() -> None:
    shape = TableShape("db", "t", (Column("id", "bigint", "bigint(20)", nullable=False),
                                   Column("note", "longtext", "longtext")), ("id",))
    build = RowBytes(shape, _raw([("ascii", int), ("utf8", None)]), False, False)
    rows = [_lenenc(b"%d" % i) + _lenenc(b"n" * (i * 37 % 600)) for i in range(300)]
    rows.append(_lenenc(b"7") + _lenenc(b"x" * 0xFFFFFF))  # a payload over 16 MiB
    eof = b"\xfe\x00\x00\x22\x00"
    data = _packets([*rows, eof], 250)
    rng = random.Random(5)
    for _ in range(3):
        got: list[tuple[bytes, bytes]] = []

        def sink(keys: list[bytes], values: list[bytes], got: list[Any] = got) -> None:
            got.extend(zip(keys, values, strict=True))

        stream = rowbytes.RowStream(250, build, sink)
        at, state = 0, 0
        while at < len(data):
            step = rng.choice([1, 3, 4, 5, 100, 70_000, 1 << 20])
            state = stream.feed(data[at:at + step])
            at += step
        assert state == 1 and stream.last == eof
        assert stream.seq == (250 + 300 + 2 + 1) % 256
        assert got == [build(r) for r in rows]
    stream = rowbytes.RowStream(0, build, lambda k, v: None)
    with pytest.raises(Exception, match="sequence number wrong"):
        stream.feed(_packets(rows[:2], 1))
    stream = rowbytes.RowStream(0, build, lambda k, v: None)
    assert stream.feed(_packets([rows[0], b"\xff\x10\x04oops"], 0)) == 2  # an error packet
    assert stream.last == b"\xff\x10\x04oops"


@pytest.mark.skipif(rowbytes._rowbytes is None, reason="the compiled writer is not built")
def test_a_failing_sink_is_kept_and_the_result_set_read_to_its_end() -> None:
    """``verify --continuous`` told to stop raises in the sink: the stream keeps the failure
    and reads past the rest, so the connection is left at the result set's end."""
    shape = TableShape("db", "t", (Column("id", "bigint", "bigint(20)", nullable=False),),
                       ("id",))
    build = RowBytes(shape, _raw([("ascii", int)]), False, False)
    calls: list[int] = []

    def sink(keys: list[bytes], values: list[bytes]) -> None:
        calls.append(len(keys))
        raise KeyboardInterrupt

    eof = b"\xfe\x00\x00\x22\x00"
    rows = [_lenenc(b"%d" % i) for i in range(50)]
    data = _packets([*rows, eof], 3)
    stream = rowbytes.RowStream(3, build, sink)
    states = [stream.feed(data[at:at + 40]) for at in range(0, len(data), 40)]
    assert states[-1] == 1 and set(states[:-1]) == {0} and stream.last == eof
    assert len(calls) == 1 and isinstance(stream.failure, KeyboardInterrupt)
