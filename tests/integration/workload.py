"""A seeded mixed workload that remembers, per key, the changes it made, in order."""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import pymysql

Expected = dict[tuple[str, str], list[tuple[str, int | None]]]


class Workload:
    """Inserts, updates, deletes, key changes and a few large transactions on two tables."""

    TABLES = (
        "CREATE TABLE ka (id INT PRIMARY KEY, v INT NOT NULL, pad VARCHAR(100))",
        "CREATE TABLE kb (id BIGINT PRIMARY KEY, v INT NOT NULL, amount DECIMAL(12,2))",
    )

    def __init__(self, conn_kwargs: dict[str, Any], db: str, seed: int, target_rows: int,
                 pause_s: float = 0.0):
        self.pause_s = pause_s
        self.conn_kwargs = {**conn_kwargs, "database": db, "autocommit": False}
        self.rng = random.Random(seed)
        self.target = target_rows
        self.rows = 0
        self.expected: Expected = {}
        self.live: dict[str, dict[int, int]] = {"ka": {}, "kb": {}}
        self.next_id = {"ka": 1, "kb": 1}
        self.error: BaseException | None = None
        self.done = threading.Event()

    def create_tables(self) -> None:
        conn = pymysql.connect(**self.conn_kwargs)
        with conn.cursor() as cur:
            for ddl in self.TABLES:
                cur.execute(ddl)
        conn.close()

    def _record(self, table: str, key: int, op: str, v: int | None) -> None:
        self.expected.setdefault((table, f'{{"id":{key}}}'), []).append((op, v))
        self.rows += 1

    def run(self) -> None:
        try:
            conn = pymysql.connect(**self.conn_kwargs)
            with conn.cursor() as cur:
                while self.rows < self.target:
                    self._one_transaction(cur)
                    conn.commit()
                    if self.pause_s:
                        time.sleep(self.pause_s)
            conn.close()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc
        finally:
            self.done.set()

    def _one_transaction(self, cur: Any) -> None:
        for _ in range(self.rng.randint(1, 3)):
            table = self.rng.choice(("ka", "kb"))
            roll = self.rng.random()
            live = self.live[table]
            if roll < 0.4 or len(live) < 50:
                self._insert(cur, table, self.rng.randint(1, 60))
            elif roll < 0.75:
                self._update(cur, table, self.rng.sample(sorted(live), min(len(live), 40)))
            elif roll < 0.9:
                self._delete(cur, table, self.rng.sample(sorted(live), min(len(live), 20)))
            elif roll < 0.995:
                self._rekey(cur, table, self.rng.choice(sorted(live)))
            else:
                # a large transaction: spans several Kafka transactions
                self._update(cur, table, sorted(live))

    def _insert(self, cur: Any, table: str, count: int) -> None:
        ids = list(range(self.next_id[table], self.next_id[table] + count))
        self.next_id[table] += count
        cur.executemany(
            f"INSERT INTO {table} VALUES (%s, 0, %s)",
            [(i, "p" * self.rng.randint(0, 100) if table == "ka" else "12.34") for i in ids],
        )
        for i in ids:
            self.live[table][i] = 0
            self._record(table, i, "+I", 0)

    def _update(self, cur: Any, table: str, ids: list[int]) -> None:
        marks = ",".join(["%s"] * len(ids))
        cur.execute(f"UPDATE {table} SET v = v + 1 WHERE id IN ({marks})", ids)
        for i in sorted(ids):
            self.live[table][i] += 1
            self._record(table, i, "+U", self.live[table][i])

    def _delete(self, cur: Any, table: str, ids: list[int]) -> None:
        marks = ",".join(["%s"] * len(ids))
        cur.execute(f"DELETE FROM {table} WHERE id IN ({marks})", ids)
        for i in ids:
            del self.live[table][i]
            self._record(table, i, "-D", None)

    def _rekey(self, cur: Any, table: str, old: int) -> None:
        new = self.next_id[table]
        self.next_id[table] += 1
        cur.execute(f"UPDATE {table} SET id = %s, v = v + 1 WHERE id = %s", (new, old))
        v = self.live[table].pop(old) + 1
        self.live[table][new] = v
        self._record(table, old, "-D", None)
        self._record(table, new, "+I", v)
