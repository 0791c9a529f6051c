"""MySQL binlog features capture follows exactly: compressed transactions
(``binlog_transaction_compression``), partial JSON updates (``binlog_row_value_options=
PARTIAL_JSON``) and tagged GTIDs, under a mixed workload with SIGKILLs of capture."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import admin_conn
from tests.integration.flavors import gtid_now
from tests.integration.pipeline_helpers import (
    changelog,
    cli,
    rows_of,
    start_capture,
    start_command,
    stop,
    stop_between,
    wait_for,
    write_pipeline,
)
from tests.integration.workload import Workload

# JSON functions MySQL logs as partial updates (JSON_SET/REPLACE/REMOVE), on nested paths,
# array elements, appends past the end, new members and quoted keys; %s is the row's v.
JSON_CHANGES = (
    "JSON_SET(doc, '$.n', %s)",
    "JSON_REPLACE(doc, '$.o.deep[1]', %s)",
    "JSON_SET(doc, '$.arr[99]', %s)",  # past the end: an append
    "JSON_SET(doc, '$.o.\"new key\"', CAST(%s AS DECIMAL(6,2)))",
    "JSON_REMOVE(JSON_SET(doc, '$.n', %s), '$.arr[0]')",
    "JSON_SET(doc, '$.o.deep[0]', 'é🔑', '$.f', %s * 1e-7)",
    "JSON_REMOVE(JSON_SET(doc, '$.tmp', %s), '$.tmp')",
    "JSON_SET(doc, '$.o.deep[last]', %s, '$.s', REPEAT('y', 20))",
)
DOC = ('{"n": 0, "s": "%s", "arr": [1, 2.5, "x"], "o": {"deep": [true, null, 3]}, '
       '"f": 1e300}') % ("x" * 400)


class JsonWorkload(Workload):
    """The shared mixed workload, with a JSON document per row changed by JSON functions,
    some transactions under tagged GTIDs, on sessions with the given settings."""

    TABLES = (
        "CREATE TABLE ka (id INT PRIMARY KEY, v INT NOT NULL, doc JSON)",
        "CREATE TABLE kb (id BIGINT PRIMARY KEY, v INT NOT NULL, doc JSON)",
    )

    def __init__(self, *args: Any, session: tuple[str, ...], tags: bool, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.session, self.tags = session, tags
        self.tagged = 0

    def _one_transaction(self, cur: Any) -> None:
        if not getattr(cur, "_configured", False):
            for statement in self.session:
                cur.execute(statement)
            cur._configured = True
        tag = self.tags and self.rng.random() < 0.3
        cur.execute("SET gtid_next = %s", ("AUTOMATIC:" + self.rng.choice(("t_a", "t_b"))
                                           if tag else "AUTOMATIC",))
        self.tagged += tag
        super()._one_transaction(cur)

    def _insert(self, cur: Any, table: str, count: int) -> None:
        ids = list(range(self.next_id[table], self.next_id[table] + count))
        self.next_id[table] += count
        cur.executemany(f"INSERT INTO {table} VALUES (%s, 0, %s)", [(i, DOC) for i in ids])
        for i in ids:
            self.live[table][i] = 0
            self._record(table, i, "+I", 0)

    def _update(self, cur: Any, table: str, ids: list[int]) -> None:
        marks = ",".join(["%s"] * len(ids))
        change = self.rng.choice(JSON_CHANGES)
        cur.execute(f"UPDATE {table} SET v = v + 1, doc = {change % 'v'} WHERE id IN ({marks})",
                    ids)
        for i in sorted(ids):
            self.live[table][i] += 1
            self._record(table, i, "+U", self.live[table][i])


@pytest.mark.parametrize("compressed", [True, False], ids=["compressed", "uncompressed"])
def test_partial_json_tagged_gtids_and_compression_exactly_once_under_sigkill(
    mysql: Any, kafka: Any, fresh_mysql_db: str, tmp_path: Path, compressed: bool
) -> None:
    seed = int(os.environ.get("CDC_INGEST_TEST_SEED", random.randrange(1 << 30)))
    print(f"workload seed {seed}")
    rng = random.Random(seed)
    session = ["SET SESSION binlog_row_value_options = 'PARTIAL_JSON'"]
    if compressed:
        session.append("SET SESSION binlog_transaction_compression = ON")
    workload = JsonWorkload(mysql.admin, fresh_mysql_db, seed, target_rows=8_000,
                            session=tuple(session), tags=True)
    workload.create_tables()
    name = f"myfeat-{int(compressed)}-{fresh_mysql_db}"
    workload_compressed_before = _compressed_transactions(mysql)
    with admin_conn(mysql) as conn, conn.cursor() as cur:
        cur.execute("SHOW BINARY LOG STATUS")
        first_binlog = cur.fetchone()[0]
    start = gtid_now(mysql)
    config = write_pipeline(
        tmp_path / "p.yaml", mysql, kafka, name, rf"{fresh_mysql_db}.k[ab]",
        source={"scan.startup.mode": "specific-offset",
                "scan.startup.specific-offset.gtid-set": start,
                "capture.transaction.max-rows": 300,
                "capture.transaction.max-interval": "300ms"},
    )
    log = tmp_path / "capture.log"
    proc = start_capture(config, log)
    writer = threading.Thread(target=workload.run, daemon=True)
    writer.start()
    try:
        for _ in range(3):
            time.sleep(rng.uniform(1.0, 3.0))
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
            time.sleep(rng.uniform(0.0, 1.0))
            proc = start_capture(config, log)
        writer.join(300)
        assert workload.error is None, workload.error
        records = wait_for(
            lambda: (r := changelog(kafka, name, float)) and len(rows_of(r)) >= workload.rows
            and r, timeout=180, what=f"{workload.rows} row changes")
        status = cli("status", "--config", str(config))
    finally:
        code = stop(proc)
    text = log.read_text()
    assert code == 0, text[-3000:]
    assert workload.tagged > 0
    seen: dict[tuple[str, str], list[tuple[str, Any]]] = {}
    last: dict[tuple[str, int], Any] = {}
    for r in rows_of(records):
        after = r["after"]
        seen.setdefault((r["table"], r["_key"].decode()), []).append(
            (r["op"], after["v"] if after else None))
        last[(r["table"], r["pk"]["id"])] = after
    assert len(rows_of(records)) == workload.rows, f"seed {seed}: duplicates or losses"
    different = [k for k in workload.expected if seen.get(k) != workload.expected[k]]
    assert not different, (f"seed {seed}: {len(different)} keys differ, e.g. {different[0]}: "
                           f"{workload.expected[different[0]]} != {seen.get(different[0])}")
    # every document as MySQL shows it, to the byte
    with admin_conn(mysql, fresh_mysql_db) as conn, conn.cursor() as cur:
        for table in ("ka", "kb"):
            cur.execute(f"SELECT id, v, doc FROM {table}")
            for key, v, doc in cur.fetchall():
                row = last[(table, key)]
                assert row is not None and (row["v"], row["doc"]) == (v, doc), (
                    f"seed {seed}: {table} {key}")
    assert sum(1 for k, row in last.items() if row is not None) == sum(
        len(live) for live in workload.live.values())
    # the committed position holds the tagged GTIDs; status shows it
    assert status.returncode == 0, status.stdout + status.stderr
    assert ":t_a:" in status.stdout.replace("\n", "") or ":t_b:" in status.stdout, status.stdout
    assert "Traceback" not in text
    if compressed:  # the binlog really held compressed transactions
        assert _compressed_transactions(mysql) > workload_compressed_before
    else:  # ... and partial JSON updates
        assert _partial_updates(mysql, first_binlog) > 10
    # the whole pipeline on the same changelog: the sink topics equal MySQL (verify exit 0)
    pipeline_log = tmp_path / "start.log"
    pipeline = start_command("start", config, pipeline_log)
    try:
        wait_for(lambda: cli("verify", "--config", str(config)).returncode == 0,
                 timeout=240, what="verify to pass")
    finally:
        code = stop(pipeline, timeout=90)
    assert code == 0, pipeline_log.read_text()[-3000:]
    report = cli("verify", "--config", str(config))
    assert report.returncode == 0 and "equal" in report.stdout.lower(), report.stdout


def _partial_updates(server: Any, first_file: str) -> int:
    count = 0
    with admin_conn(server) as conn, conn.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        for file in [r[0] for r in cur.fetchall() if r[0] >= first_file]:
            cur.execute("SHOW BINLOG EVENTS IN %s", (file,))
            count += sum(1 for r in cur.fetchall() if r[2] == "Update_rows_partial")
    return count


def _compressed_transactions(server: Any) -> int:
    with admin_conn(server) as conn, conn.cursor() as cur:
        cur.execute("SELECT COALESCE(SUM(transaction_counter), 0) FROM "
                    "performance_schema.binary_log_transaction_compression_stats "
                    "WHERE log_type = 'BINARY' AND compression_type = 'ZSTD'")
        return int(cur.fetchone()[0])


def test_sigkill_inside_a_compressed_transaction_resumes_exactly_once(
    mysql: Any, kafka: Any, fresh_mysql_db: str, tmp_path: Path
) -> None:
    """A 100k-row compressed transaction, capture killed while it has committed only part of
    it to the changelog: the restart writes the rest, each row once."""
    rows = 100_000
    with admin_conn(mysql, fresh_mysql_db) as conn, conn.cursor() as cur:
        cur.execute("SET gtid_next = 'AUTOMATIC:t_start'")  # the start set has a tag
        cur.execute("CREATE TABLE big (id INT PRIMARY KEY, v INT NOT NULL)")
        cur.execute("SET gtid_next = 'AUTOMATIC'")
    start = gtid_now(mysql)
    assert ":t_start:" in start
    with admin_conn(mysql, fresh_mysql_db) as conn, conn.cursor() as cur:
        cur.execute("SET SESSION binlog_transaction_compression = ON")
        cur.execute("SET SESSION cte_max_recursion_depth = %s", (rows + 1,))
        cur.execute("INSERT INTO big WITH RECURSIVE s (n) AS (SELECT 1 UNION ALL SELECT n + 1 "
                    "FROM s WHERE n < %s) SELECT n, n * 7 FROM s", (rows,))
        cur.execute("UPDATE big SET v = v + 1 WHERE id % 10 = 0")  # a second one, compressed
    name = f"mybig-{fresh_mysql_db}"
    config = write_pipeline(
        tmp_path / "p.yaml", mysql, kafka, name, rf"{fresh_mysql_db}.big",
        source={"scan.startup.mode": "specific-offset",
                "scan.startup.specific-offset.gtid-set": start,
                "capture.transaction.max-rows": 500})
    log = tmp_path / "capture.log"
    proc = start_capture(config, log)
    try:
        # stopped (then killed) while the first transaction is only partly committed
        at_stop = stop_between(proc, lambda: len(rows_of(changelog(kafka, name))), 0, rows)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        at_kill = len(rows_of(changelog(kafka, name)))
        assert at_kill == at_stop and 0 < at_kill < rows, f"killed after {at_kill} of {rows}"
        proc = start_capture(config, log)
        total = rows + rows // 10
        records = wait_for(lambda: (r := changelog(kafka, name)) and len(rows_of(r)) >= total
                           and r, 180, f"{total} row changes")
    finally:
        code = stop(proc)
    assert code == 0, log.read_text()[-3000:]
    changes = [(r["op"], r["pk"]["id"], r["after"]["v"]) for r in rows_of(records)]
    assert len(changes) == total
    assert sorted(c for c in changes if c[0] == "+I") == [
        ("+I", i, i * 7) for i in range(1, rows + 1)]
    assert sorted(c for c in changes if c[0] == "+U") == [
        ("+U", i, i * 7 + 1) for i in range(10, rows + 1, 10)]
