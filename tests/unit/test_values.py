"""Binlog value encodings -> output JSON, on bytes built by hand from the MySQL formats."""

import random
import struct

import orjson
import pytest

from cdc_ingest.capture import values as V
from cdc_ingest.capture.binlog_schema import ColumnSpec, FieldType, TableSchema
from cdc_ingest.capture.decoder import compile_decoder, failing_column
from cdc_ingest.capture.geometry import geometry_json


def _decimal_bytes(text: str, precision: int, scale: int) -> bytes:
    """Encode like MySQL's decimal2bin, independently of the decoder under test."""
    negative = text.startswith("-")
    digits = text.lstrip("-")
    int_part, _, frac_part = digits.partition(".")
    frac_part = frac_part.ljust(scale, "0")
    intg = precision - scale
    int_part = int_part.rjust(intg, "0")
    dig2bytes = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4]
    out = bytearray()
    lead = intg % 9
    if lead:
        out += int(int_part[:lead]).to_bytes(dig2bytes[lead], "big")
    for i in range(lead, intg, 9):
        out += int(int_part[i : i + 9]).to_bytes(4, "big")
    for i in range(0, scale - scale % 9, 9):
        out += int(frac_part[i : i + 9]).to_bytes(4, "big")
    if scale % 9:
        out += int(frac_part[scale - scale % 9 :]).to_bytes(dig2bytes[scale % 9], "big")
    out[0] ^= 0x80
    if negative:
        out = bytearray(b ^ 0xFF for b in out)
    return bytes(out)


@pytest.mark.parametrize(
    ("text", "precision", "scale"),
    [
        ("0.00", 10, 2),
        ("-12345678.91", 10, 2),
        ("12345", 5, 0),
        ("-1", 5, 0),
        ("99999999999999999999999999999999999.999999999999999999999999999999", 65, 30),
        ("-12345678901234567890123456789012345.123456789012345678901234567891", 65, 30),
        ("0.000000000000000000000000000001", 65, 30),
        ("-0.5", 3, 1),
    ],
)
def test_decimal_is_exact(text: str, precision: int, scale: int) -> None:
    raw = _decimal_bytes(text, precision, scale)
    assert len(raw) == V.decimal_size(precision, scale)
    assert V.decimal_text(raw, precision, scale) == text
    assert orjson.dumps({"d": V.decimal_json(raw, precision, scale)}) == f'{{"d":{text}}}'.encode()
    assert orjson.dumps(V.decimal_reader(precision, scale)(raw)) == text.encode()


def _time2(hours: int, minutes: int, seconds: int, micros: int, fsp: int, negative: bool) -> bytes:
    hms = (hours << 12) | (minutes << 6) | seconds
    packed = (hms << 24) + micros
    if negative:
        packed = -packed
    if fsp >= 5:
        return (packed + 0x800000000000).to_bytes(6, "big")
    intpart, frac = packed >> 24, packed % (1 << 24)
    if fsp == 0:
        return (intpart + 0x800000).to_bytes(3, "big")
    if fsp <= 2:
        unit, size = 10000, 1
    else:
        unit, size = 100, 2
    # Floor split: a negative value keeps a positive stored fraction, exactly as MySQL's
    # "intpart + 1, frac - 0x100" decoding expects.
    f = frac // unit
    return (intpart + 0x800000).to_bytes(3, "big") + f.to_bytes(size, "big")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((12, 34, 56, 0, 0, False), "12:34:56"),
        ((838, 59, 59, 0, 0, True), "-838:59:59"),
        ((100, 0, 0, 1, 6, False), "100:00:00.000001"),
        ((838, 59, 58, 999999, 6, True), "-838:59:58.999999"),
        ((23, 59, 59, 999000, 3, False), "23:59:59.999"),
        ((0, 0, 0, 10000, 2, False), "00:00:00.01"),
    ],
)
def test_time2_positive_negative_and_beyond_24h(args: tuple, expected: str) -> None:
    fsp = args[4]
    raw = _time2(*args)
    text, off = V.time2(raw, 0, fsp)
    assert text == expected
    assert off == len(raw)


def test_datetime2_and_zero_date() -> None:
    def enc(y: int, mo: int, d: int, h: int, mi: int, s: int) -> bytes:
        ym = y * 13 + mo
        packed = (((ym << 5) | d) << 17) | (h << 12) | (mi << 6) | s
        return (packed + 0x8000000000).to_bytes(5, "big")

    assert V.datetime2(enc(2024, 1, 31, 12, 34, 56), 0, 0) == ("2024-01-31 12:34:56", 5)
    raw = enc(9999, 12, 31, 23, 59, 59) + (999999).to_bytes(3, "big")
    assert V.datetime2(raw, 0, 6) == ("9999-12-31 23:59:59.999999", 8)
    assert V.datetime2(enc(0, 0, 0, 0, 0, 0), 0, 0) == (None, 5)


def test_timestamp2_is_utc_with_z() -> None:
    raw = (2147483647).to_bytes(4, "big") + (10).to_bytes(2, "big")  # 10 x 100us
    assert V.timestamp2(raw, 0, 3) == ("2038-01-19 03:14:07.001Z", 6)
    assert V.timestamp2(b"\x00\x00\x00\x00", 0, 0) == (None, 4)


def test_date_year_float_bit_set_enum() -> None:
    value = (2024 << 9) | (1 << 5) | 31
    assert V.date(value.to_bytes(3, "little"), 0) == "2024-01-31"
    assert V.date(b"\x00\x00\x00", 0) is None
    assert V.year(bytes([255]), 0) == 2155
    assert V.year(bytes([0]), 0) == 0
    assert V.float32(struct.pack("<f", 1.1), 0) == 1.1
    assert V.float32(struct.pack("<f", 3.4028234e38), 0) == 3.4028235e38
    assert V.bit_value(b"\x01", 0, 1, 1) == (True, 1)
    assert V.bit_value(b"\x02\xaa", 0, 2, 10) == ("Aqo=", 2)
    assert V.set_labels(0b101, ("x", "y", "z")) == ["x", "z"]
    assert V.set_labels(0, ("x", "y")) == []
    assert V.enum_label(2, ("a", "b")) == "b"
    assert V.enum_label(0, ("a", "b")) == ""
    assert V.fixed_binary(b"ab", 4) == "YWIAAA=="
    assert V.text(b"caf\xe9", "cp1252") == "café"
    assert V.text(b"\x81", "cp1252") == "\x81"


def test_geometry_point_and_linestring() -> None:
    point = (4326).to_bytes(4, "little") + b"\x01" + struct.pack("<Idd", 1, 1.5, -2.25)
    assert orjson.loads(geometry_json(point)) == {
        "coordinates": [1.5, -2.25], "type": "Point", "srid": 4326,
    }
    line = b"\x00" * 4 + b"\x01" + struct.pack("<II4d", 2, 2, 0, 0, 1, 1)
    assert orjson.loads(geometry_json(line))["coordinates"] == [[0, 0], [1, 1]]


def test_compiled_decoder_reads_nulls_and_values_in_order() -> None:
    schema = TableSchema(
        "db", "t",
        (
            ColumnSpec("id", FieldType.LONG),
            ColumnSpec("flag", FieldType.TINY, as_boolean=True),
            ColumnSpec("big", FieldType.LONGLONG, unsigned=True),
            ColumnSpec("name", FieldType.VARCHAR, length=80, encoding="utf8"),
            ColumnSpec("note", FieldType.BLOB, length=2, encoding="utf8"),
        ),
        ("id",),
    )
    decode = compile_decoder(schema, lambda b: b.decode())
    name = "😀x".encode()
    row = (
        bytes([0b10000])  # null bitmap: only 'note' is NULL
        + struct.pack("<i", -7) + b"\x01" + struct.pack("<Q", 18446744073709551615)
        + bytes([len(name)]) + name
    )
    values, off = decode(row + b"tail", 0)
    assert values == [-7, True, 18446744073709551615, "😀x", None]
    assert off == len(row)


def test_decoder_error_names_the_column() -> None:
    schema = TableSchema(
        "db", "t",
        (ColumnSpec("id", FieldType.LONG), ColumnSpec("name", FieldType.VARCHAR, length=10,
                                                      encoding="utf8")),
        ("id",),
    )
    decode = compile_decoder(schema, lambda b: b.decode())
    bad = b"\x00" + struct.pack("<i", 1) + b"\x02\xff\xfe"
    with pytest.raises(UnicodeDecodeError) as info:
        decode(bad, 0)
    assert failing_column(schema, info.value) == "name"


def test_decimal_random_layouts_round_trip() -> None:
    rng = random.Random(20261121)
    for _ in range(2000):
        precision = rng.randint(1, 65)
        scale = rng.randint(0, min(30, precision))
        intg = precision - scale
        whole = str(rng.randint(0, 10**intg - 1)) if intg else "0"
        frac = "".join(rng.choice("0123456789") for _ in range(scale))
        text = f"{whole}.{frac}" if scale else whole
        if rng.random() < 0.5 and text.strip("0.") != "":
            text = "-" + text
        raw = _decimal_bytes(text, precision, scale)
        assert orjson.dumps(V.decimal_reader(precision, scale)(raw)) == text.encode(), (
            precision, scale, text)
