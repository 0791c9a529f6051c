"""The snapshot's own value conversion gives the bytes the snapshot wrote before it had one
(verify's converters), and snapshot progress keeps exact key numbers exact."""

from __future__ import annotations

import random
import struct
from datetime import timedelta
from typing import Any

import orjson
import pytest

from cdc_ingest.capture.snapshot.keyorder import KeyColumn, KeyOrder
from cdc_ingest.capture.snapshot.state import Chunk, SnapshotState
from cdc_ingest.capture.snapshot.values import UnsupportedType, snapshot_converter
from cdc_ingest.capture.values import vector
from cdc_ingest.model import Position
from cdc_ingest.mysql import Column
from cdc_ingest.verify.convert import converter
from cdc_ingest.verify.values import dumps, parse, same

RNG = random.Random(20261124)


def _float32(x: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", x))[0])


def _point(x: float, y: float) -> bytes:
    return b"\x00\x00\x00\x00" + struct.pack("<BIdd", 1, 1, x, y)


CASES: list[tuple[Column, list[Any]]] = [
    (Column("f", "float", "float"),
     [_float32(RNG.uniform(-1e6, 1e6)) for _ in range(200)]
     + [_float32(x) for x in (1.1, 0.1, 3.4028234e38, 1e-7, 1e-45, 16777216.0, -0.0, 1.5e-5)]),
    (Column("d", "double", "double"),
     [RNG.uniform(-1e300, 1e300) for _ in range(50)] + [0.1, 1e16, 1e-5, 5e-324]),
    (Column("t", "time", "time(3)", fsp=3),
     [timedelta(hours=-838, minutes=-59, seconds=-59), timedelta(microseconds=-1500),
      timedelta(hours=25, seconds=1, microseconds=123456)]),
    (Column("y", "year", "year"), [1901, 2155, 0]),
    (Column("b", "binary", "binary(4)", octet_length=4), [b"\x01", b"\x00\xff\x00\x01"]),
    (Column("bit1", "bit", "bit(1)"), [b"\x00", b"\x01"]),
    (Column("bit9", "bit", "bit(9)"), [b"\x01\xff", b"\x01"]),
    (Column("s", "set", "set('a','b','it''s')"), ["", "a,it's", "b"]),
    (Column("blob", "blob", "blob"), [b"", bytes(range(256))]),
    (Column("g", "point", "point"), [_point(1.5, -2.0), _point(1e-5, 1e16)]),
    (Column("flag", "tinyint", "tinyint(1)"), [0, 1, -3]),
]


@pytest.mark.parametrize(("column", "values"), CASES, ids=[c.name for c, _ in CASES])
def test_snapshot_values_are_the_bytes_verify_computes(column: Column, values: list[Any]) -> None:
    mine = snapshot_converter(column, tinyint1_as_boolean=True)
    theirs = converter(column, tinyint1_as_boolean=True)
    assert mine is not None
    for value in values:
        assert orjson.dumps(mine(value)) == dumps(theirs(value)), (column.name, value)


def test_values_that_arrive_in_their_output_form_are_left_alone() -> None:
    for kind in ("int", "bigint", "varchar", "json", "enum"):
        assert snapshot_converter(Column("c", kind, kind), True) is None
    assert snapshot_converter(Column("c", "tinyint", "tinyint(1)"), False) is None
    decimal = snapshot_converter(Column("n", "decimal", "decimal(5,2)", scale=2), True)
    assert decimal is not None and orjson.dumps({"n": decimal("0.50")}) == b'{"n":0.50}'
    with pytest.raises(UnsupportedType, match="column x has type mystery"):
        snapshot_converter(Column("x", "mystery", "mystery"), True)


def test_progress_keeps_decimal_keys_as_exact_text() -> None:
    state = SnapshotState([["db", "t"]])
    big = orjson.Fragment("12345678901234567890.000000000000000001")
    state.chunk_done(Chunk("db", "t", None, {"k": big}), ("bin.000001", 99))
    body = orjson.loads(Position(snapshot=state.as_json()).to_json())["snapshot"]
    assert body["after"] == {"k": "12345678901234567890.000000000000000001"}
    again = SnapshotState.from_json(body)
    order = KeyOrder((KeyColumn("k", "decimal"),), lambda a, b, c, d: 0)
    # read back, the bound still compares exactly with a binlog key (a Fragment)
    assert order.within({"k": big}, None, again.chunks[0][3])
    assert not order.within({"k": orjson.Fragment("12345678901234567890.000000000000000002")},
                            None, again.chunks[0][3])


def test_vectors_read_alike_on_the_snapshot_binlog_and_verify_paths() -> None:
    floats = [_float32(RNG.uniform(-1e6, 1e6)) for _ in range(64)] + [1e-7, 3.4e38, -0.0]
    raw = struct.pack(f"<{len(floats)}f", *floats)
    column = Column("e", "vector", f"vector({len(floats)})")
    mine = snapshot_converter(column, True)
    assert mine is not None
    written = orjson.dumps(mine(raw))
    assert written == orjson.dumps(vector(raw))  # the binlog decoder's value, same bytes
    assert same(converter(column)(raw), parse(written))
    with pytest.raises(ValueError, match="whole number of floats"):
        vector(b"\x00\x00\x00")
