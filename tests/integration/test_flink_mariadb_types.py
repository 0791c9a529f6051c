"""Apache Flink reads MariaDB 11.8's UUID, INET4, INET6 and VECTOR columns back from an upsert
topic: the plugin types as STRING (keys included), VECTOR as ARRAY<FLOAT>, each equal to what
the server's SELECT shows (the same PyFlink job as test_flink_readback.py)."""

from __future__ import annotations

import json
import os
import random
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integration.flavors import Source
from tests.integration.random_types import inet4_value, inet6_value, uuid_value
from tests.integration.test_every_type import _execute, capture_run
from tests.integration.test_flink_readback import FLINK_TIMEOUT, JOB, _decode, _provision

COLUMNS = "`u` STRING NOT NULL, `a6` STRING NOT NULL, `n` INT, `a4` STRING, `v` ARRAY<FLOAT>"


@pytest.mark.parametrize("source", ["mariadb118"], indirect=True)
def test_flink_reads_uuid_inet_and_vector_as_the_server_shows_them(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    python, jar = _provision()
    rng = random.Random(20261126)
    db = fresh_source_db

    def row(n: int) -> str:
        floats = ",".join(str(rng.choice([0.5, -2.25, 1e-7, 123456.75, 0.1])) for _ in range(3))
        return (f"({uuid_value(rng)}, {inet6_value(rng)}, {n}, {inet4_value(rng)}, "
                f"VEC_FromText('[{floats}]'))")

    with capture_run(source, kafka, db, tmp_path) as run:
        _execute(run.conn, "CREATE TABLE p (u UUID, a6 INET6, n INT, a4 INET4 NULL, "
                           "v VECTOR(3) NULL, PRIMARY KEY (u, a6))")
        _execute(run.conn, "INSERT IGNORE INTO p VALUES " + ", ".join(row(n) for n in range(20)))
        run.start()
        _execute(run.conn, "INSERT IGNORE INTO p VALUES " + ", ".join(row(n)
                                                                       for n in range(20, 40)),
                 "UPDATE p SET a4 = NULL, v = VEC_FromText('[1,2,3]') WHERE n % 4 = 1",
                 "UPDATE p SET u = UUID() WHERE n % 5 = 2",  # a key change: tombstone + insert
                 "DELETE FROM p WHERE n % 7 = 3")
        run.finish()
        with run.conn.cursor() as cur:
            cur.execute("SELECT u, a6, n, a4, v FROM p")
            server = {(u, a6): {"u": u, "a6": a6, "n": n, "a4": a4, "v": v}
                      for u, a6, n, a4, v in cur.fetchall()}

    out, summary = tmp_path / "flink.jsonl", tmp_path / "flink-summary.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    job = subprocess.run(
        [str(python), str(JOB), "--bootstrap", kafka.bootstrap, "--topic", f"{db}.p",
         "--jar", str(jar), "--primary-key", "`u`, `a6`", "--columns", COLUMNS,
         "--out", str(out), "--summary", str(summary)],
        capture_output=True, text=True, timeout=FLINK_TIMEOUT, check=False, cwd=tmp_path,
        env=env,
    )
    assert job.returncode == 0, f"the Flink job failed:\n{job.stderr[-6000:]}"
    flink = {}
    for line in out.read_text(encoding="utf-8").splitlines():
        values = {k: _decode(v) for k, v in json.loads(line)["values"].items()}
        flink[(values["u"], values["a6"])] = values
    assert flink.keys() == server.keys()
    for key, mysql in server.items():
        got = flink[key]
        assert (got["n"], got["a4"]) == (mysql["n"], mysql["a4"]), key
        stored = None if mysql["v"] is None else list(
            struct.unpack(f"<{len(mysql['v']) // 4}f", mysql["v"]))
        read = None if got["v"] is None else [struct.unpack("<f", struct.pack("<f", x))[0]
                                              for x in got["v"]]
        assert read == stored, key
