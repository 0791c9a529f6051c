"""Transaction metadata (`sink.transaction-metadata.topic`), end to end with `start`: the
BEGIN and END records, their counts after routes and filters, and the `transaction.*`
headers, checked message by message against what each MySQL transaction wrote."""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import admin_conn
from tests.integration.flavors import Source
from tests.integration.pipeline_helpers import (
    cli,
    sink_topic,
    start_command,
    stop,
    wait_for,
    write_pipeline,
)

TX_HEADERS = ("transaction.id", "transaction.total_order", "transaction.data_collection_order")


def _watch_transactions(config: Path, log: Path, blocks: int) -> str:
    """`watch --transactions --from-beginning` until it printed ``blocks`` transactions."""
    log.write_bytes(b"")
    proc = start_command("watch", config, log, "--transactions", "--from-beginning")
    try:
        wait_for(lambda: log.read_text().count("\ntransaction ") >= blocks
                 or proc.poll() is not None, timeout=60, what=f"{blocks} transaction blocks")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
    return log.read_text()


def _tx(m: Any) -> tuple[str, int, int] | None:
    headers = dict(m.headers)
    if "transaction.id" not in headers:
        assert not any(h.startswith("transaction.") for h in headers), m
        return None
    return (headers["transaction.id"].decode(), int(headers["transaction.total_order"]),
            int(headers["transaction.data_collection_order"]))


@pytest.mark.parametrize("source", ["mysql"], indirect=True)
def test_begin_end_counts_and_headers_after_routes_and_filters(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    db = fresh_source_db
    conn = admin_conn(source, db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE orders (id INT PRIMARY KEY, total DECIMAL(10,2))")
        for shard in ("lines_a", "lines_b"):
            cur.execute(f"CREATE TABLE {shard} (id INT PRIMARY KEY, order_id INT, "
                        "amount DECIMAL(10,2))")
        cur.execute("INSERT INTO orders VALUES (100, 1.00)")  # a snapshot row
    conn.commit()
    name = f"txmeta-{db}"
    meta_topic = f"{db}-transactions"
    config = write_pipeline(
        tmp_path / "p.yaml", source, kafka, name, rf"{db}.\.*",
        source={"scan.startup.mode": "initial"},
        sink={"sink.delivery-guarantee": "exactly-once", "topic.partitions": 3,
              "sink.transaction-metadata.topic": meta_topic},
        routes=[{"source-table": rf"{db}.lines_[ab]", "sink-table": f"{db}-lines"},
                {"source-table": rf"{db}.orders", "sink-table": f"{db}-orders"}],
        transforms=[{"source-table": rf"{db}.lines_[ab]", "filter": "amount <> 0"}],
    )
    log = tmp_path / "start.log"
    proc = start_command("start", config, log)
    try:
        wait_for(lambda: "starts at" in log.read_text(), timeout=120, what="capture running")
        with conn.cursor() as cur:
            # T1: an order and three lines, one of them filtered out
            cur.execute("START TRANSACTION")
            cur.execute("INSERT INTO orders VALUES (1, 30.00)")
            cur.execute("INSERT INTO lines_a VALUES (1, 1, 10.00), (2, 1, 0.00), (3, 1, 20.00)")
            cur.execute("COMMIT")
            # T2: rows filtered out only: no BEGIN/END
            cur.execute("START TRANSACTION")
            cur.execute("INSERT INTO lines_b VALUES (9, 1, 0.00)")
            cur.execute("COMMIT")
            # T3: a key change of an order, and one line in each shard (merged by the route)
            cur.execute("START TRANSACTION")
            cur.execute("UPDATE orders SET id = 2 WHERE id = 1")
            cur.execute("INSERT INTO lines_b VALUES (4, 2, 5.00)")
            cur.execute("INSERT INTO lines_a VALUES (5, 2, 6.00)")
            cur.execute("UPDATE lines_a SET order_id = 2 WHERE id IN (1, 3)")
            cur.execute("COMMIT")
        records = wait_for(
            lambda: (m := sink_topic(kafka, meta_topic)) and len(m) >= 4 and m,
            timeout=120, what="two BEGIN/END pairs")
        orders = sink_topic(kafka, f"{db}-orders")
        lines = sink_topic(kafka, f"{db}-lines")
        verify = cli("verify", "--config", str(config))
        watched = _watch_transactions(config, tmp_path / "watch.log", blocks=2)
    finally:
        code = stop(proc)
    assert code == 0, log.read_text()[-3000:]
    assert verify.returncode == 0, verify.stdout + verify.stderr

    values = [json.loads(r.value) for r in records]
    assert [r.partition for r in records] == [0, 0, 0, 0]
    assert [v["status"] for v in values] == ["BEGIN", "END", "BEGIN", "END"]
    t1, t3 = values[0]["id"], values[2]["id"]
    assert [json.loads(r.key) for r in records] == [{"id": t1}, {"id": t1}, {"id": t3},
                                                     {"id": t3}]
    assert re.fullmatch(r"[0-9a-f-]{36}:\d+", t1), t1
    # T2 (all filtered) lies between them and has no records
    assert int(t3.rsplit(":", 1)[1]) >= int(t1.rsplit(":", 1)[1]) + 2
    assert values[0] == {"status": "BEGIN", "id": t1, "event_count": None,
                         "data_collections": None, "ts_ms": values[1]["ts_ms"]}
    assert values[1]["event_count"] == 3
    assert values[1]["data_collections"] == [
        {"data_collection": f"{db}-lines", "event_count": 2},
        {"data_collection": f"{db}-orders", "event_count": 1}]
    # T3: the key change is 2 messages (tombstone, new key), 2 new lines, 2 line updates
    assert values[3]["event_count"] == 6
    assert values[3]["data_collections"] == [
        {"data_collection": f"{db}-lines", "event_count": 4},
        {"data_collection": f"{db}-orders", "event_count": 2}]

    # headers: the snapshot row has none; every other message points at T1 or T3
    by_tx: dict[str, list[tuple[str, Any, int, int]]] = {}
    for m in orders + lines:
        tx = _tx(m)
        if tx is None:
            assert m.key == b'{"id":100}' and m.topic == f"{db}-orders"
            continue
        by_tx.setdefault(tx[0], []).append((m.topic, m.key, tx[1], tx[2]))
    assert sorted(by_tx) == sorted([t1, t3])
    first = sorted((k, total, table) for _t, k, total, table in by_tx[t1])
    # row numbers: order 1st, lines 2nd..4th (the 3rd, amount 0, filtered: a gap)
    assert first == [(b'{"id":1}', 1, 1), (b'{"id":1}', 2, 1), (b'{"id":3}', 4, 3)]
    third = sorted((t.rsplit("-", 1)[1], k, total, table) for t, k, total, table in by_tx[t3])
    assert third == [
        ("lines", b'{"id":1}', 4, 2), ("lines", b'{"id":3}', 5, 3),  # lines_a's 2nd, 3rd
        ("lines", b'{"id":4}', 2, 1), ("lines", b'{"id":5}', 3, 1),
        ("orders", b'{"id":1}', 1, 1), ("orders", b'{"id":2}', 1, 1),  # one key change
    ]

    # watch --transactions: one block per transaction, in commit order, with its messages
    headers = [line for line in watched.splitlines() if line.startswith("transaction ")]
    assert headers == [
        f"transaction {t1} (3 messages: {db}-lines 2, {db}-orders 1) committed "
        + headers[0].rsplit(" committed ", 1)[1],
        f"transaction {t3} (6 messages: {db}-lines 4, {db}-orders 2) committed "
        + headers[1].rsplit(" committed ", 1)[1]], watched
    block = watched.split(headers[0], 1)[1].split(headers[1], 1)[0]
    assert block.count(f"{db}-orders p") == 1 and block.count(f"{db}-lines p") == 2, block
    assert 'key={"id":100}' in watched.split(headers[0], 1)[0]  # the snapshot row, alone
