"""verify's own MySQL -> JSON conversions, one type at a time, without a server."""

from __future__ import annotations

import base64
import re
import struct
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from cdc_ingest.mysql.columns import Column
from cdc_ingest.verify.convert import (
    UnsupportedType,
    converter,
    decimal_value,
    float32_value,
    select_expression,
    time_text,
)
from cdc_ingest.verify.values import Float32Num, Float64Num, GeoText, Num, dumps, same
from cdc_ingest.verify.wkb import WkbError, geometry_text


def col(column_type: str, data_type: str | None = None, **kw: Any) -> Column:
    kind = data_type or re.split(r"[(\s]", column_type, maxsplit=1)[0].lower()
    return Column("c", kind, column_type, **kw)


def conv(column: Column, value: Any, tinyint1_as_boolean: bool = True) -> Any:
    return converter(column, tinyint1_as_boolean)(value)


# -- integers and booleans -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("column_type", "value"),
    [("tinyint(4)", -128), ("tinyint(3) unsigned", 255), ("smallint(6)", -32768),
     ("mediumint(8) unsigned", 16777215), ("int(11)", -2147483648),
     ("int(10) unsigned", 4294967295), ("bigint(20)", -9223372036854775808),
     ("bigint(20) unsigned", 18446744073709551615)],
)
def test_integers_are_exact(column_type: str, value: int) -> None:
    got = conv(col(column_type), value)
    assert got == value and type(got) is int
    assert dumps(got) == str(value).encode()


def test_bigint_unsigned_max_stays_exact_and_positive() -> None:
    assert dumps(conv(col("bigint(20) unsigned"), 18446744073709551615)) == \
        b"18446744073709551615"


def test_tinyint1_is_boolean_unless_disabled() -> None:
    t1 = col("tinyint(1)")
    assert conv(t1, 1) is True and conv(t1, 0) is False and conv(t1, -5) is True
    assert conv(col("tinyint(1) unsigned"), 7) is True
    assert conv(t1, 1, tinyint1_as_boolean=False) == 1
    assert type(conv(t1, 1, tinyint1_as_boolean=False)) is int
    assert conv(col("tinyint(2)"), 1) == 1 and type(conv(col("tinyint(2)"), 1)) is int


# -- exact and floating numbers --------------------------------------------------------------


def test_decimal_keeps_its_scale() -> None:
    assert decimal_value(Decimal("0.50"), 2) == Num("0.50")
    assert decimal_value(Decimal("0.5"), 2) == Num("0.50")  # the column's scale decides
    assert decimal_value(Decimal("-12345678.91"), 2) == Num("-12345678.91")
    assert decimal_value(Decimal("12345"), 0) == 12345
    assert type(decimal_value(Decimal("-99999"), 0)) is int


def test_65_digit_decimals_never_pass_through_a_float() -> None:
    text = "-12345678901234567890123456789012345.123456789012345678901234567891"
    assert decimal_value(Decimal(text), 30) == Num(text)
    big = "9" * 65
    assert decimal_value(Decimal(big), 0) == int(big)
    # pymysql gives 1E-30 for this; the output spells all 30 decimals
    assert decimal_value(Decimal("1E-30"), 30) == Num("0." + "0" * 29 + "1")
    assert decimal_value(Decimal("0E-30"), 30) == Num("0." + "0" * 30)


@pytest.mark.parametrize(
    ("stored", "text"),
    [(1.1, "1.1"), (3.4028234e38, "3.4028235e+38"), (-1.5, "-1.5"), (0.0, "0.0"),
     (0.1, "0.1"), (16777216.0, "16777216.0"), (1.4e-45, "1e-45"), (123456789.0, "123456790.0")],
)
def test_float_is_the_shortest_text_of_its_32_bit_value(stored: float, text: str) -> None:
    widened = struct.unpack("<f", struct.pack("<f", stored))[0]  # what `col + 0E0` returns
    got = float32_value(widened)
    assert isinstance(got, Float32Num) and str(got) == text


def test_double_is_the_python_float() -> None:
    got = conv(col("double"), -1.7976931348623157e308)
    assert isinstance(got, Float64Num) and float(got) == -1.7976931348623157e308
    assert str(conv(col("double"), 2.5e-308)) == "2.5e-308"


def test_float_columns_are_selected_as_doubles() -> None:
    assert select_expression(Column("f", "float", "float")) == "(`f` + 0E0)"
    assert select_expression(Column("we`ird", "int", "int(11)")) == "`we``ird`"


# -- dates and times ----------------------------------------------------------------------------


def test_date_and_zero_dates() -> None:
    assert conv(col("date"), date(2024, 1, 31)) == "2024-01-31"
    assert conv(col("date"), date(1, 1, 1)) == "0001-01-01"
    # pymysql hands zero and partial-zero dates over as text
    assert conv(col("date"), "0000-00-00") is None
    assert conv(col("datetime"), "0000-00-00 00:00:00") is None
    assert conv(col("datetime(3)", fsp=3), "2024-00-15 00:00:00.000") is None
    assert conv(col("timestamp"), "0000-00-00 00:00:00") is None


@pytest.mark.parametrize(
    ("value", "fsp", "text"),
    [(timedelta(hours=12, minutes=34, seconds=56), 0, "12:34:56"),
     (-timedelta(hours=838, minutes=59, seconds=59), 0, "-838:59:59"),
     (timedelta(hours=838, minutes=59, seconds=59), 0, "838:59:59"),
     (timedelta(hours=100, microseconds=1), 6, "100:00:00.000001"),
     (-timedelta(milliseconds=1), 3, "-00:00:00.001"),
     (-timedelta(hours=1, minutes=2, seconds=3, microseconds=4), 6, "-01:02:03.000004"),
     (timedelta(seconds=56, microseconds=789000), 3, "00:00:56.789"),
     (timedelta(0), 2, "00:00:00.00")],
)
def test_time_may_be_negative_or_beyond_a_day(value: timedelta, fsp: int, text: str) -> None:
    assert time_text(value, fsp) == text
    assert conv(col(f"time({fsp})" if fsp else "time", "time", fsp=fsp), value) == text


def test_datetime_and_timestamp_show_fsp_digits() -> None:
    moment = datetime(2024, 2, 29, 23, 59, 59, 500000)
    assert conv(col("datetime(3)", fsp=3), moment) == "2024-02-29 23:59:59.500"
    assert conv(col("datetime"), moment.replace(microsecond=0)) == "2024-02-29 23:59:59"
    assert conv(col("datetime(6)", fsp=6), datetime(9999, 12, 31, 23, 59, 59, 999999)) == \
        "9999-12-31 23:59:59.999999"
    assert conv(col("datetime"), datetime(1000, 1, 1)) == "1000-01-01 00:00:00"
    assert conv(col("timestamp(3)", fsp=3), datetime(1970, 1, 1, 0, 0, 1, 1000)) == \
        "1970-01-01 00:00:01.001Z"
    assert conv(col("timestamp"), datetime(2038, 1, 19, 3, 14, 7)) == "2038-01-19 03:14:07Z"


def test_year_is_a_number() -> None:
    assert conv(col("year(4)"), 2155) == 2155
    assert conv(col("year(4)"), 0) == 0


# -- text, binary, bits ------------------------------------------------------------------------------


def test_text_of_any_charset_is_a_string() -> None:
    assert conv(col("varchar(20)", charset="latin1"), "café€") == "café€"
    assert conv(col("text", charset="utf8mb4"), "emoji 😀 ok") == "emoji 😀 ok"
    assert conv(col("char(5)", charset="utf8mb4"), "ab") == "ab"
    assert conv(col("longtext", charset="utf8mb4"), '{"a": 1}') == '{"a": 1}'  # MariaDB JSON
    assert conv(col("json"), b'{"a": [1, 2.5]}') == '{"a": [1, 2.5]}'


def test_binary_is_padded_to_its_width() -> None:
    assert conv(col("binary(4)", octet_length=4), b"ab") == "YWIAAA=="
    assert conv(col("binary(4)", octet_length=4), b"ab\x00\x00") == "YWIAAA=="
    assert conv(col("binary(4)", octet_length=4), b"") == "AAAAAA=="
    assert conv(col("varbinary(10)"), b"a\x00b") == "YQBi"
    assert conv(col("blob"), b"\x00\xff") == "AP8="
    assert conv(col("longblob"), b"") == ""


def test_bits() -> None:
    assert conv(col("bit(1)"), b"\x01") is True
    assert conv(col("bit(1)"), b"\x00") is False
    assert conv(col("bit(10)"), b"\x02\xaa") == "Aqo="
    assert conv(col("bit(64)"), b"\xff" * 8) == "//////////8="
    assert conv(col("bit(16)"), b"\x01") == base64.b64encode(b"\x00\x01").decode()


def test_enum_and_set() -> None:
    assert conv(col("enum('a','b','c')"), "b") == "b"
    assert conv(col("enum('a','b')"), "") == ""
    members = col("set('x','y','z')")
    assert conv(members, "x,z") == ["x", "z"]
    assert conv(members, "z,x") == ["x", "z"]  # definition order
    assert conv(members, "") == []
    assert conv(members, {"y"}) == ["y"]
    quoted = col("set('it''s','A','b')")
    assert quoted.labels == ("it's", "A", "b")
    assert conv(quoted, "b,it's") == ["it's", "b"]


# -- geometry --------------------------------------------------------------------------------------


def wkb_point(x: float, y: float, order: str = "<") -> bytes:
    mark = b"\x01" if order == "<" else b"\x00"
    return mark + struct.pack(order + "Idd", 1, x, y)


def with_srid(body: bytes, srid: int = 0) -> bytes:
    return struct.pack("<I", srid) + body


def test_geometry_point_and_linestring() -> None:
    assert geometry_text(with_srid(wkb_point(1.5, -2.25))) == \
        '{"coordinates":[1.5,-2.25],"type":"Point","srid":0}'
    line = b"\x01" + struct.pack("<II", 2, 2) + struct.pack("<4d", 0, 0, 1, 1)
    assert geometry_text(with_srid(line, 4326)) == \
        '{"coordinates":[[0,0],[1,1]],"type":"LineString","srid":4326}'
    assert geometry_text(with_srid(wkb_point(-180, 90, order=">"))) == \
        '{"coordinates":[-180,90],"type":"Point","srid":0}'
    # Flink CDC's spelling (Esri's %.17g, then Jackson): Double.toString outside [1e-3, 1e7)
    assert geometry_text(with_srid(wkb_point(12345678.5, 1e-5))) == \
        '{"coordinates":[1.23456785E7,1.0E-5],"type":"Point","srid":0}'
    assert geometry_text(with_srid(wkb_point(1e17, 0.1))) == \
        '{"coordinates":[1.0E17,0.1],"type":"Point","srid":0}'


def test_geometry_polygon_multi_and_collection() -> None:
    ring = struct.pack("<I", 4) + struct.pack("<8d", 0, 0, 1, 0, 1, 1, 0, 0)
    polygon = b"\x01" + struct.pack("<II", 3, 1) + ring
    assert geometry_text(with_srid(polygon)) == (
        '{"coordinates":[[[0,0],[1,0],[1,1],[0,0]]],"type":"Polygon","srid":0}')
    multi = b"\x01" + struct.pack("<II", 4, 2) + wkb_point(1, 2) + wkb_point(3, 4)
    assert geometry_text(with_srid(multi)) == \
        '{"coordinates":[[1,2],[3,4]],"type":"MultiPoint","srid":0}'
    collection = b"\x01" + struct.pack("<II", 7, 2) + wkb_point(1, 2) + polygon
    assert geometry_text(with_srid(collection)) == (
        '{"geometries":[{"coordinates":[1,2],"type":"Point"},{"coordinates":'
        '[[[0,0],[1,0],[1,1],[0,0]]],"type":"Polygon"}],'
        '"type":"GeometryCollection","srid":0}')


def test_geometry_column_is_compared_as_json() -> None:
    got = conv(col("point"), with_srid(wkb_point(1.5, -2.25)))
    assert isinstance(got, GeoText)
    assert same(got, '{"type":"Point","srid":0,"coordinates":[1.5,-2.25]}')
    assert not same(got, '{"coordinates":[1.5,-2.5],"type":"Point","srid":0}')


def test_broken_geometry_is_an_error() -> None:
    with pytest.raises(WkbError):
        geometry_text(with_srid(b"\x01" + struct.pack("<I", 1) + b"\x00" * 8))
    with pytest.raises(WkbError):
        geometry_text(with_srid(b"\x07" + b"\x00" * 20))


def test_unknown_types_are_refused() -> None:
    with pytest.raises(UnsupportedType, match="xmltype"):
        converter(col("xmltype"))


def test_mariadb_plugin_types_compare_as_the_server_prints_them() -> None:
    for kind, text in (("uuid", "01020304-0506-0708-090a-0b0c0d0e0f10"),
                       ("inet4", "192.168.1.10"), ("inet6", "::ffff:10.1.2.3")):
        assert converter(col(kind))(text) == text
        assert converter(col(kind))(text.encode()) == text
