"""Random column types and values for the every-type tests (tests/integration/test_every_type.py,
benchmarks/random_types.py): each type with a generator of SQL literals, edge values included.

Which types a server has is its own: MySQL 9 has VECTOR; MariaDB 10.11 has UUID, INET4 and
INET6; MariaDB 11.8 all of those and its own VECTOR (:func:`server_types`).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass

Gen = Callable[[random.Random], str]


@dataclass(frozen=True)
class SqlType:
    name: str  # a short name for column names
    ddl: str  # the column type as CREATE TABLE spells it
    value: Gen  # a SQL literal of a value of the type
    keyable: bool = False  # may be a primary key column


def _pick(*literals: str) -> Gen:
    return lambda rng: rng.choice(literals)


def _int(lo: int, hi: int) -> Gen:
    return lambda rng: str(rng.choice([lo, hi, 0, 1, -1 if lo < 0 else 2, rng.randint(lo, hi)]))


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


_TEXTS = ["", " ", "a", "é", "日本語", "emoji 😀", "it's", "back\\slash", "x" * 40, "trailing "]


def _text(limit: int, latin1: bool = False) -> Gen:
    pool = [t for t in _TEXTS if not latin1 or t.isascii() or t == "é"]
    return lambda rng: _quote(rng.choice(pool)[:limit])


def _hex(max_len: int) -> Gen:
    return lambda rng: "x'" + rng.randbytes(rng.choice([0, 1, max_len, rng.randint(0, max_len)])
                                            ).hex() + "'"


def _decimal(p: int, s: int) -> Gen:
    def gen(rng: random.Random) -> str:
        whole = rng.choice([0, 10 ** (p - s) - 1, rng.randint(0, 10 ** (p - s) - 1)])
        frac = rng.randint(0, 10 ** s - 1) if s else 0
        sign = rng.choice(["", "-"])
        return f"{sign}{whole}" + (f".{frac:0{s}d}" if s else "")
    return gen


def _float(rng: random.Random) -> str:
    return rng.choice(["0", "-1.5", "3.4028234e38", "1.17549435e-38", "0.1",
                       repr(rng.uniform(-1e6, 1e6)), repr(rng.uniform(-1, 1) * 1e-20)])


def _double(rng: random.Random) -> str:
    return rng.choice(["0", "-0.5", "1.7976931348623157e308", "2.2250738585072014e-308",
                       "0.1", repr(rng.uniform(-1e12, 1e12)), repr(rng.random())])


def _date(rng: random.Random) -> str:
    return rng.choice(["'1000-01-01'", "'9999-12-31'", "'2024-02-29'",
                       f"'{rng.randint(1000, 9999):04d}-{rng.randint(1, 12):02d}-"
                       f"{rng.randint(1, 28):02d}'"])


def _frac(rng: random.Random, fsp: int) -> str:
    return "." + "".join(rng.choice("0123456789") for _ in range(fsp)) if fsp else ""


def _time(fsp: int) -> Gen:
    def gen(rng: random.Random) -> str:
        return rng.choice([f"'-838:59:59{'.' + '0' * fsp if fsp else ''}'",
                           f"'838:59:59{'.' + '0' * fsp if fsp else ''}'", "'00:00:00'",
                           f"'{rng.choice(['-', ''])}{rng.randint(0, 837)}:"
                           f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
                           f"{_frac(rng, fsp)}'"])
    return gen


def _moment(fsp: int, first: str, last: str, years: tuple[int, int]) -> Gen:
    """DATETIME / TIMESTAMP: the type's first and last moments, or one in ``years``."""
    def gen(rng: random.Random) -> str:
        return rng.choice([f"'{first}'", f"'{last}'",
                           f"'{rng.randint(*years):04d}-{rng.randint(1, 12):02d}-"
                           f"{rng.randint(1, 28):02d} {rng.randint(0, 23):02d}:"
                           f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
                           f"{_frac(rng, fsp)}'"])
    return gen


def _datetime(fsp: int) -> Gen:
    return _moment(fsp, "1000-01-01 00:00:00", "9999-12-31 23:59:59", (1000, 9999))


def _timestamp(fsp: int) -> Gen:
    return _moment(fsp, "1970-01-01 00:00:01", "2038-01-19 03:14:07", (1971, 2037))


def _bit(n: int) -> Gen:
    return lambda rng: rng.choice(["b'0'", f"b'{'1' * n}'",
                                   "b'" + "".join(rng.choice("01") for _ in range(n)) + "'"])


def _json(rng: random.Random) -> str:
    return rng.choice(["'{}'", "'[]'", "'null'", "'\"text\"'", "'{\"a\": [1, 2.5, \"x\"]}'",
                       "'{\"k\": {\"n\": -7, \"b\": true}}'", "'123456789012'"])


def _geometry(rng: random.Random) -> str:
    x, y = round(rng.uniform(-180, 180), 3), round(rng.uniform(-90, 90), 3)
    return rng.choice([f"POINT({x}, {y})", "ST_GeomFromText('LINESTRING(0 0,1 1,2 0)')",
                       "ST_GeomFromText('POLYGON((0 0,1 0,1 1,0 0))')"])


def _point(rng: random.Random) -> str:
    return f"POINT({round(rng.uniform(-180, 180), 4)}, {round(rng.uniform(-90, 90), 4)})"


def uuid_value(rng: random.Random) -> str:
    """A UUID MariaDB accepts: its text parser refuses a version nibble >= 8 with byte 8 in
    1..0x80 (such a value would read back as a swapped one)."""
    edge = ["00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff",
            "01020304-0506-0708-090a-0b0c0d0e0f10"]
    data = bytearray(rng.randbytes(16))
    kind = rng.randrange(6)
    if kind < 3:  # versions 1, 4, 7 of the RFC variant (time-based, random, time-ordered)
        data[6] = (data[6] & 0x0F) | ((1, 4, 7)[kind] << 4)
        data[8] = (data[8] & 0x3F) | 0x80
    elif kind == 3:
        return _quote(rng.choice(edge))
    if data[6] >> 4 >= 8 and 1 <= data[8] <= 0x80:
        data[8] = 0x80 | rng.randint(1, 0x7F)
    return _quote(str(uuid.UUID(bytes=bytes(data))))


def inet4_value(rng: random.Random) -> str:
    parts = rng.choice([[0, 0, 0, 0], [255] * 4, [192, 168, 1, 10],
                        [rng.randint(0, 255) for _ in range(4)]])
    return _quote(".".join(map(str, parts)))


def inet6_value(rng: random.Random) -> str:
    """Zero runs of every length and place, IPv4-mapped and -compatible forms."""
    edge = ["::", "::1", "1::", "::ffff:10.1.2.3", "::1.2.3.4", "1:0:2:3:4:5:6:7",
            "2001:db8::1", "1:0:0:2:0:0:0:3", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "::ffff:0:0", "0:0:0:0:0:1:0:0", "fe80::1:0:0:1"]
    if rng.random() < 0.4:
        return _quote(rng.choice(edge))
    words = [rng.choice([0, 0, rng.randint(0, 0xFFFF), 0xFFFF]) for _ in range(8)]
    return _quote(":".join(f"{w:x}" for w in words))


def _vector(n: int) -> Gen:
    def gen(rng: random.Random) -> str:
        values = [rng.choice([0.0, 1.5, -2.25, 123456.75, -1e-7, rng.uniform(-1e3, 1e3)])
                  for _ in range(n)]
        return "VEC_FROMTEXT_OR_STRING_TO_VECTOR('[" + ",".join(repr(v).replace("e+", "e") for v in values) + "]')"
    return gen


COMMON = [
    SqlType("ti", "TINYINT", _int(-128, 127), True),
    SqlType("tiu", "TINYINT UNSIGNED", _int(0, 255)),
    SqlType("b1", "TINYINT(1)", _int(-128, 127)),
    SqlType("si", "SMALLINT", _int(-32768, 32767)),
    SqlType("mi", "MEDIUMINT UNSIGNED", _int(0, 16777215)),
    SqlType("i", "INT", _int(-2147483648, 2147483647), True),
    SqlType("bi", "BIGINT", _int(-9223372036854775808, 9223372036854775807), True),
    SqlType("biu", "BIGINT UNSIGNED", _int(0, 18446744073709551615)),
    SqlType("dec", "DECIMAL(12,4)", _decimal(12, 4), True),
    SqlType("dec0", "DECIMAL(30,0)", _decimal(30, 0)),
    SqlType("f", "FLOAT", _float),
    SqlType("d", "DOUBLE", _double),
    SqlType("bit1", "BIT(1)", _bit(1)),
    SqlType("bit13", "BIT(13)", _bit(13)),
    SqlType("dt", "DATE", _date, True),
    SqlType("tm", "TIME", _time(0)),
    SqlType("tm4", "TIME(4)", _time(4)),
    SqlType("dtm", "DATETIME", _datetime(0), True),
    SqlType("dtm6", "DATETIME(6)", _datetime(6)),
    SqlType("ts3", "TIMESTAMP(3) NULL", _timestamp(3)),
    SqlType("yr", "YEAR", _pick("1901", "2155", "2024", "0")),
    SqlType("ch", "CHAR(10)", _text(10), True),
    SqlType("vc", "VARCHAR(300)", _text(300), True),
    SqlType("lat", "VARCHAR(20) CHARACTER SET latin1", _text(20, latin1=True)),
    SqlType("asc", "VARCHAR(8) CHARACTER SET ascii", _pick("''", "'abc'", "'a b'")),
    SqlType("bn", "BINARY(6)", _hex(6), True),
    SqlType("vb", "VARBINARY(300)", _hex(300)),
    SqlType("tx", "TEXT", _text(1000)),
    SqlType("bl", "BLOB", _hex(40)),
    SqlType("en", "ENUM('a','b','c d')", _pick("'a'", "'b'", "'c d'"), True),
    SqlType("st", "SET('x','y','z')", _pick("''", "'x'", "'x,z'", "'x,y,z'")),
    SqlType("js", "JSON", _json),
    SqlType("geo", "GEOMETRY", _geometry),
    SqlType("pt", "POINT", _point),
]
VECTOR = SqlType("vec", "VECTOR(3)", _vector(3))
PLUGINS = [
    SqlType("uuid", "UUID", uuid_value, True),
    SqlType("ip4", "INET4", inet4_value, True),
    SqlType("ip6", "INET6", inet6_value, True),
]
# the types the issue calls new: a column after one of them once took the wrong type
NEW_NAMES = frozenset({"vec", "js", "geo", "pt", "uuid", "ip4", "ip6"})


def server_types(version: str) -> list[SqlType]:
    """The types of a server, by its ``SELECT VERSION()``."""
    if "mariadb" not in version.lower():
        return [*COMMON, VECTOR]
    major, minor = (int(x) for x in version.split(".")[:2])
    return [*COMMON, *PLUGINS, *([VECTOR] if (major, minor) >= (11, 7) else [])]


def vector_function(version: str) -> str:
    """MariaDB spells STRING_TO_VECTOR as VEC_FromText."""
    return "VEC_FromText" if "mariadb" in version.lower() else "STRING_TO_VECTOR"


def literal(sql_type: SqlType, rng: random.Random, version: str, null_share: float = 0.15
            ) -> str:
    """A value of the type as SQL (NULL now and then)."""
    if rng.random() < null_share:
        return "NULL"
    return sql_type.value(rng).replace("VEC_FROMTEXT_OR_STRING_TO_VECTOR",
                                       vector_function(version))
