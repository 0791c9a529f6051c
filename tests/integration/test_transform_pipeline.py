"""A transform with a computed column, a filter and another primary key, end to end under
exactly-once, with capture and the sink SIGKILLed while rows change (both servers).

The expected topic is computed by MySQL itself (the same projection and filter as SQL), not
by our expression code. Rows move into and out of the filter and change their key column
while the processes die; every write stamps the row with a global counter `v`, so a message
written twice would show as a key whose `v` goes back.
"""

from __future__ import annotations

import json
import random
import signal
import threading
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

from tests.conftest import admin_conn
from tests.integration.flavors import Source
from tests.integration.pipeline_helpers import (
    cli,
    sink_topic,
    start_command,
    stop,
    wait_for,
    write_pipeline,
    written_batches,
)

PROJECTION = ("order_no, id, amount, amount * 2 AS double_amount, UPPER(status) AS "
              "status_code, v, __schema_name__ || '.' || __table_name__ AS src, "
              "__data_event_type__ AS op_type")
FILTER = "amount >= 10 AND status <> 'draft'"
EXPECTED_SQL = ("SELECT order_no, id, amount, amount * 2, UPPER(status), v FROM orders "
                "WHERE amount >= 10 AND status <> 'draft'")


class _Writes:
    """Inserts, updates in and out of the filter, key changes and deletes, each stamping v."""

    def __init__(self, source: Source, db: str, seed: int) -> None:
        self.source, self.db, self.rng = source, db, random.Random(seed)
        self.v = 1000
        self.next_id = 41
        self.error: BaseException | None = None

    def _amount(self) -> str:
        return f"{self.rng.randint(0, 3000) / 100:.2f}"

    def run(self, count: int) -> None:
        try:
            with admin_conn(self.source, self.db) as conn, conn.cursor() as cur:
                for _ in range(count):
                    self._one(cur)
                    time.sleep(0.02)
        except Exception as exc:  # noqa: BLE001 - reported by the test
            self.error = exc

    def _one(self, cur: Any) -> None:
        self.v += 1
        cur.execute("SELECT id FROM orders ORDER BY RAND() LIMIT 1")
        row = cur.fetchone()
        pick = self.rng.random()
        status = self.rng.choice(["new", "paid", "draft"])
        if row is None or pick < 0.25:
            cur.execute("INSERT INTO orders VALUES (%s, %s, %s, %s, %s)",
                        (self.next_id, f"o{self.next_id}", self._amount(), status, self.v))
            self.next_id += 1
        elif pick < 0.6:
            cur.execute("UPDATE orders SET amount=%s, status=%s, v=%s WHERE id=%s",
                        (self._amount(), status, self.v, row[0]))
        elif pick < 0.8:
            cur.execute("UPDATE orders SET order_no=%s, v=%s WHERE id=%s",
                        (f"o{row[0]}-{self.v}", self.v, row[0]))
        else:
            cur.execute("DELETE FROM orders WHERE id=%s", (row[0],))


def _latest(kafka: Any, topic: str) -> tuple[dict[str, Any], dict[str, list[int]]]:
    """Latest value per key (tombstones remove it), and every v per key in offset order."""
    latest: dict[str, Any] = {}
    versions: dict[str, list[int]] = {}
    for m in sink_topic(kafka, topic):
        key = m.key.decode()
        if m.value is None:
            latest.pop(key, None)
            continue
        value = json.loads(m.value, parse_float=Decimal)
        latest[key] = value
        versions.setdefault(key, []).append(value["v"])
    return latest, versions


def _expected(source: Source, db: str) -> dict[str, dict[str, Any]]:
    with admin_conn(source, db) as conn, conn.cursor() as cur:
        cur.execute(EXPECTED_SQL)
        return {json.dumps({"order_no": r[0]}, separators=(",", ":")): {
            "order_no": r[0], "id": r[1], "amount": r[2], "double_amount": r[3],
            "status_code": r[4], "v": r[5], "src": f"{db}.orders"} for r in cur.fetchall()}


def _matches(latest: dict[str, Any], expected: dict[str, dict[str, Any]]) -> bool:
    if set(latest) != set(expected):
        return False
    return all({k: v for k, v in latest[key].items() if k != "op_type"} == expected[key]
               for key in expected)


def _batches(log: Path) -> int:
    return written_batches(log)


def test_transform_under_kills(source: Source, kafka: Any, fresh_source_db: str,
                               tmp_path: Path) -> None:
    db = fresh_source_db
    with admin_conn(source, db) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE orders (id INT PRIMARY KEY, order_no VARCHAR(40) NOT NULL "
                    "UNIQUE, amount DECIMAL(10,2) NOT NULL, status VARCHAR(10) NOT NULL, "
                    "v INT NOT NULL)")
        rng = random.Random(7)
        cur.executemany("INSERT INTO orders VALUES (%s, %s, %s, %s, %s)", [
            (i, f"o{i}", f"{rng.randint(0, 3000) / 100:.2f}",
             rng.choice(["new", "paid", "draft"]), i) for i in range(1, 41)])
    topic = f"{db}-orders-t"
    config = write_pipeline(
        tmp_path / "p.yaml", source, kafka, f"tr-{db}", f"{db}.orders",
        source={"scan.startup.mode": "initial", "capture.transaction.max-rows": 50,
                "capture.transaction.max-interval": "200ms"},
        sink={"sink.delivery-guarantee": "exactly-once"},
        routes=[{"source-table": f"{db}.orders", "sink-table": topic}],
        transforms=[{"source-table": f"{db}.orders", "projection": PROJECTION,
                     "filter": FILTER, "primary-keys": "order_no"}])
    logs = {"capture": tmp_path / "capture.log", "sink": tmp_path / "sink.log"}
    procs = {n: start_command(n, config, logs[n]) for n in logs}
    writes = _Writes(source, db, seed=11)
    try:
        wait_for(lambda: _batches(logs["sink"]) > 0, timeout=180, what="the sink's first batch")
        writer = threading.Thread(target=writes.run, args=(700,), daemon=True)
        writer.start()
        for victim in ("capture", "sink", "capture"):
            seen = _batches(logs["sink"])
            wait_for(lambda n=seen: _batches(logs["sink"]) > n, timeout=120,
                     what="the sink writing more")
            procs[victim].send_signal(signal.SIGKILL)
            procs[victim].wait(30)
            procs[victim] = start_command(victim, config, logs[victim])
        writer.join(300)
        assert writes.error is None, writes.error
        expected = _expected(source, db)
        wait_for(lambda: _matches(_latest(kafka, topic)[0], expected), timeout=240,
                 what="the topic equal to MySQL's projection")
    finally:
        codes = {n: stop(p, timeout=60) for n, p in procs.items()}
    assert codes == {"capture": 0, "sink": 0}, {n: logs[n].read_text()[-3000:] for n in logs}
    latest, versions = _latest(kafka, topic)
    assert {v["op_type"] for v in latest.values()} <= {"+I", "+U"}
    went_back = {k: vs for k, vs in versions.items() if vs != sorted(set(vs))}
    assert not went_back, f"messages written twice or out of order: {went_back}"
    result = cli("verify", "--config", str(config))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "equal" in result.stdout, result.stdout


def test_primary_keys_that_are_not_unique_are_refused(source: Source, kafka: Any,
                                                      fresh_source_db: str,
                                                      tmp_path: Path) -> None:
    """Two rows sharing a message key would overwrite or delete each other: `validate`
    fails naming the table and the fix, and capture stops before writing a row."""
    db = fresh_source_db
    with admin_conn(source, db) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE items (id INT PRIMARY KEY, grp INT NOT NULL)")
        cur.execute("INSERT INTO items VALUES (1, 7), (2, 7)")
    config = write_pipeline(
        tmp_path / "p.yaml", source, kafka, f"tu-{db}", f"{db}.items",
        source={"scan.startup.mode": "initial"},
        transforms=[{"source-table": f"{db}.items", "primary-keys": "grp"}])
    result = cli("validate", "--config", str(config))
    assert result.returncode != 0, result.stdout
    assert f"the configured key (grp) of {db}.items does not contain a unique key" in \
        result.stdout, result.stdout
    assert "add a UNIQUE index on (grp), or include (id)" in result.stdout, result.stdout
    capture = cli("capture", "--config", str(config), timeout=120)
    assert capture.returncode != 0
    assert f"{db}.items does not contain a unique key of the table (id)" in \
        capture.stdout + capture.stderr, capture.stdout + capture.stderr
    assert "Traceback" not in capture.stdout + capture.stderr
