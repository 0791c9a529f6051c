"""Row operations and DDL arrive in the changelog in binlog order per key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cdc_ingest.capture.positions import PositionStore
from tests.conftest import admin_conn
from tests.integration.flavors import Source
from tests.integration.pipeline_helpers import (
    changelog,
    gtid_now,
    rows_of,
    start_capture,
    stop,
    wait_for,
    write_pipeline,
)


def _by_key(records: list[dict[str, Any]]) -> dict[tuple[str, str], list[tuple[Any, ...]]]:
    out: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
    for r in rows_of(records):
        key = (r["table"], r["_key"].decode())
        out.setdefault(key, []).append((r["op"], (r["after"] or {}).get("v")))
    return out


def _capture(source: Source, kafka: Any, tmp_path: Path, name: str, tables: str, start: str,
             rows: int, source_options: dict[str, Any] | None = None,
             pipeline: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Capture ``tables`` from GTID set ``start`` until the changelog holds ``rows`` row
    changes; every committed changelog record."""
    config = write_pipeline(
        tmp_path / f"{name}.yaml", source, kafka, name, tables,
        source={"scan.startup.mode": "specific-offset",
                "scan.startup.specific-offset.gtid-set": start, **(source_options or {})},
        pipeline=pipeline,
    )
    log = tmp_path / "capture.log"
    proc = start_capture(config, log)
    try:
        records: list[dict[str, Any]] = wait_for(
            lambda: (r := changelog(kafka, name)) and len(rows_of(r)) >= rows and r,
            what=f"{rows} row changes",
        )
    finally:
        assert stop(proc) == 0, log.read_text()
    return records


def test_insert_update_delete_and_key_change_per_key_in_order(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    fresh_db = fresh_source_db
    conn = admin_conn(source, fresh_db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE a (id INT PRIMARY KEY, v INT)")
        cur.execute("CREATE TABLE b (k1 VARCHAR(10), k2 INT, v INT, PRIMARY KEY (k2, k1))")
        cur.execute("CREATE TABLE skipped (id INT PRIMARY KEY, v INT)")
    start = gtid_now(source)
    with conn.cursor() as cur:
        cur.execute("INSERT INTO a VALUES (1, 0), (2, 0), (3, 0)")
        cur.execute("INSERT INTO b VALUES ('x', 1, 0), ('y', 2, 0)")
        cur.execute("INSERT INTO skipped VALUES (1, 0)")
        cur.execute("UPDATE a SET v = 1 WHERE id = 1")
        cur.execute("UPDATE b SET v = 1 WHERE k1 = 'x'")
        cur.execute("UPDATE a SET id = 10, v = 2 WHERE id = 2")  # key change
        cur.execute("DELETE FROM a WHERE id = 3")
        cur.execute("UPDATE a SET v = v + 1")  # one statement, two rows
        cur.execute("UPDATE b SET k1 = 'z', v = 2 WHERE k2 = 2")  # composite key change
        cur.execute("DELETE FROM b WHERE k2 = 1")
        cur.execute("INSERT INTO a VALUES (3, 5)")  # a deleted key comes back
        # a SAVEPOINT is logged as a statement inside the transaction, not a DDL of its own
        cur.execute("BEGIN")
        cur.execute("INSERT INTO a VALUES (20, 0)")
        cur.execute("SAVEPOINT s1")
        cur.execute("INSERT INTO a VALUES (21, 0)")
        cur.execute("COMMIT")
    conn.commit()

    records = _capture(source, kafka, tmp_path, f"ops-{fresh_db}",
                       rf"{fresh_db}.a, {fresh_db}.b", start, 17)

    assert {r["table"] for r in rows_of(records)} == {"a", "b"}
    assert _by_key(records) == {
        ("a", '{"id":1}'): [("+I", 0), ("+U", 1), ("+U", 2)],
        ("a", '{"id":2}'): [("+I", 0), ("-D", None)],
        ("a", '{"id":10}'): [("+I", 2), ("+U", 3)],
        ("a", '{"id":3}'): [("+I", 0), ("-D", None), ("+I", 5)],
        # key columns in key order (k2, k1), not table order
        ("b", '{"k2":1,"k1":"x"}'): [("+I", 0), ("+U", 1), ("-D", None)],
        ("b", '{"k2":2,"k1":"y"}'): [("+I", 0), ("-D", None)],
        ("b", '{"k2":2,"k1":"z"}'): [("+I", 2)],
        ("a", '{"id":20}'): [("+I", 0)],
        ("a", '{"id":21}'): [("+I", 0)],
    }
    # both rows of the savepoint transaction are rows 1 and 2 of one GTID
    tx = sorted(r["pos"] for r in records if r["pk"] in ({"id": 20}, {"id": 21}))
    assert tx[0].endswith("#1") and tx[1].endswith("#2")
    assert tx[0].split("#")[0] == tx[1].split("#")[0]
    assert source.facts.tx_gtid.fullmatch(tx[0].split("#")[0]), tx[0]
    # a key-changing update: -D of the old key carries the old row, +I the new one
    delete = next(r for r in records if r["op"] == "-D" and r["pk"] == {"id": 2})
    assert delete["before"] == {"id": 2, "v": 0} and delete["after"] is None
    # one key always lands in one partition
    partitions: dict[bytes, set[int]] = {}
    for r in rows_of(records):
        partitions.setdefault(r["_key"], set()).add(r["_partition"])
    assert all(len(p) == 1 for p in partitions.values())


def test_ddl_is_recorded_and_later_rows_use_the_new_columns(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    fresh_db = fresh_source_db
    conn = admin_conn(source, fresh_db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT)")
    start = gtid_now(source)
    with conn.cursor() as cur:
        cur.execute("INSERT INTO t VALUES (1, 1)")
        cur.execute("ALTER TABLE t ADD COLUMN note VARCHAR(20) DEFAULT 'n', DROP COLUMN a")
        cur.execute("INSERT INTO t VALUES (2, 'hello')")
        cur.execute("ALTER TABLE t ADD COLUMN flag TINYINT(1) DEFAULT 1")
        cur.execute("UPDATE t SET flag = 0 WHERE id = 1")
        # a table created while streaming is captured from its creation
        cur.execute("CREATE TABLE fresh (id INT PRIMARY KEY, x VARCHAR(5))")
        cur.execute("INSERT INTO fresh VALUES (7, 'new')")
    conn.commit()

    records = _capture(source, kafka, tmp_path, f"ddl-{fresh_db}", rf"{fresh_db}.\.*", start,
                       4, pipeline={"parallelism": 1})

    seen = [(r["op"], r.get("ddl", "")[:20], r["after"]) for r in records]
    assert seen == [
        ("+I", "", {"id": 1, "a": 1}),
        ("DDL", "ALTER TABLE t ADD CO", None),
        ("+I", "", {"id": 2, "note": "hello"}),
        ("DDL", "ALTER TABLE t ADD CO", None),
        ("+U", "", {"id": 1, "note": "n", "flag": False}),
        ("DDL", "CREATE TABLE fresh (", None),
        ("+I", "", {"id": 7, "x": "new"}),
    ]
    assert records[1]["db"] == fresh_db and records[1]["table"] == "t"


def test_configured_key_columns_and_a_prefix_primary_key_key_binlog_rows(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    """A table without a primary key, keyed by ``source.tables.key-columns`` (in their
    configured order), and one whose primary key has a prefix part (the binlog describes it
    apart from a plain key)."""
    db = fresh_source_db
    conn = admin_conn(source, db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE n (region INT NOT NULL, code VARCHAR(8) NOT NULL, v INT)")
        cur.execute("CREATE TABLE p (name VARCHAR(20) NOT NULL, v INT, "
                    "PRIMARY KEY (name(3), v))")
    start = gtid_now(source)
    with conn.cursor() as cur:
        cur.execute("INSERT INTO n VALUES (1, 'a', 0), (2, 'b', 0)")
        cur.execute("UPDATE n SET v = 1 WHERE code = 'a'")
        cur.execute("DELETE FROM n WHERE code = 'b'")
        cur.execute("INSERT INTO p VALUES ('alpha', 1)")
        cur.execute("UPDATE p SET name = 'alps' WHERE v = 1")
    conn.commit()
    records = _capture(source, kafka, tmp_path, f"keycols-{db}", rf"{db}.n, {db}.p", start, 7,
                       {"tables.key-columns": {f"{db}.n": "code,region"}})
    assert _by_key(records) == {
        ("n", '{"code":"a","region":1}'): [("+I", 0), ("+U", 1)],
        ("n", '{"code":"b","region":2}'): [("+I", 0), ("-D", None)],
        ("p", '{"name":"alpha","v":1}'): [("+I", 1), ("-D", None)],
        ("p", '{"name":"alps","v":1}'): [("+I", 1)],
    }


def test_caught_up_capture_commits_at_once_not_at_the_next_event(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    """Level with the server at the end of a MySQL transaction, capture commits then: with
    heartbeats and max-interval five minutes away, a lone change is in the changelog within
    seconds, and so is the end of a transaction whose first rows max-rows committed (the
    committed position no longer points inside it). SIGTERM then stops it at once, though
    the server sends nothing for minutes."""
    db = fresh_source_db
    conn = admin_conn(source, db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    name = f"idle-{db}"
    config = write_pipeline(
        tmp_path / f"{name}.yaml", source, kafka, name, f"{db}.t",
        source={"scan.startup.mode": "specific-offset",
                "scan.startup.specific-offset.gtid-set": gtid_now(source),
                "heartbeat.interval": "300s", "capture.transaction.max-interval": "300s",
                "capture.transaction.max-rows": 10},
    )
    log = tmp_path / "capture.log"
    proc = start_capture(config, log)
    store = PositionStore({"bootstrap.servers": kafka.bootstrap}, f"cdc-ingest.{name}.offsets")
    try:
        with conn.cursor() as cur:
            cur.execute("INSERT INTO t VALUES (1, 1)")
        conn.commit()
        lone = wait_for(lambda: rows_of(changelog(kafka, name)), timeout=45,
                        what="the lone insert, with no event after it")
        assert [(r["op"], r["after"]) for r in lone] == [("+I", {"id": 1, "v": 1})]
        before = store.load()
        assert before is not None and before.rows_done == 0, before

        with conn.cursor() as cur:  # 25 rows, one transaction: commits at 10, 20 and its end
            cur.execute("INSERT INTO t SELECT id + 100, id FROM t")
            cur.executemany("INSERT INTO t VALUES (%s, %s)", [(i, i) for i in range(2, 26)])
        conn.commit()
        rows = wait_for(lambda: (r := rows_of(changelog(kafka, name))) and len(r) >= 26 and r,
                        timeout=45, what="the 25-row transaction")
        assert len(rows) == 26
        position = wait_for(
            lambda: (p := store.load()) and p.gtid_set != before.gtid_set and p,
            timeout=45, what="a committed position past the 25-row transaction")
        # its end, not a point inside it (rows 20 of 25)
        assert position.rows_done == 0 and position.tx_gtid is None, position
    finally:
        assert stop(proc) == 0, log.read_text()
