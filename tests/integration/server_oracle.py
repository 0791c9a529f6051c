"""An oracle for the all-types records that does not come from cdc-ingest's code.

The golden files (``fixtures/all_types*.expected.jsonl``) are written from the product's own
output, so they catch any change but cannot say the first output was right. This module says
what each value should be from two other sources:

- **the server's own text**: :func:`read_server` asks the server for every column of every
  row as text it prints itself (``CAST(col AS CHAR)``, ``HEX(col)``, ``ST_AsGeoJSON``,
  ``CAST(CAST(f AS DOUBLE) AS CHAR)``, the session in UTC for TIMESTAMP), and turns that
  text into the JSON value docs/changelog-format.md ("Column types") prescribes, by one small
  rule per ``information_schema.COLUMNS.DATA_TYPE``. A column of a type with no rule fails
  the test, so a new column cannot go unchecked;
- **hand-written values** (:data:`HAND_WRITTEN`) for the values whose server text needs
  interpretation: negative and >24 h TIME, zero dates, DATETIME(6) fractions, BIT(64) all
  ones, DECIMAL(65,30) extremes, utf8mb4 4-byte characters, empty vs NULL binary, ...
  Written from the INSERT statements and the format doc, not from any output.

Values are compared as :func:`observe` sees them: the JSON kind (a boolean is not the
number 1) and, for numbers, the exact text, except FLOAT / VECTOR elements (compared as the
decimal value: the doc asks for the shortest decimal that reads back as the same 32-bit
float, whatever its spelling) and DOUBLE (compared as the 64-bit float: the doc says only
"number").
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pymysql


class Num(str):
    """A JSON number kept as its exact text (``0.50`` is not ``0.5``)."""


def parse(text: str | bytes) -> Any:
    """JSON with every non-integer number kept as its text (:class:`Num`)."""
    return json.loads(text, parse_float=Num)


# -- what a JSON value is, for comparison ---------------------------------------------------


def canonical(value: Any) -> Any:
    """A JSON value with its kind spelled out: ``True`` and ``1`` differ, numbers by text."""
    if value is None:
        return None
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("number", str(value))
    if isinstance(value, Num):
        return ("number", str(value))
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, list):
        return ("array", tuple(canonical(v) for v in value))
    raise AssertionError(f"not a JSON value as parse() returns them: {value!r}")


def _number_text(value: Any) -> str:
    kind = canonical(value)
    assert kind is not None and kind[0] == "number", f"expected a JSON number, got {value!r}"
    return str(kind[1])


def _float32(x: float) -> float | None:
    """``x`` rounded to the nearest 32-bit float (None beyond its range)."""
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return None


def _shortest_float32(x: float) -> Decimal:
    """The shortest decimal that reads back as the 32-bit float ``x``."""
    for digits in range(1, 10):
        text = f"{x:.{digits}g}"
        if _float32(float(text)) == x:
            return Decimal(text)
    raise AssertionError(f"{x!r} is not a 32-bit float")


def _observe_float32(value: Any) -> Any:
    return None if value is None else ("float32", Decimal(_number_text(value)))


def _observe_double(value: Any) -> Any:
    return None if value is None else ("double", float(_number_text(value)))


def _observe_vector(value: Any) -> Any:
    if value is None:
        return None
    assert isinstance(value, list), f"expected a JSON array, got {value!r}"
    return ("array", tuple(_observe_float32(v) for v in value))


# -- the server's text -> the value the format doc prescribes -------------------------------


@dataclass(frozen=True)
class Column:
    name: str
    data_type: str  # information_schema.COLUMNS.DATA_TYPE
    column_type: str  # COLUMN_TYPE
    precision: int | None  # NUMERIC_PRECISION (the bit count of a BIT)


@dataclass(frozen=True)
class Rule:
    """How to ask the server for a column's text (``{c}`` is the quoted column) and what
    that text becomes (canonical, as :func:`observe` gives it)."""

    sql: str
    expect: Callable[[Column, str], Any]
    observe: Callable[[Any], Any] = canonical


def _integer(col: Column, text: str) -> Any:
    if col.column_type == "tinyint(1)":  # TINYINT(1) is a boolean
        return ("bool", {"0": False, "1": True}[text])  # no rule for other values: KeyError
    return ("number", str(int(text)))


def _bit(col: Column, text: str) -> Any:
    assert col.precision is not None
    if col.precision == 1:
        return ("bool", {"0": False, "1": True}[text])
    raw = int(text).to_bytes((col.precision + 7) // 8, "big")  # the n bits, big-endian bytes
    return ("string", base64.b64encode(raw).decode())


def _decimal(_col: Column, text: str) -> Any:
    return ("number", text)  # exact, with the column's scale, as the server prints it


def _float(_col: Column, text: str) -> Any:
    value = _float32(float(text))  # the server widened the stored float to a double exactly
    assert value is not None and value == float(text), text
    return ("float32", _shortest_float32(value))


def _double(_col: Column, text: str) -> Any:
    return ("double", float(text))


def _zero_date(text: str) -> bool:
    """``0000-00-00`` and any date with month or day 0 (the doc: those are ``null``)."""
    _, month, day = text[:10].split("-")
    return month == "00" or day == "00"


def _date(_col: Column, text: str) -> Any:
    return None if _zero_date(text) else ("string", text)


def _time(_col: Column, text: str) -> Any:
    return ("string", text)  # the server prints -838:59:59 and fsp fraction digits as the doc


def _timestamp(_col: Column, text: str) -> Any:
    return None if _zero_date(text) else ("string", text + "Z")  # read in a UTC session


def _year(_col: Column, text: str) -> Any:
    return ("number", str(int(text)))  # 0000 -> 0


def _text(_col: Column, text: str) -> Any:
    return ("string", bytes.fromhex(text).decode("utf-8"))  # the server converted to utf8mb4


def _binary(_col: Column, text: str) -> Any:
    return ("string", base64.b64encode(bytes.fromhex(text)).decode())


def _set(_col: Column, text: str) -> Any:
    return ("array", tuple(("string", label) for label in text.split(",") if text))


def _java_double(x: float) -> str:
    """Java's ``Double.toString`` in the range where it is plain decimal notation, which
    is also where Python's repr is (no test value lies outside it)."""
    assert 1e-3 <= abs(x) < 1e7, f"no test-side rule for the coordinate {x!r}"
    return repr(x)


def _coordinates(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ",".join(_coordinates(v) for v in value) + "]"
    x = float(value)
    if x.is_integer() and abs(x) < 1e7:
        return str(int(x))
    return _java_double(x)


def _geometry(_col: Column, text: str) -> Any:
    srid, _, geojson = text.partition(";")
    shape = json.loads(geojson)
    return ("string", '{"coordinates":%s,"type":"%s","srid":%d}'
            % (_coordinates(shape["coordinates"]), shape["type"], int(srid)))


def _vector(_col: Column, text: str) -> Any:
    raw = bytes.fromhex(text)  # VECTOR(n): n little-endian 32-bit floats
    floats = struct.unpack(f"<{len(raw) // 4}f", raw)
    return ("array", tuple(("float32", _shortest_float32(x)) for x in floats))


_CHAR = "CAST({c} AS CHAR)"
_INTEGER = Rule(_CHAR, _integer)
_TEXT = Rule("HEX(CONVERT({c} USING utf8mb4))", _text)
_BINARY = Rule("HEX({c})", _binary)
_GEOMETRY = Rule("CONCAT(ST_SRID({c}), ';', ST_AsGeoJSON({c}))", _geometry)

RULES: dict[str, Rule] = {
    **dict.fromkeys(("tinyint", "smallint", "mediumint", "int", "bigint"), _INTEGER),
    "bit": Rule("CAST(CAST({c} AS UNSIGNED) AS CHAR)", _bit),
    "decimal": Rule(_CHAR, _decimal),
    "float": Rule("CAST(CAST({c} AS DOUBLE) AS CHAR)", _float, _observe_float32),
    "double": Rule(_CHAR, _double, _observe_double),
    "date": Rule(_CHAR, _date),
    "time": Rule(_CHAR, _time),
    "datetime": Rule(_CHAR, _date),
    "timestamp": Rule(_CHAR, _timestamp),
    "year": Rule(_CHAR, _year),
    # MariaDB's JSON is LONGTEXT (the text as stored); MySQL's prints its binary form
    **dict.fromkeys(("char", "varchar", "tinytext", "text", "mediumtext", "longtext",
                     "json"), _TEXT),
    **dict.fromkeys(("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"),
                    _BINARY),
    "enum": Rule(_CHAR, lambda _col, text: ("string", text)),
    "set": Rule(_CHAR, _set),
    **dict.fromkeys(("geometry", "point", "linestring", "polygon", "multipoint",
                     "multilinestring", "multipolygon"), _GEOMETRY),
    "vector": Rule("HEX({c})", _vector, _observe_vector),
}


@dataclass(frozen=True)
class ServerRows:
    """The table as the server prints it: its columns, and per primary key (``id``) the
    text of each column and the value it stands for."""

    columns: list[Column]
    text: dict[int, dict[str, str | None]]
    expected: dict[int, dict[str, Any]]

    def rule(self, name: str) -> Rule:
        column = next(c for c in self.columns if c.name == name)
        return RULES[column.data_type]


def read_server(admin: dict[str, Any], db: str, table: str = "all_types") -> ServerRows:
    """Every row of ``db.table`` (keyed by its ``id`` column) as the server prints it."""
    with pymysql.connect(**admin, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")  # TIMESTAMP text in UTC
        cur.execute(
            "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, NUMERIC_PRECISION FROM "
            "information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
            "ORDER BY ORDINAL_POSITION", (db, table))
        columns = [Column(str(n), str(t).lower(), str(ct).lower(),
                          None if p is None else int(p)) for n, t, ct, p in cur.fetchall()]
        missing = sorted({c.data_type for c in columns} - set(RULES))
        assert not missing, f"no server-oracle rule for the column types {missing}"
        exprs = ", ".join(RULES[c.data_type].sql.format(c=f"`{c.name}`") for c in columns)
        cur.execute(f"SELECT `id`, {exprs} FROM `{db}`.`{table}` ORDER BY `id`")
        rows = cur.fetchall()
    text: dict[int, dict[str, str | None]] = {}
    expected: dict[int, dict[str, Any]] = {}
    for key, *values in rows:
        assert all(v is None or isinstance(v, str) for v in values), values
        text[int(key)] = dict(zip((c.name for c in columns), values, strict=True))
        expected[int(key)] = {
            c.name: None if v is None else RULES[c.data_type].expect(c, v)
            for c, v in zip(columns, values, strict=True)
        }
    return ServerRows(columns, text, expected)


def differences(server: ServerRows, rows: dict[int, dict[str, Any] | None]) -> list[str]:
    """Where ``rows`` (primary key -> the row as JSON, parsed with :func:`parse`; None for a
    deleted row) differ from the server: a row the server has not or lacks, a column
    missing or extra, a value that is not what the server's text stands for."""
    out = []
    keys = set(server.expected) | {k for k, v in rows.items() if v is not None}
    for key in sorted(keys):
        row, want = rows.get(key), server.expected.get(key)
        if row is None or want is None:
            out.append(f"id {key}: the server has {'no' if want is None else 'a'} row, "
                       f"the records have {'no' if row is None else 'a'} row")
            continue
        if list(row) != list(want):
            out.append(f"id {key}: columns {list(row)} are not the server's {list(want)}")
        for name in want:
            got = server.rule(name).observe(row.get(name))
            if got != want[name]:
                out.append(f"id {key}, column {name}: records say {row.get(name)!r} "
                           f"({got!r}); the server prints {server.text[key][name]!r}, "
                           f"which is {want[name]!r}")
    return out


# -- hand-written values --------------------------------------------------------------------

# The values of test_capture_types' rows as the format doc (docs/changelog-format.md) spells
# them, worked out by hand from the INSERT and UPDATE statements: JSON text, id -> column.
HAND_WRITTEN: dict[int, dict[str, str]] = {
    1: {
        "t1": "true", "b1": "true",
        "bi": "-9223372036854775808", "biu": "18446744073709551615", "iu": "4294967295",
        "b10": '"Aqo="',  # b'1010101010' = 0x02AA -> bytes 02 AA
        "b64": '"//////////8="',  # 64 one bits -> 8 bytes FF
        "d": "-12345678.91",
        "dbig": "-12345678901234567890123456789012345.123456789012345678901234567891",
        "d0": "12345",
        "f": "3.4028235E38",  # 3.4028234e38 is stored as FLT_MAX; 8 digits read back as it
        "dd": "-1.7976931348623157E308",
        "tm": '"-838:59:59"', "tm3": '"12:34:56.789"', "tm6": '"100:00:00.000001"',
        "dtm": '"1000-01-01 00:00:00"',
        "dtm3": '"2024-02-29 23:59:59.500"',  # '.5' in DATETIME(3): three digits
        "dtm6": '"9999-12-31 23:59:59.999999"',
        "ts": '"2038-01-19 03:14:07Z"', "ts3": '"1970-01-01 00:00:01.001Z"',
        "ts6": '"2024-06-01 12:00:00.123456Z"',
        "yr": "2155",
        "ch": '"ab"',  # CHAR(5) 'ab ': no trailing spaces
        "vc": '"' + "\u00e9" * 300 + '"',
        "tx": '"emoji \U0001f600 ok"',  # a 4-byte utf8mb4 character
        "mtx": '"\u00fcn\u00efc\u00f6d\u00e9"',
        "lat": '"caf\u00e9"',  # latin1 byte E9
        "bn": '"YWIAAA=="',  # BINARY(4) 'ab' -> 61 62 00 00
        "vb": '"YQBi"',  # 'a\0b' -> 61 00 62
        "bl": '"AP8="',  # x'00ff'
        "lbl": '""',  # x'': empty, not null
        "js": r'"{\"a\": [1, 2.5, \"x\"], \"b\": null}"',
        "en": '"b"', "st": '["x","z"]',
        "g": r'"{\"coordinates\":[[0,0],[1,1]],\"type\":\"LineString\",\"srid\":0}"',
        "p": r'"{\"coordinates\":[1.5,-2.25],\"type\":\"Point\",\"srid\":0}"',
    },
    3: {  # after UPDATE ... SET vc = 'changed', d = 0.5
        "t1": "false", "b1": "false", "tiu": "0", "biu": "0",
        "b10": '"AAE="',  # b'0000000001' -> bytes 00 01
        "b64": '"AAAAAAAAAAA="',  # b'0' in BIT(64): 8 zero bytes
        "d": "0.50",  # two decimals, not 0.5
        "dbig": "0.000000000000000000000000000001",  # 30th decimal
        "d0": "-99999", "f": "-1.5", "dd": "2.5e-308",
        "tm": '"838:59:59"', "tm3": '"-00:00:00.001"',  # negative under one second
        "tm6": '"-01:02:03.000004"',
        "dtm3": '"2000-01-01 00:00:00.001"', "dtm6": '"2000-01-01 00:00:00.000001"',
        "ts": '"1970-01-01 00:00:01Z"', "ts3": '"2038-01-19 03:14:07.999Z"',
        "ts6": '"2000-02-29 00:00:00.000001Z"',
        "yr": "1901", "ch": '""', "vc": '"changed"',
        "bn": '"AAAAAA=="',  # x'' in BINARY(4): four zero bytes
        "vb": '""', "bl": '""', "lbl": '""', "js": '"[]"', "en": '"c"', "st": "[]",
        "g": r'"{\"coordinates\":[0,0],\"type\":\"Point\",\"srid\":0}"',
        "p": r'"{\"coordinates\":[-180,90],\"type\":\"Point\",\"srid\":0}"',
    },
    4: {  # zero dates written with sql_mode = ''
        "dt": "null", "dtm": "null", "dtm6": "null", "ts": "null",
        "yr": "0",  # YEAR 0000
        "en": '""',  # '' is the invalid-value index 0
        "st": "[]", "bn": "null", "lbl": "null",
    },
}

# MySQL's extra columns (flavors.MYSQL): VECTOR elements as the shortest float32 decimals
HAND_WRITTEN_MYSQL: dict[int, dict[str, str]] = {
    1: {"vec": "[1.5,2,3]"},
    3: {"vec": "[0.1,-1e-7,3.4e38]"},
}


def hand_written(mysql: bool) -> dict[int, dict[str, str]]:
    extra = HAND_WRITTEN_MYSQL if mysql else {}
    return {key: {**cols, **extra.get(key, {})} for key, cols in HAND_WRITTEN.items()}


# observe() of the columns HAND_WRITTEN compares by value rather than text
_OBSERVE_BY_NAME: dict[str, Callable[[Any], Any]] = {
    "f": _observe_float32, "dd": _observe_double, "vec": _observe_vector,
}


def observe(name: str, value: Any) -> Any:
    """A hand-written column's value as compared (FLOAT, DOUBLE, VECTOR by value)."""
    return _OBSERVE_BY_NAME.get(name, canonical)(value)


def hand_written_differences(rows: dict[int, dict[str, Any] | None],
                             mysql: bool) -> list[str]:
    """Where ``rows`` (primary key -> row, parsed with :func:`parse`) differ from
    :data:`HAND_WRITTEN`."""
    out = []
    for key, cols in hand_written(mysql).items():
        row = rows.get(key)
        if row is None:
            out.append(f"id {key}: no row")
            continue
        for name, text in cols.items():
            if observe(name, row.get(name, "<absent>")) != observe(name, parse(text)):
                out.append(f"id {key}, column {name}: {row.get(name, '<absent>')!r}, "
                           f"written by hand: {text}")
    return out


def hand_written_against_server(server: ServerRows, mysql: bool) -> list[str]:
    """Where the server-text rules disagree with the hand-written values (each checks the
    other: a wrong rule or a wrong hand-written value shows here)."""
    out = []
    for key, cols in hand_written(mysql).items():
        for name, text in cols.items():
            want = server.rule(name).observe(parse(text))
            if server.expected[key][name] != want:
                out.append(f"id {key}, column {name}: written by hand {text}, the server "
                           f"prints {server.text[key][name]!r}, which the rule makes "
                           f"{server.expected[key][name]!r}")
    return out


def null_row_differences(records: Iterable[dict[str, Any]]) -> list[str]:
    """Row 2 of test_capture_types is NULL in every column but ``id``: where its insert
    record says otherwise (the server cannot: the row is deleted by then)."""
    inserts = [r for r in records if r["op"] == "+I" and r["pk"] == {"id": NULL_ROW}]
    if len(inserts) != 1:
        return [f"{len(inserts)} inserts of id {NULL_ROW}"]
    after = inserts[0]["after"]
    return [f"id {NULL_ROW}, column {name}: {value!r}, not null"
            for name, value in after.items() if name != "id" and value is not None]


NULL_ROW = 2


def latest_rows(records: Iterable[dict[str, Any]]) -> dict[int, dict[str, Any] | None]:
    """Changelog records (op, pk, after) -> each key's row after the last of them."""
    rows: dict[int, dict[str, Any] | None] = {}
    for record in records:
        rows[int(record["pk"]["id"])] = record["after"]
    return rows
