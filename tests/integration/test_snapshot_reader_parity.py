"""The compiled snapshot reader against PyMySQL's, on real servers: identical bytes.

The snapshot reads rows in C from the SELECT's packets (``_textrows.pyx``); the reference is
PyMySQL's rows through the snapshot's Python conversions (``CDC_INGEST_DECODER=python``).
Every chunk of the all-types fixture, of a seeded random workload over every column type
and of a table of awkward values (ZEROFILL, booleans, zero dates, control characters, a
field longer than one socket read, DECIMALs beyond 64 bits) must give the same key and row JSON,
with and without ``tinyint1_as_boolean`` and with pinned columns, on both flavours.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from cdc_ingest.capture.decoder import DECODER_ENV, compiled_available
from cdc_ingest.capture.snapshot.reader import Snapshotter
from cdc_ingest.capture.snapshot.state import Chunk
from cdc_ingest.mysql import ConnectionSettings
from cdc_ingest.mysql.packets import READ_SIZE
from tests.conftest import admin_conn
from tests.integration.flavors import Source
from tests.integration.test_capture_decoder_parity import SEED, _random_values
from tests.integration.test_capture_types import DDL, fill_all_types

AWKWARD = """
CREATE TABLE awkward (
  k DATETIME(3), s VARCHAR(20), z INT(6) ZEROFILL, zu BIGINT UNSIGNED ZEROFILL,
  zd DECIMAL(8,0) ZEROFILL, b TINYINT(1), b2 TINYINT(1) UNSIGNED, y YEAR,
  d DATE, dt DATETIME, ts TIMESTAMP NULL, big LONGTEXT, c VARCHAR(40),
  l VARCHAR(10) CHARACTER SET latin1, zf DECIMAL(8,2) ZEROFILL, wide DECIMAL(30,0),
  PRIMARY KEY (k, s)
) DEFAULT CHARSET=utf8mb4
"""


def _awkward_rows(rng: random.Random) -> list[tuple[Any, ...]]:
    controls = "".join(chr(c) for c in range(32)) + "\"\\\x7f"
    rows: list[tuple[Any, ...]] = []
    for n in range(60):
        rows.append((
            f"2024-01-{1 + n % 28:02d} 10:00:{n % 60:02d}.{n:03d}",
            rng.choice(["", "a", "é", "\"q\"", "tab\t", "中文"]) + str(n),
            rng.choice([0, 1, 42, 999999, None]),
            rng.choice([0, 7, 2**64 - 1, None]),
            rng.choice([0, 5, 99999999, None]),
            rng.choice([0, 1, -1, 127, -128, None]),
            rng.choice([0, 1, 255, None]),
            rng.choice([1901, 2155, 0, None]),
            rng.choice(["0000-00-00", "2024-00-10", "2024-05-00", "2024-05-06", None]),
            rng.choice(["0000-00-00 00:00:00", "2024-05-06 07:08:09", None]),
            rng.choice(["0000-00-00 00:00:00", "2024-05-06 07:08:09", None]),
            # one field much longer than a socket read, so a packet spans several reads
            "x" * (3 * READ_SIZE + 17) if n == 7 else rng.choice(["", "plain", "😀" * 3]),
            "".join(rng.choice(controls + "aé😀") for _ in range(rng.randrange(30))),
            rng.choice(["café", "naïve", "", None]),
            rng.choice(["0.50", "12.00", "999999.99", "0", None]),
            rng.choice(["0", "-1", str(2**64), "-" + "9" * 30, "9" * 30, None]),
        ))
    return rows


def _fill(source: Source, db: str) -> None:
    fill_all_types(source, db)
    rng = random.Random(SEED)
    conn = admin_conn(source, db)
    with conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = ''")
        cur.execute("SET time_zone = '+00:00'")
        cur.execute(DDL.format(extra="").replace("all_types", "random_types"))
        for lo in range(0, 200, 50):
            values = ",".join("(" + ",".join(_random_values(rng, pk)) + ")"
                              for pk in range(lo + 1, lo + 51))
            cur.execute(f"INSERT INTO random_types VALUES {values}")
        cur.execute(AWKWARD)
        cur.executemany("INSERT INTO awkward VALUES (" + ",".join(["%s"] * 16) + ")",
                        _awkward_rows(rng))
    conn.commit()
    conn.close()


def _read_all(source: Source, db: str, table: str, kind: str, booleans: bool,
              columns: list[str] | None, monkeypatch: pytest.MonkeyPatch
              ) -> list[list[tuple[bytes, bytes]]]:
    """Every chunk's rows (13 keys a chunk), read by ``kind``."""
    monkeypatch.setenv(DECODER_ENV, kind)
    settings = ConnectionSettings(host="127.0.0.1", port=source.port,
                                  user=source.cdc["user"], password=source.cdc["password"])
    reader = Snapshotter(settings, 4900 + random.Random().randrange(90),
                         lambda d, t: None, booleans, chunk_size=13, fetch_size=5)
    assert reader._compiled == (kind == "compiled")
    chunks = []
    after = None
    try:
        while True:
            chunk = reader.next_chunk(db, table, after)
            read = reader.read(Chunk(db, table, chunk.after, chunk.upto), columns)
            assert read.columns == columns
            chunks.append(sorted(read.rows))  # (key JSON, row JSON)
            if chunk.upto is None:
                return chunks
            after = chunk.upto
    finally:
        reader.close()


@pytest.mark.parametrize("table", ["all_types", "random_types", "awkward"])
def test_compiled_snapshot_rows_equal_pymysql_rows(
    source: Source, fresh_source_db: str, monkeypatch: pytest.MonkeyPatch, table: str
) -> None:
    assert compiled_available(), "the compiled extensions are not built (pip install -e .)"
    db = fresh_source_db
    _fill(source, db)
    pinned = [None, ["id", "nope", "vc", "dt", "js"]] if table != "awkward" else [
        None, ["s", "b", "k", "gone", "big"]]
    for booleans in (True, False):
        for columns in pinned:
            want = _read_all(source, db, table, "python", booleans, columns, monkeypatch)
            got = _read_all(source, db, table, "compiled", booleans, columns, monkeypatch)
            assert sum(len(c) for c in want) > 2
            assert len(got) == len(want)
            for i, (g, w) in enumerate(zip(got, want, strict=True)):
                diff = [(a[0], a[1][:300], b[1][:300]) for a, b in zip(g, w, strict=True) if a != b]
                assert len(g) == len(w) and not diff, (
                    f"{table} chunk {i} (booleans {booleans}, columns {columns}): {diff[:1]}")
