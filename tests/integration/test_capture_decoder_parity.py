"""The compiled decoder and encoder against the reference path, on real binlog events.

Reference: the generated pure-Python row decoder (``CDC_INGEST_DECODER=python``) and
``changes.row_messages`` (one envelope dict through orjson). Fast: the C row plan and the C
encoder (what capture uses by default), plus the pure-Python ``TableEncoder`` that serves when
the extension is not built. Every row of the all-types fixture and of a seeded random workload
over every column type must give identical values and identical changelog bytes, on both
flavours (MySQL's all-types table adds VECTOR and binary JSON with opaque values).
"""

from __future__ import annotations

import base64
import os
import random
import time
from typing import Any

import orjson
import pymysql
import pytest

from cdc_ingest.capture.binlog import BinlogReader, Replica
from cdc_ingest.capture.decoder import DECODER_ENV, compiled_available, decoder_kind
from cdc_ingest.capture.encode import KeyPlan, TableEncoder, row_messages, table_encoder
from cdc_ingest.capture.events import Ddl, Rows, TxBegin, TxCommit
from cdc_ingest.model import Position
from cdc_ingest.mysql import Catalog, ConnectionSettings
from tests.conftest import admin_conn
from tests.integration.flavors import Source, gtid_seq
from tests.integration.pipeline_helpers import gtid_now
from tests.integration.test_capture_types import DDL, fill_all_types

SEED = int(os.environ.get("CDC_INGEST_PARITY_SEED", "20261122"))
RANDOM_ROWS = 400


def _read(source: Source, db: str, start: str, end: str, kind: str,
          monkeypatch: pytest.MonkeyPatch) -> list[Rows]:
    """Every rows event of ``db`` between the two GTID positions, decoded by ``kind``."""
    monkeypatch.setenv(DECODER_ENV, kind)
    assert decoder_kind() == kind
    settings = ConnectionSettings(host="127.0.0.1", port=source.port,
                                  user=source.cdc["user"], password=source.cdc["password"])
    catalog = Catalog(settings)
    server_id = 4000 + random.Random().randrange(1000)
    reader = BinlogReader(Replica(settings, server_id, mariadb=source.flavor.mariadb,
                                  heartbeat_s=0.5),
                          Position(gtid_set=start),
                          captured=lambda d, _t: d == db, catalog=catalog.table_facts)
    end_seq = gtid_seq(end)
    events: list[Rows] = []
    deadline = time.monotonic() + 60
    seq = 0
    try:
        for ev in reader.events():
            if isinstance(ev, Rows):
                events.append(ev)
            elif isinstance(ev, TxBegin) and ev.gtid:
                seq = gtid_seq(ev.gtid)
            elif isinstance(ev, (TxCommit, Ddl)) and seq >= end_seq:
                break
            assert time.monotonic() < deadline, f"binlog stalled before {end}"
    finally:
        reader.close()
        catalog.close()
    return events


def _exact(value: Any) -> Any:
    """Values with their exact type (True is not 1) and Fragments by their JSON text."""
    if isinstance(value, orjson.Fragment):
        return ("Fragment", orjson.dumps(value))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_exact(v) for v in value])
    return (type(value).__name__, value)


def _messages_reference(events: list[Rows]) -> list[tuple[bytes, bytes]]:
    out = []
    for ev in events:
        plan = KeyPlan(ev.schema, ev.where)
        for n, (before, after) in enumerate(ev.rows, start=1):
            out.extend(row_messages(ev, plan, before, after, f"0-1-5#{n}"))
    return out


def _messages_fast(events: list[Rows], compiled: bool) -> list[tuple[bytes, bytes]]:
    out: list[tuple[bytes, bytes]] = []

    def produce(topic: str, value: bytes, key: bytes, timestamp: int) -> None:
        assert topic == "t"
        out.append((key, value))

    for ev in events:
        plan = KeyPlan(ev.schema, ev.where)
        encoder = table_encoder(ev.schema, plan) if compiled else TableEncoder(ev.schema, plan)
        assert (type(encoder).__name__ == "RowEncoder") == compiled
        # the row numbers restart per event here, as in _messages_reference
        encoder.produce_rows(produce, "t", ev.kind, ev.rows, 1, "0-1-5", ev.ts * 1000, None)
    return out


def _compare(source: Source, db: str, start: str, end: str,
             monkeypatch: pytest.MonkeyPatch) -> int:
    assert compiled_available(), (
        "the compiled row decoder is not built; pip install -e . needs gcc and Cython")
    reference = _read(source, db, start, end, "python", monkeypatch)
    compiled = _read(source, db, start, end, "compiled", monkeypatch)
    ref_rows = [(ev.kind, ev.schema.table, r) for ev in reference for r in ev.rows]
    fast_rows = [(ev.kind, ev.schema.table, r) for ev in compiled for r in ev.rows]
    assert len(ref_rows) == len(fast_rows) > 0
    for i, (want, got) in enumerate(zip(ref_rows, fast_rows, strict=True)):
        assert _exact(got) == _exact(want), f"row change {i} differs"
    want_messages = _messages_reference(reference)
    monkeypatch.setenv(DECODER_ENV, "compiled")
    assert _messages_fast(compiled, compiled=True) == want_messages
    assert _messages_fast(compiled, compiled=False) == want_messages
    return len(ref_rows)


def test_all_types_fixture_decodes_identically(
    source: Source, fresh_source_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = fresh_source_db
    start = fill_all_types(source, db)
    assert _compare(source, db, start, gtid_now(source), monkeypatch) == 6


# -- a seeded random workload over every column type ------------------------------------------

_TEXT = "aZ09 _-'\"\\/\t\n\r\x01é中😀\u2028"


def _text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(_TEXT) for _ in range(rng.randrange(n + 1)))


def _decimal(rng: random.Random, precision: int, scale: int) -> str:
    whole = "".join(rng.choice("0123456789") for _ in range(rng.randrange(precision - scale + 1)))
    frac = "".join(rng.choice("0123456789") for _ in range(scale))
    sign = rng.choice(["", "-"])
    return f"{sign}{whole or '0'}.{frac}" if scale else f"{sign}{whole or '0'}"


def _time(rng: random.Random, fsp: int) -> str:
    sign = rng.choice(["", "-"])
    frac = "." + "".join(rng.choice("0123456789") for _ in range(fsp)) if fsp else ""
    return f"{sign}{rng.randrange(839):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}{frac}"


def _datetime(rng: random.Random, fsp: int, lo: int = 1000, hi: int = 9999) -> str:
    frac = "." + "".join(rng.choice("0123456789") for _ in range(fsp)) if fsp else ""
    return (f"{rng.randrange(lo, hi + 1):04d}-{rng.randrange(1, 13):02d}-"
            f"{rng.randrange(1, 29):02d} {rng.randrange(24):02d}:{rng.randrange(60):02d}:"
            f"{rng.randrange(60):02d}{frac}")


def _bits(rng: random.Random, n: int) -> str:
    return "b'" + "".join(rng.choice("01") for _ in range(n)) + "'"


def _hex(rng: random.Random, n: int) -> str:
    return "x'" + rng.randbytes(rng.randrange(n + 1)).hex() + "'"


def _random_values(rng: random.Random, pk: int) -> list[str]:
    """One row of all_types as SQL literals, about 15% NULLs."""
    def q(s: str) -> str:
        return pymysql.converters.escape_string(s).join("''")

    gens = [
        lambda: str(rng.randrange(-128, 128)), lambda: str(rng.randrange(256)),
        lambda: str(rng.randrange(2)), lambda: str(rng.randrange(-32768, 32768)),
        lambda: str(rng.randrange(65536)), lambda: str(rng.randrange(-8388608, 8388608)),
        lambda: str(rng.randrange(16777216)), lambda: str(rng.randrange(-2**31, 2**31)),
        lambda: str(rng.randrange(2**32)), lambda: str(rng.randrange(-2**63, 2**63)),
        lambda: str(rng.randrange(2**64)), lambda: _bits(rng, 1), lambda: _bits(rng, 10),
        lambda: _bits(rng, 64), lambda: _decimal(rng, 10, 2), lambda: q(_decimal(rng, 65, 30)),
        lambda: _decimal(rng, 5, 0), lambda: repr(rng.uniform(-1e6, 1e6)),
        lambda: repr(rng.uniform(-1e300, 1e300)),
        lambda: q(_datetime(rng, 0)[:10]), lambda: q(_time(rng, 0)), lambda: q(_time(rng, 3)),
        lambda: q(_time(rng, 6)), lambda: q(_datetime(rng, 0)), lambda: q(_datetime(rng, 3)),
        lambda: q(_datetime(rng, 6)), lambda: q(_datetime(rng, 0, 1971, 2037)),
        lambda: q(_datetime(rng, 3, 1971, 2037)), lambda: q(_datetime(rng, 6, 1971, 2037)),
        lambda: str(rng.randrange(1901, 2156)), lambda: q(_text(rng, 5)),
        lambda: q(_text(rng, 300)), lambda: q(_text(rng, 200)), lambda: q(_text(rng, 50)),
        lambda: q("".join(rng.choice("abcé ü'\\") for _ in range(rng.randrange(20)))),
        lambda: _hex(rng, 4), lambda: _hex(rng, 10), lambda: _hex(rng, 40), lambda: _hex(rng, 40),
        lambda: q(f'{{"k": {rng.randrange(100)}, "s": "{base64.b64encode(rng.randbytes(6)).decode()}"}}'),
        lambda: q(rng.choice("abc")), lambda: q(",".join(rng.sample("xyz", rng.randrange(4)))),
        lambda: f"POINT({rng.uniform(-180, 180)!r}, {rng.uniform(-90, 90)!r})",
        lambda: f"POINT({rng.randrange(-180, 180)}, {rng.randrange(-90, 90)})",
    ]
    return [str(pk)] + [("NULL" if rng.random() < 0.15 else g()) for g in gens]


def test_random_workload_over_every_type_decodes_identically(
    source: Source, fresh_source_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh_db = fresh_source_db
    rng = random.Random(SEED)
    conn = admin_conn(source, fresh_db)
    with conn.cursor() as cur:
        cur.execute(DDL.format(extra=""))  # the columns both flavours have
        # a second layout: a two-column key, so key changes and wide keys are covered
        cur.execute("CREATE TABLE two_keys (a INT, b VARCHAR(10), v DECIMAL(20,4), "
                    "t DATETIME(2), PRIMARY KEY (b, a)) DEFAULT CHARSET=utf8mb4")
    start = gtid_now(source)
    with conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")
        for lo in range(0, RANDOM_ROWS, 50):
            rows = ",".join("(" + ",".join(_random_values(rng, pk)) + ")"
                            for pk in range(lo + 1, lo + 51))
            cur.execute(f"INSERT INTO all_types VALUES {rows}")
            conn.commit()
        for _ in range(30):
            pk = rng.randrange(1, RANDOM_ROWS + 1)
            vals = _random_values(rng, pk)
            cur.execute(f"UPDATE all_types SET vc = {vals[32]}, d = {vals[15]}, "
                        f"dtm6 = {vals[26]}, js = {vals[40]} WHERE id = {pk}")
        cur.execute("UPDATE all_types SET id = id + 100000 WHERE id % 37 = 0")  # key changes
        cur.execute("DELETE FROM all_types WHERE id % 11 = 0")
        for a in range(40):
            cur.execute("INSERT INTO two_keys VALUES (%s, %s, %s, %s)",
                        (a, rng.choice(["x", "y", "ü"]) + str(a), _decimal(rng, 20, 4),
                         _datetime(rng, 2)))
        cur.execute("UPDATE two_keys SET v = v + 1 WHERE a % 3 = 0")
        cur.execute("UPDATE two_keys SET a = a + 1000 WHERE a % 5 = 0")
        cur.execute("DELETE FROM two_keys WHERE a % 7 = 0")
    conn.commit()
    conn.close()
    changes = _compare(source, fresh_db, start, gtid_now(source), monkeypatch)
    assert changes > RANDOM_ROWS
