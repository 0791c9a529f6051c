"""The compiled row plan (C) against the generated Python decoder, on bytes built here.

Random bytes over every fixed-size type reach the C code's fallbacks too (values MySQL never
writes: month 0, fractions with too many digits, decimal groups over 999999999); the two
decoders must agree on every value or both fail. The integration test
test_capture_decoder_parity.py does the same on real binlog events.
"""

import random
import struct

import orjson
import pytest

from cdc_ingest.capture.binlog_schema import ColumnSpec, FieldType, TableSchema
from cdc_ingest.capture.decoder import compile_decoder, compile_plan, compiled_available
from tests.unit.test_values import _decimal_bytes


def _exact(values: list) -> list:
    """Comparable values: exact types, Fragments by text, floats by bits (NaN == NaN)."""
    def one(v: object) -> object:
        if isinstance(v, orjson.Fragment):
            return ("F", orjson.dumps(v))
        if isinstance(v, float):
            return ("f", struct.pack("<d", v))
        return (type(v), v)

    return [one(v) for v in values]


def _json_text(b: bytes) -> str:
    return b.decode()


FIXED = [
    ColumnSpec("ti", FieldType.TINY), ColumnSpec("tiu", FieldType.TINY, unsigned=True),
    ColumnSpec("flag", FieldType.TINY, as_boolean=True),
    ColumnSpec("si", FieldType.SHORT), ColumnSpec("siu", FieldType.SHORT, unsigned=True),
    ColumnSpec("mi", FieldType.INT24), ColumnSpec("miu", FieldType.INT24, unsigned=True),
    ColumnSpec("i", FieldType.LONG), ColumnSpec("iu", FieldType.LONG, unsigned=True),
    ColumnSpec("bi", FieldType.LONGLONG), ColumnSpec("biu", FieldType.LONGLONG, unsigned=True),
    ColumnSpec("dd", FieldType.DOUBLE), ColumnSpec("f", FieldType.FLOAT),
    ColumnSpec("d1", FieldType.NEWDECIMAL, precision=10, scale=2),
    ColumnSpec("d2", FieldType.NEWDECIMAL, precision=65, scale=30),
    ColumnSpec("d3", FieldType.NEWDECIMAL, precision=5, scale=5),
    ColumnSpec("d4", FieldType.NEWDECIMAL, precision=19, scale=0),
    ColumnSpec("dt", FieldType.DATE), ColumnSpec("yr", FieldType.YEAR),
    *(ColumnSpec(f"dtm{f}", FieldType.DATETIME2, fsp=f) for f in range(7)),
    *(ColumnSpec(f"ts{f}", FieldType.TIMESTAMP2, fsp=f) for f in range(7)),
    *(ColumnSpec(f"tm{f}", FieldType.TIME2, fsp=f) for f in range(7)),
    ColumnSpec("en", FieldType.ENUM, length=1, labels=("a", "b", "c")),
    ColumnSpec("en2", FieldType.ENUM, length=2, labels=tuple(f"l{i}" for i in range(300))),
    ColumnSpec("st", FieldType.SET, length=1, labels=("x", "y", "z")),
    ColumnSpec("dtm_v1", FieldType.DATETIME), ColumnSpec("ts_v1", FieldType.TIMESTAMP),
    ColumnSpec("tm_v1", FieldType.TIME),
]


def test_extension_is_built() -> None:
    # CI builds it (scripts/setup.sh sets CDC_INGEST_REQUIRE_EXT=1); a missing build fails
    # here instead of silently testing only the pure-Python path.
    assert compiled_available()


def test_random_bytes_decode_identically() -> None:
    rng = random.Random(20261122)
    schema = TableSchema("db", "t", tuple(FIXED), ("ti",))
    reference = compile_decoder(schema, _json_text)
    plan = compile_plan(schema, _json_text)
    row_size = None
    for _ in range(3000):
        body = rng.randbytes(400)
        nulls = bytes(rng.choice([0, 0, 0, rng.randrange(256)]) for _ in range(7))
        raw = nulls + body
        try:
            want, want_off = reference(raw, 0)
        except Exception:  # noqa: BLE001
            with pytest.raises(Exception):  # noqa: B017
                plan.decode(raw, 0)
            continue
        got, got_off = plan.decode(raw, 0)
        assert got_off == want_off
        assert _exact(got) == _exact(want)
        row_size = want_off
    assert row_size is not None


def test_valid_values_decode_identically() -> None:
    rng = random.Random(7)
    cols = [ColumnSpec(f"d{i}", FieldType.NEWDECIMAL, precision=p, scale=s)
            for i, (p, s) in enumerate([(1, 0), (9, 9), (18, 9), (38, 10), (65, 30), (65, 0)])]
    schema = TableSchema("db", "t", tuple(cols), ("d0",))
    reference = compile_decoder(schema, _json_text)
    plan = compile_plan(schema, _json_text)
    for _ in range(2000):
        parts = []
        for c in cols:
            intg = c.precision - c.scale
            whole = str(rng.randint(0, 10**intg - 1)) if intg else "0"
            frac = "".join(rng.choice("0123456789") for _ in range(c.scale))
            text = f"{whole}.{frac}" if c.scale else whole
            if rng.random() < 0.5:
                text = "-" + text
            parts.append(_decimal_bytes(text, c.precision, c.scale))
        raw = b"\x00" + b"".join(parts)
        assert _exact(plan.decode(raw, 0)[0]) == _exact(reference(raw, 0)[0])


def test_strings_and_payloads() -> None:
    cols = (
        ColumnSpec("id", FieldType.LONG),
        ColumnSpec("vc", FieldType.VARCHAR, length=300, encoding="utf8"),
        ColumnSpec("lat", FieldType.VARCHAR, length=20, encoding="cp1252"),
        ColumnSpec("bn", FieldType.STRING, length=4, encoding="binary"),
        ColumnSpec("bl", FieldType.BLOB, length=2, encoding=None),
        ColumnSpec("tx", FieldType.BLOB, length=4, encoding="utf8"),
        ColumnSpec("b10", FieldType.BIT, bits=10),
    )
    schema = TableSchema("db", "t", cols, ("id",))
    reference = compile_decoder(schema, _json_text)
    plan = compile_plan(schema, _json_text)
    text = "é😀\"\\\n".encode()
    raw = (b"\x00" + struct.pack("<i", 5) + struct.pack("<H", len(text)) + text
           + b"\x03caf" + b"\x02\x00\xff" + struct.pack("<H", 3) + b"abc"
           + struct.pack("<I", len(text)) + text + b"\x02\xaa")
    want, off = reference(raw, 0)
    assert plan.decode(raw, 0) == (want, off) and off == len(raw)


def test_truncated_and_invalid_rows_name_the_column() -> None:
    cols = (ColumnSpec("id", FieldType.LONG),
            ColumnSpec("name", FieldType.VARCHAR, length=10, encoding="utf8"))
    plan = compile_plan(TableSchema("db", "t", cols, ("id",)), _json_text)
    with pytest.raises(ValueError, match="truncated") as info:
        plan.decode_event(b"\x00\x01\x00", 0, 3, 0)
    assert info.value.column == 0
    with pytest.raises(ValueError) as info:
        plan.decode(b"\x00" + struct.pack("<i", 1) + b"\x02\xff\xfe", 0)
    assert info.value.column == 1
    assert isinstance(info.value.__cause__, UnicodeDecodeError)
    with pytest.raises(ValueError, match="runs past"):
        plan.decode_event(b"\x00" + struct.pack("<i", 1) + b"\x09ab", 0, 8, 0)
