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
from tests.integration.test_mysql_binlog_features import _partial_updates

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


# --- partial updates (binlog_row_value_options=PARTIAL_JSON) --------------------------------

UPDATES = 700


def _leg(key: str, rng: random.Random) -> str:
    if key.isidentifier() and key.isascii() and rng.random() < 0.7:
        return "." + key
    return "." + json.dumps(key, ensure_ascii=rng.random() < 0.5)


def _json_path(doc: Any, rng: random.Random, new: bool) -> str:
    """A path to something in ``doc`` (its root a container holding something); ``new``: to
    a member or element not there yet (a JSON_SET that inserts), else mostly to one there."""
    path = "$"
    while isinstance(doc, (dict, list)) and doc and (path == "$" or rng.random() < 0.7):
        if new and path != "$" and rng.random() < 0.4:
            break
        if isinstance(doc, dict):
            key = rng.choice(list(doc))
            path, doc = path + _leg(key, rng), doc[key]
        else:
            i = rng.randrange(len(doc))
            n = len(doc) - 1 - i
            path += (f"[last-{n}]" if n else "[last]") if rng.random() < 0.3 else f"[{i}]"
            doc = doc[i]
    if new and isinstance(doc, dict):
        path += _leg(rng.choice(["new", "x y", "é", "k" * rng.randrange(1, 30)]), rng)
    elif new and isinstance(doc, list):
        path += rng.choice([f"[{len(doc) + rng.randrange(3)}]", "[999]"])  # appends
    return path


def _sql_value(rng: random.Random) -> str:
    pick = rng.randrange(7)
    if pick == 0:
        return "CAST(" + pymysql.converters.escape_string(
            json.dumps(_value(rng, depth=rng.randrange(2, 6)))).join("''") + " AS JSON)"
    if pick == 1:
        return str(rng.choice([0, -1, 1 << 40, -(1 << 63), (1 << 64) - 1, rng.randrange(10 ** 6)]))
    if pick == 2:
        return repr(_double(rng)).replace("inf", "1e308")
    if pick == 3:
        return pymysql.converters.escape_string(_text(rng, 40)).join("''")
    if pick == 4:
        return rng.choice(["NULL", "TRUE", "FALSE", "CAST('12.50' AS DECIMAL(6,2))",
                           "TIMESTAMP'2024-02-29 23:59:59.125'", "CAST('-1:02:03' AS TIME)"])
    return pymysql.converters.escape_string(_text(rng, 3)).join("''")


def _change(doc: Any, rng: random.Random) -> str:
    """A JSON_SET / JSON_REPLACE / JSON_REMOVE of ``doc``'s column, nested up to three deep,
    the way MySQL logs them as diffs."""
    expr = "doc"
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        function = rng.choice(["JSON_SET", "JSON_SET", "JSON_REPLACE", "JSON_REMOVE"])
        if function == "JSON_REMOVE":
            args = [_json_path(doc, rng, new=False)]
        else:
            args = []
            for _ in range(rng.choice([1, 1, 2])):
                new = function == "JSON_SET" and rng.random() < 0.4
                args += [_json_path(doc, rng, new), _sql_value(rng)]
                args[-2] = pymysql.converters.escape_string(args[-2]).join("''")
        if function == "JSON_REMOVE":
            args = [pymysql.converters.escape_string(args[0]).join("''")]
        expr = f"{function}({expr}, {', '.join(args)})"
    return expr


def test_random_partial_updates_read_from_the_binlog_equal_mysqls_text(
    mysql: Any, fresh_mysql_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Random JSON_SET / JSON_REPLACE / JSON_REMOVE of random documents (members and elements
    replaced, inserted where MySQL orders keys, appended, removed; ``[last-n]``; quoted keys;
    several in one statement), logged as diffs: every after image capture rebuilds, compiled
    and reference, is the text MySQL's SELECT printed right after that update."""
    seed = int(os.environ.get("CDC_INGEST_TEST_SEED", random.randrange(1 << 30)))
    print(f"partial update seed {seed}")
    rng = random.Random(seed)
    docs: dict[int, Any] = {}
    for i in range(120):
        root = [_value(rng) for _ in range(rng.choice([1, 2, 4, 8]))]
        docs[i] = root if rng.random() < 0.4 else {_text(rng): v for v in root} or {"k": 1}
    db = fresh_mysql_db
    shown: list[tuple[int, str]] = []  # (id, MySQL's text) after each update, in order
    with admin_conn(mysql, db) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE docs (id INT PRIMARY KEY, doc JSON)")
        cur.executemany("INSERT INTO docs VALUES (%s, %s)",
                        [(i, json.dumps(d)) for i, d in docs.items()])
        cur.execute("SHOW BINARY LOG STATUS")
        first_binlog = cur.fetchone()[0]
        start = gtid_now(mysql)
        cur.execute("SET SESSION binlog_row_value_options = 'PARTIAL_JSON'")
        refused = 0
        for _ in range(UPDATES):
            i = rng.randrange(len(docs))
            try:
                changed = cur.execute(f"UPDATE docs SET doc = {_change(docs[i], rng)} "
                                      "WHERE id = %s", (i,))
            except pymysql.err.MySQLError:  # a path MySQL refuses ($ for JSON_REMOVE)
                refused += 1
                continue
            cur.execute("SELECT doc FROM docs WHERE id = %s", (i,))
            text = cur.fetchone()[0]
            docs[i] = json.loads(text)
            if changed:
                shown.append((i, text))
    end = gtid_now(mysql)
    partial = _partial_updates(mysql, first_binlog)
    print(f"{len(shown)} updates changed a row, {refused} refused by MySQL, {partial} events "
          "logged as diffs")
    assert refused < UPDATES // 4 and len(shown) > UPDATES // 2
    assert partial > UPDATES // 3  # most were logged as diffs
    for kind in ("compiled", "python"):
        captured = [(after[0], after[1])
                    for ev in _read(Source(mysql), db, start, end, kind, monkeypatch)
                    for _before, after in ev.rows]
        differ = [k for k, (got, want) in enumerate(zip(captured, shown, strict=False)) if got != want]
        assert len(captured) == len(shown) and not differ, (
            kind, len(captured), len(shown), [(captured[k], shown[k]) for k in differ[:2]])
