"""verify/binlog_events.py on listings as SHOW BINLOG EVENTS prints them (MySQL 9.7 and
MariaDB rows, columns Log_name, Pos, Event_type, Server_id, End_log_pos, Info): which event
after a position may change a captured table, and where a GTID's transaction ends."""

from __future__ import annotations

from typing import Any

from cdc_ingest.verify.binlog_events import PAGE, changes_after, gtid_end

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
MYSQL = [
    ("b.000001", 4, "Format_desc", 1, 127, "Server ver: 9.7.0, Binlog ver: 4"),
    ("b.000001", 127, "Previous_gtids", 1, 158, ""),
    ("b.000001", 158, "Gtid", 1, 237, f"SET @@SESSION.GTID_NEXT= '{UUID}:7'"),
    ("b.000001", 237, "Query", 1, 316, "BEGIN"),
    ("b.000001", 316, "Table_map", 1, 380, "table_id: 92 (shop.orders)"),
    ("b.000001", 380, "Write_rows", 1, 424, "table_id: 92 flags: STMT_END_F"),
    ("b.000001", 424, "Xid", 1, 455, "COMMIT /* xid=41 */"),
    ("b.000001", 455, "Gtid", 1, 534, f"SET @@SESSION.GTID_NEXT= '{UUID}:t_a:1'"),
    ("b.000001", 534, "Query", 1, 650, "use `shop`; ALTER TABLE logs ADD c INT"),
]
MARIADB = [
    ("m.000002", 4, "Format_desc", 1, 256, "Server ver: 10.11.6-MariaDB, Binlog ver: 4"),
    ("m.000002", 256, "Gtid_list", 1, 299, "[0-1-41]"),
    ("m.000002", 299, "Gtid", 1, 341, "BEGIN GTID 0-1-42"),
    ("m.000002", 341, "Annotate_rows", 1, 400, "INSERT INTO other VALUES (1)"),
    ("m.000002", 400, "Table_map", 1, 450, "table_id: 33 (shop.other)"),
    ("m.000002", 450, "Write_rows_v1", 1, 490, "table_id: 33 flags: STMT_END_F"),
    ("m.000002", 490, "Xid", 1, 521, "COMMIT /* xid=9 */"),
    ("m.000002", 521, "Gtid", 1, 563, "GTID 0-1-43"),
    ("m.000002", 563, "Query", 1, 650, "use `shop`; CREATE TABLE x (id INT PRIMARY KEY)"),
]


def _server(listing: list[tuple[Any, ...]]) -> Any:
    files = sorted({r[0] for r in listing})

    def query(sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        if sql == "SHOW BINARY LOGS":
            return [(f, 0) for f in files]
        assert sql.startswith("SHOW BINLOG EVENTS IN %s") and f"LIMIT {PAGE}" in sql, sql
        start = int(sql.split(" FROM ")[1].split(maxsplit=1)[0]) if " FROM " in sql else 0
        return [r for r in listing if r[0] == args[0] and r[1] >= start][:PAGE]
    return query


def test_a_row_change_of_a_captured_table_is_named_and_others_are_not() -> None:
    query = _server(MYSQL)
    event, what = changes_after(query, "b.000001", 158, lambda db, t: t == "orders")
    assert (event.where, what) == ("b.000001:316", "a row change of shop.orders")
    # nothing captured changed: the DDL is the first change, whatever its table
    event, what = changes_after(query, "b.000001", 158, lambda db, t: False)
    assert event.where == "b.000001:534"
    assert what == "the statement 'ALTER TABLE logs ADD c INT'"
    assert changes_after(query, "b.000001", 650, lambda db, t: True) is None


def test_mariadb_listing_and_a_dot_in_a_name() -> None:
    query = _server([*MARIADB[:4], ("m.000002", 400, "Table_map", 1, 450,
                                    "table_id: 33 (my.db.t)"), *MARIADB[5:]])
    event, what = changes_after(query, "m.000002", 299, lambda db, t: (db, t) == ("my.db", "t"))
    assert what == "a row change of my.db.t"
    event, what = changes_after(query, "m.000002", 299, lambda db, t: (db, t) == ("my", "db.t"))
    assert what == "a row change of my.db.t"
    event, what = changes_after(_server(MARIADB), "m.000002", 299, lambda db, t: False)
    assert "CREATE TABLE x" in what and event.where == "m.000002:563"


def test_a_compressed_transaction_counts_as_a_change() -> None:
    listing = [("b.000003", 4, "Format_desc", 1, 127, ""),
               ("b.000003", 127, "Gtid", 1, 200, f"SET @@SESSION.GTID_NEXT= '{UUID}:9'"),
               ("b.000003", 200, "Transaction_payload", 1, 900,
                "compression='ZSTD', decompressed_size=2048 bytes")]
    event, what = changes_after(_server(listing), "b.000003", 127, lambda db, t: False)
    assert event.where == "b.000003:200" and "compressed transaction" in what
    assert gtid_end(_server(listing), f"{UUID}:9") == ("b.000003", 900)


def test_where_a_gtids_transaction_ends() -> None:
    assert gtid_end(_server(MYSQL), f"{UUID}:7") == ("b.000001", 455)
    assert gtid_end(_server(MYSQL), f"{UUID.upper()}:T_A:1") == ("b.000001", 650)  # a DDL
    assert gtid_end(_server(MARIADB), "0-1-42") == ("m.000002", 521)
    assert gtid_end(_server(MARIADB), "0-1-43") == ("m.000002", 650)
    assert gtid_end(_server(MARIADB), "0-1-44") is None


def test_a_long_file_is_read_a_page_at_a_time() -> None:
    rows = [("b.000001", 4 + i * 10, "Rotate" if i == 0 else "Heartbeat", 1, 14 + i * 10, "")
            for i in range(PAGE + 3)]
    rows.append(("b.000001", 14 + (PAGE + 2) * 10, "Query", 1, 99_999_999, "DROP TABLE x"))
    event, _ = changes_after(_server(rows), "b.000001", 4, lambda db, t: True)
    assert event.info == "DROP TABLE x"
