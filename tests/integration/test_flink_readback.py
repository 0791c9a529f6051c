"""Apache Flink reads an upsert topic back: its `upsert-kafka` table equals the MySQL table.

`cdc-ingest start` (exactly-once, headers on, 3 partitions) snapshots a MySQL table of many
column types, then captures inserts, updates (to and from NULL, one multi-row) and deletes,
a deleted key inserted again, while it runs. Then a real PyFlink job (apache-flink with
Flink's Kafka SQL connector, in its own virtualenv: flink_env.py) declares the topic as an
`upsert-kafka` table (json key and value, `value.fields-include = ALL`, read_committed,
bounded at the latest offsets, a missing field an error), folds Flink's changelog into one
row per key (flink_readback_job.py) and the test compares every row, column by column, with
`SELECT * FROM` the table.

Each column is read as its natural Flink type where Flink's json format has one: DECIMAL
exact, BIGINT UNSIGNED as DECIMAL(20, 0), TIMESTAMP(6) for DATETIME(6), TIMESTAMP_LTZ(3) for
TIMESTAMP(3) (our `...Z` text), BYTES from base64, BOOLEAN for TINYINT(1) and BIT(1), SET as
ARRAY<STRING>. Read as STRING and compared with our documented encoding
(docs/changelog-format.md) where Flink cannot: DECIMAL(65,30) (Flink's DECIMAL stops at 38
digits; the JSON number's text must be exact), JSON (MySQL's own text), and TIME(6): Flink's
TIME holds 00:00:00-23:59:59.999 and its json format drops the fraction of a second
(`toSecondOfDay() * 1000` in flink-json 2.0.2), so a TIME(0) column inside one day is read
as TIME and a TIME(6) column, negative and over 24 hours, as STRING.

Every message's `tableName` header must name the table (Flink's rows and, for tombstones,
which Flink does not show with their headers, the raw messages), and the topic must hold
exactly one message per snapshot row and per row change: nothing lost, nothing repeated.
"""

from __future__ import annotations

import base64
import datetime
import json
import os
import random
import re
import struct
import subprocess
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from cdc_ingest.maven import MavenError
from tests.conftest import admin_conn
from tests.integration import flink_env
from tests.integration.pipeline_helpers import (
    sink_topic,
    start_command,
    stop,
    wait_for,
    write_pipeline,
)

JOB = Path(__file__).with_name("flink_readback_job.py")
TABLE = "readback"
KEY = ("id", "tag")
FLINK_TIMEOUT = 180

# (column, MySQL type, Flink type, how Flink's value compares with pymysql's)
COLUMNS: list[tuple[str, str, str, str]] = [
    ("id", "INT NOT NULL", "INT NOT NULL", "same"),
    ("tag", "VARCHAR(16) NOT NULL", "STRING NOT NULL", "same"),
    ("v", "BIGINT NOT NULL", "BIGINT NOT NULL", "same"),
    ("ti", "TINYINT", "TINYINT", "same"),
    ("siu", "SMALLINT UNSIGNED", "INT", "same"),
    ("i", "INT", "INT", "same"),
    ("bi", "BIGINT", "BIGINT", "same"),
    ("biu", "BIGINT UNSIGNED", "DECIMAL(20, 0)", "decimal"),
    ("d", "DECIMAL(12,2)", "DECIMAL(12, 2)", "decimal"),
    ("d38", "DECIMAL(38,10)", "DECIMAL(38, 10)", "decimal"),
    ("dhuge", "DECIMAL(65,30)", "STRING", "decimal_text"),
    ("f", "FLOAT", "FLOAT", "float32"),
    ("dbl", "DOUBLE", "DOUBLE", "same"),
    ("flag", "TINYINT(1)", "BOOLEAN", "bool"),
    ("bit1", "BIT(1)", "BOOLEAN", "bit"),
    ("name", "VARCHAR(64)", "STRING", "same"),
    ("ch", "CHAR(4)", "STRING", "same"),
    ("txt", "TEXT", "STRING", "same"),
    ("dt", "DATE", "DATE", "date"),
    ("dtm", "DATETIME(6)", "TIMESTAMP(6)", "timestamp"),
    ("dtm0", "DATETIME", "TIMESTAMP(0)", "timestamp"),
    ("ts", "TIMESTAMP(3) NULL", "TIMESTAMP_LTZ(3)", "timestamp"),
    ("tm", "TIME", "TIME(0)", "time"),
    ("tm6", "TIME(6)", "STRING", "time_text"),
    ("yr", "YEAR", "INT", "same"),
    ("vb", "VARBINARY(16)", "BYTES", "bytes"),
    ("js", "JSON", "STRING", "same"),
    ("en", "ENUM('red','green','blü')", "STRING", "same"),
    ("st", "SET('x','y','z')", "ARRAY<STRING>", "set"),
]

NAMES = ["Grüße", "naïve café", "emoji 😀🔑", "日本語", "", "tab\tnew\nline", 'q " b \\ s',
         "ctl \x01\x1f", "plain"]
FLOATS = [1.1, -2.5, 0.1, 16777216.0, 3.4028234663852886e38, 1.1754943508222875e-38, 0.0]
DOUBLES = [1.7976931348623157e308, 2.2250738585072014e-308, 0.1, -1.5e-7, 1e16, 123.456]
JSONS = ['{"k": [1, 2.5, "x"], "ü": "😀", "n": null, "b": true}', "[]", '"text"', "12.50",
         '{"a": {"b": {}}, "big": 18446744073709551615, "e": 1e-7}']
TIME6_MAX = (838 * 3600 + 59 * 60 + 59) * 10**6
DAYS = (datetime.date(9999, 12, 31) - datetime.date(1000, 1, 1)).days
TS_FIRST = datetime.datetime(1970, 1, 1, 0, 0, 1)
TS_MS = (datetime.datetime(2038, 1, 19, 3, 14, 7) - TS_FIRST) // datetime.timedelta(
    milliseconds=1) + 999


def _time_text(value: datetime.timedelta, fsp: int) -> str:
    """TIME as docs/changelog-format.md spells it: `-838:59:59`, `100:00:00.000001`."""
    micros = value // datetime.timedelta(microseconds=1)
    sign, micros = ("-" if micros < 0 else ""), abs(micros)
    seconds, fraction = divmod(micros, 10**6)
    text = f"{sign}{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    return text + (f".{fraction:06d}"[: fsp + 1] if fsp else "")


def _decimal(unscaled: int, scale: int) -> str:
    """A DECIMAL literal as text, all digits kept (no float, no 28-digit Decimal context)."""
    digits = str(abs(unscaled)).rjust(scale + 1, "0")
    return f"{'-' if unscaled < 0 else ''}{digits[:-scale]}.{digits[-scale:]}"


class _Rows:
    """Random rows of the table (a NULL in any nullable column now and then), seeded."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.v = 0

    def values(self) -> dict[str, Any]:
        rng = self.rng
        self.v += 1

        def maybe(value: Any) -> Any:
            return None if rng.random() < 0.15 else value

        day = datetime.date(1000, 1, 1) + datetime.timedelta(days=rng.randint(0, DAYS))
        moment = datetime.datetime.combine(day, datetime.time()) + datetime.timedelta(
            microseconds=rng.randint(0, 86_400 * 10**6 - 1))
        tm6 = datetime.timedelta(microseconds=rng.choice(
            [TIME6_MAX, -TIME6_MAX, -1000, 100 * 3600 * 10**6 + 1,
             rng.randint(-TIME6_MAX, TIME6_MAX)]))
        return {
            "v": self.v,
            "ti": maybe(rng.randint(-128, 127)),
            "siu": maybe(rng.choice([0, 65535, rng.randint(0, 65535)])),
            "i": maybe(rng.randint(-(2**31), 2**31 - 1)),
            "bi": maybe(rng.choice([-(2**63), 2**63 - 1, rng.randint(-(2**63), 2**63 - 1)])),
            "biu": maybe(rng.choice([2**64 - 1, 0, rng.randint(0, 2**64 - 1)])),
            "d": maybe(_decimal(rng.randint(-(10**12) + 1, 10**12 - 1), 2)),
            "d38": maybe(_decimal(rng.randint(-(10**38) + 1, 10**38 - 1), 10)),
            "dhuge": maybe(_decimal(rng.choice([rng.randint(-(10**65) + 1, 10**65 - 1), 1, -50]),
                                    30)),
            "f": maybe(rng.choice(FLOATS)),
            "dbl": maybe(rng.choice([*DOUBLES, rng.uniform(-1e10, 1e10)])),
            "flag": maybe(rng.random() < 0.5),
            "bit1": maybe(rng.randint(0, 1)),
            "name": maybe(rng.choice(NAMES)),
            "ch": maybe(rng.choice(["ab", "äö", "😀", ""])),
            "txt": maybe("long text ✓ " * rng.randint(0, 300) + "🚀"),
            "dt": maybe(day),
            "dtm": maybe(moment),
            "dtm0": maybe(moment.replace(microsecond=0)),
            "ts": maybe(TS_FIRST + datetime.timedelta(milliseconds=rng.choice(
                [0, TS_MS, rng.randint(0, TS_MS)]))),
            "tm": maybe(_time_text(datetime.timedelta(seconds=rng.randint(0, 86_399)), 0)),
            "tm6": maybe(_time_text(tm6, 6)),  # pymysql spells negative timedeltas wrongly
            "yr": maybe(rng.choice([1901, 2155, rng.randint(1901, 2155)])),
            "vb": maybe(rng.randbytes(rng.randint(0, 16))),
            "js": maybe(rng.choice(JSONS)),
            "en": maybe(rng.choice(["red", "green", "blü"])),
            "st": maybe(rng.choice(["", "x", "x,z", "x,y,z"])),
        }


class _Writer:
    """Runs the workload's statements, counting the rows they change (one message each)."""

    def __init__(self, cur: Any) -> None:
        self.cur = cur
        self.changed = 0

    def run(self, sql: str, args: Any = None) -> None:
        self.changed += self.cur.execute(sql, args)

    def insert(self, key: tuple[int, str], row: dict[str, Any]) -> None:
        names = [*KEY, *row]
        self.run(f"INSERT INTO {TABLE} ({', '.join(names)}) VALUES "
                 f"({', '.join(['%s'] * len(names))})", [*key, *row.values()])

    def update(self, key: tuple[int, str], row: dict[str, Any]) -> None:
        sets = ", ".join(f"{name} = %s" for name in row)
        self.run(f"UPDATE {TABLE} SET {sets} WHERE id = %s AND tag = %s",
                 [*row.values(), *key])

    def delete(self, key: tuple[int, str]) -> None:
        self.run(f"DELETE FROM {TABLE} WHERE id = %s AND tag = %s", key)


def _tag(i: int) -> str:
    return ["k", "ü", "😀", "日"][i % 4] + str(i)


def _decode(value: Any) -> Any:
    """The job's tagged JSON back to Flink's Python value."""
    if isinstance(value, dict):
        (tag, text), = value.items()
        return {"decimal": Decimal, "date": datetime.date.fromisoformat,
                "time": datetime.time.fromisoformat, "datetime": datetime.datetime.fromisoformat,
                "bytes": base64.b64decode}[tag](text)
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _labels(value: str | set[str]) -> set[str]:
    """A SET value's labels, as pymysql gives it (`'x,z'`, or a set of labels)."""
    labels = value.split(",") if isinstance(value, str) else value
    return {label for label in labels if label}


def _f32(value: float) -> bytes:
    return struct.pack("<f", value)


def _timestamp(flink: str, mysql: datetime.datetime) -> bool:
    # Flink prints TIMESTAMP(p) / TIMESTAMP_LTZ(p) with p fraction digits (UTC for LTZ)
    return re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?", flink) is not None and (
        datetime.datetime.fromisoformat(flink) == mysql)


def _decimal_text(flink: str, mysql: Decimal) -> bool:
    # the JSON number's own text: exact, all 30 decimals, no exponent
    return re.fullmatch(r"-?\d+\.\d{30}", flink) is not None and Decimal(flink) == mysql


SAME: dict[str, Callable[[Any, Any], bool]] = {
    "same": lambda f, m: f == m and type(f) is type(m),
    "decimal": lambda f, m: isinstance(f, Decimal) and f == m
    and (isinstance(m, int) or f.as_tuple().exponent == m.as_tuple().exponent),
    "decimal_text": _decimal_text,
    "float32": lambda f, m: isinstance(f, float) and _f32(f) == _f32(m),
    "bool": lambda f, m: f is bool(m),
    "bit": lambda f, m: f is bool(int.from_bytes(m, "big")),
    "date": lambda f, m: f == m,
    "timestamp": _timestamp,
    "time": lambda f, m: f == (datetime.datetime.min + m).time(),
    "time_text": lambda f, m: f == _time_text(m, 6),
    "bytes": lambda f, m: f == m,
    "set": lambda f, m: isinstance(f, list) and sorted(f) == sorted(_labels(m)),
}


def _differences(flink: dict[Any, dict[str, Any]], mysql: dict[Any, dict[str, Any]]) -> list[str]:
    found = [f"key {k} is in MySQL but not in Flink's table" for k in mysql.keys() - flink.keys()]
    found += [f"key {k} is in Flink's table but not in MySQL" for k in flink.keys() - mysql.keys()]
    for key in sorted(mysql.keys() & flink.keys()):
        for name, _, flink_type, how in COLUMNS:
            f, m = flink[key][name], mysql[key][name]
            if (f is None) != (m is None) or (m is not None and not SAME[how](f, m)):
                found.append(f"key {key} column {name} ({flink_type}): Flink {f!r}, MySQL {m!r}")
    return found


def _provision() -> tuple[Path, Path]:
    try:
        return flink_env.venv_python(), flink_env.connector_jar()
    except (flink_env.FlinkEnvError, MavenError) as exc:
        pytest.fail(f"cannot provision PyFlink for the read-back (scripts/setup.sh makes it): "
                    f"{exc}", pytrace=False)


def test_flink_upsert_kafka_table_equals_the_mysql_table(
    mysql: Any, kafka: Any, fresh_mysql_db: str, tmp_path: Path
) -> None:
    python, jar = _provision()
    started = time.monotonic()
    db = fresh_mysql_db
    rows = _Rows(seed=20250601)
    with admin_conn(mysql, db) as conn, conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")
        cur.execute(f"CREATE TABLE {TABLE} ("
                    + ", ".join(f"{name} {mysql_type}" for name, mysql_type, _, _ in COLUMNS)
                    + f", PRIMARY KEY ({', '.join(KEY)}))")
        snapshot = _Writer(cur)
        for i in range(1, 31):
            snapshot.insert((i, _tag(i)), rows.values())

    name = f"flink-{db}"
    topic = f"{db}.{TABLE}"
    config = write_pipeline(
        tmp_path / "p.yaml", mysql, kafka, name, rf"{db}.{TABLE}",
        source={"scan.startup.mode": "initial"},
        sink={"sink.delivery-guarantee": "exactly-once",
              "sink.add-tableId-to-header-enabled": True, "topic.partitions": 3},
    )
    log = tmp_path / "start.log"
    proc = start_command("start", config, log)
    try:
        wait_for(lambda: "streaming from" in log.read_text(), 90, "the snapshot to end")
        with admin_conn(mysql, db) as conn, conn.cursor() as cur:
            cur.execute("SET time_zone = '+00:00'")
            live = _Writer(cur)
            rng = random.Random(7)
            alive = {(i, _tag(i)) for i in range(1, 31)}
            for i in range(31, 46):
                live.insert((i, _tag(i)), rows.values())
                alive.add((i, _tag(i)))
            for _ in range(40):  # whole rows rewritten: values to and from NULL
                live.update(rng.choice(sorted(alive)), rows.values())
            for key in rng.sample(sorted(alive), 8):
                live.delete(key)
                alive.discard(key)
            gone = (3, _tag(3))
            if gone in alive:
                live.delete(gone)
            live.insert(gone, rows.values())  # a deleted key comes back
            live.update(gone, rows.values())
            cur.execute("BEGIN")  # one transaction, several rows
            live.run(f"UPDATE {TABLE} SET v = v + 1000, name = 'batch ✓' WHERE id BETWEEN 10 AND 20")
            last = sorted(alive)[-1]
            live.delete(last)
            alive.discard(last)
            cur.execute("COMMIT")
        expected = snapshot.changed + live.changed
        wait_for(lambda: len(sink_topic(kafka, topic)) >= expected, 90,
                 f"{expected} messages in {topic}")
    finally:
        code = stop(proc, 60)
    assert code == 0, log.read_text()[-3000:]
    pipeline_done = time.monotonic()

    messages = sink_topic(kafka, topic)
    assert len(messages) == expected, "one message per snapshot row and per row change"
    assert sum(m.value is None for m in messages) >= 9, "tombstones in the topic"
    for m in messages:  # tombstones too: Flink does not show their headers
        assert dict(m.headers).get("tableName") == TABLE.encode(), (m.key, m.headers)

    out, summary = tmp_path / "flink.jsonl", tmp_path / "flink-summary.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    try:
        job = subprocess.run(
            [str(python), str(JOB), "--bootstrap", kafka.bootstrap, "--topic", topic,
             "--jar", str(jar), "--primary-key", ", ".join(f"`{k}`" for k in KEY),
             "--columns", ", ".join(f"`{n}` {flink_type}" for n, _, flink_type, _ in COLUMNS),
             "--out", str(out), "--summary", str(summary)],
            capture_output=True, text=True, timeout=FLINK_TIMEOUT, check=False, cwd=tmp_path,
            env=env,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the Flink job did not end within {FLINK_TIMEOUT} s (a bounded read that "
                    f"never reaches the latest offsets?):\n{exc.stderr!r}"[-6000:])
    assert job.returncode == 0, f"the Flink job failed:\n{job.stderr[-6000:]}"
    done = time.monotonic()
    print(f"pipeline {pipeline_done - started:.1f} s, Flink job {done - pipeline_done:.1f} s")

    stats = json.loads(summary.read_text())
    assert stats["table_names"] == [TABLE], stats  # the tableName header of every Flink row
    assert {"+I", "+U", "-D"} <= set(stats["kinds"]), stats  # updates and tombstones read
    flink: dict[Any, dict[str, Any]] = {}
    for line in out.read_text(encoding="utf-8").splitlines():
        row = {n: _decode(v) for n, v in json.loads(line)["values"].items()}
        flink[tuple(row[k] for k in KEY)] = row
    with admin_conn(mysql, db) as conn, conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")
        cur.execute(f"SELECT * FROM {TABLE}")
        names = [c[0] for c in cur.description]
        table = {tuple(r[n] for n in KEY): r for r in (dict(zip(names, t, strict=True))
                                                        for t in cur.fetchall())}
        # The text protocol shows a FLOAT with 6 digits (16777216 as 16777200); as a DOUBLE
        # MySQL shows the stored 32-bit value exactly.
        floats = [n for n, _, _, how in COLUMNS if how == "float32"]
        cur.execute(f"SELECT {', '.join(KEY)}, "
                    + ", ".join(f"CAST({n} AS DOUBLE)" for n in floats) + f" FROM {TABLE}")
        for exact in cur.fetchall():
            table[exact[:len(KEY)]].update(zip(floats, exact[len(KEY):], strict=True))
    assert len(table) == len(alive) > 30
    differences = _differences(flink, table)
    assert not differences, f"{len(differences)} differences:\n" + "\n".join(differences[:40])
