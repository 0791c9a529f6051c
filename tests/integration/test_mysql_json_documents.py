"""Random JSON documents on MySQL 9.7: the text capture reads from the binlog's binary JSON,
with the compiled reader and with the reference (``CDC_INGEST_DECODER=python``), is the text
MySQL's own ``SELECT`` prints, byte for byte.

The documents: nested objects and arrays (empty ones, one nested 90 deep, one over 64 KiB so
MySQL stores it large), integers of every width and its extremes, doubles of every magnitude,
strings with escapes, control characters and every UTF-8 length, literals; and documents
built by JSON_OBJECT / JSON_ARRAY holding opaque DECIMAL, TIME, DATE, DATETIME and binary
values. ``CDC_INGEST_TEST_SEED`` replays a run.
"""

from __future__ import annotations

import json
import math
import os
import random
import struct
from typing import Any

import pymysql
import pytest

from tests.conftest import admin_conn
from tests.integration.flavors import Source, gtid_now
from tests.integration.test_capture_decoder_parity import _read

CHARS = ("abcxyz XYZ 0189_-.,:/", "\"\\\b\f\n\r\t\x00\x01\x1f\x7f", "éßñ\xa0\xff",
         "\u0100\u07ff\u0800\u2028\ufeff\uffff中文", "\U00010000\U0001f600\U0010ffff")
ROWS = 500


def _text(rng: random.Random, longest: int = 12) -> str:
    return "".join(rng.choice(rng.choice(CHARS)) for _ in range(rng.randrange(longest + 1)))


def _double(rng: random.Random) -> float:
    pick = rng.randrange(4)
    if pick == 0:
        while True:
            (x,) = struct.unpack("<d", rng.randbytes(8))
            if math.isfinite(x):
                return x
    if pick == 1:
        return rng.randrange(1, 10 ** rng.randrange(1, 18)) * 10.0 ** rng.randrange(-22, 24)
    if pick == 2:
        return rng.choice([0.5, -0.0, 1e15, 1e16, 1e-14, 1e-15, 5e-324, 1.7976931348623157e308,
                           123456789012345678.0, 0.1, 100.0, 1e22])
    return rng.uniform(-1, 1) * 10.0 ** rng.randrange(-30, 30)


def _scalar(rng: random.Random) -> Any:
    pick = rng.randrange(6)
    if pick == 0:
        return rng.choice([None, True, False])
    if pick == 1:
        bits = rng.choice([15, 16, 31, 32, 63])
        return rng.choice([-(1 << bits), (1 << bits) - 1, rng.randrange(-(1 << bits), 1 << bits)])
    if pick == 2:
        return rng.choice([(1 << 64) - 1, 1 << 63, rng.randrange(1 << 63, 1 << 64)])
    if pick == 3:
        return _double(rng)
    return _text(rng, rng.choice([3, 12, 40, 300]))


def _value(rng: random.Random, depth: int = 0) -> Any:
    if depth > 6 or rng.random() < 0.3 + 0.1 * depth:
        return _scalar(rng)
    n = rng.choice([0, 1, 3, rng.randrange(8)])
    if rng.random() < 0.5:
        return [_value(rng, depth + 1) for _ in range(n)]
    return {_text(rng): _value(rng, depth + 1) for _ in range(n)}


def _opaque(rng: random.Random) -> str:
    """A SQL expression building a document with opaque values and doubles in it."""
    digits = "".join(rng.choice("0123456789") for _ in range(rng.randrange(1, 30)))
    precision = len(digits)
    scale = rng.randrange(0, min(precision, 30) + 1)
    whole, fraction = digits[:precision - scale] or "0", digits[precision - scale:]
    number = f"{rng.choice(['', '-'])}{whole}.{fraction}"
    time = (f"{rng.choice(['', '-'])}{rng.randrange(838)}:{rng.randrange(60)}:"
            f"{rng.randrange(60)}.{rng.randrange(10 ** 6):06d}")
    moment = (f"{rng.randrange(1000, 10000)}-{rng.randrange(1, 13):02d}-"
              f"{rng.randrange(1, 29):02d} {rng.randrange(24):02d}:{rng.randrange(60):02d}:"
              f"{rng.randrange(60):02d}.{rng.randrange(10 ** 6):06d}")
    parts = [f"CAST('{number}' AS DECIMAL({precision + 1},{scale}))",
             f"CAST('{time}' AS TIME({rng.randrange(7)}))",
             f"CAST('{moment}' AS DATETIME({rng.randrange(7)}))",
             f"CAST('{moment[:10]}' AS DATE)", f"TIMESTAMP'{moment}'",
             f"CAST(x'{rng.randbytes(rng.randrange(12)).hex()}' AS BINARY)",
             repr(_double(rng)), str(rng.randrange(-(1 << 63), 1 << 63))]
    rng.shuffle(parts)
    if rng.random() < 0.5:
        return f"JSON_ARRAY({', '.join(parts)})"
    return "JSON_OBJECT(" + ", ".join(f"'k{i}', {p}" for i, p in enumerate(parts)) + ")"


def _documents(rng: random.Random) -> list[str]:
    """SQL expressions, one a row."""
    deep: Any = "bottom"
    for i in range(90):
        deep = [deep, i] if i % 2 else {"d": deep}
    big = {f"key {i}": [_text(rng, 40), i, _double(rng)] for i in range(1500)}
    docs: list[Any] = [{}, [], deep, big, [[], {}, [[]], {"": {}}]]
    docs += [_value(rng) for _ in range(ROWS)]
    out = ["CAST(" + pymysql.converters.escape_string(json.dumps(d)).join("''") + " AS JSON)"
           for d in docs]
    return out + [_opaque(rng) for _ in range(ROWS // 5)]


def test_random_documents_read_from_the_binlog_equal_mysqls_text(
    mysql: Any, fresh_mysql_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed = int(os.environ.get("CDC_INGEST_TEST_SEED", random.randrange(1 << 30)))
    print(f"document seed {seed}")
    db = fresh_mysql_db
    docs = _documents(random.Random(seed))
    with admin_conn(mysql, db) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE docs (id INT PRIMARY KEY, doc JSON)")
        start = gtid_now(mysql)
        for first in range(0, len(docs), 100):
            rows = ", ".join(f"({first + i}, {d})" for i, d in enumerate(docs[first:first + 100]))
            cur.execute(f"INSERT INTO docs VALUES {rows}")
        # an update's before and after images too
        cur.execute("UPDATE docs SET doc = JSON_ARRAY(doc, id) WHERE id % 7 = 0")
        cur.execute("SELECT id, doc FROM docs")
        mysql_text = dict(cur.fetchall())
    end = gtid_now(mysql)
    for kind in ("compiled", "python"):
        captured: dict[int, str] = {}
        for ev in _read(Source(mysql), db, start, end, kind, monkeypatch):
            for _before, after in ev.rows:
                captured[after[0]] = after[1]
        assert captured.keys() == mysql_text.keys()
        differ = [i for i in mysql_text if captured[i] != mysql_text[i]]
        assert not differ, (kind, differ[:5], [(captured[i], mysql_text[i]) for i in differ[:2]])
