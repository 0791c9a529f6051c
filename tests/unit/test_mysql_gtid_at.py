"""MySQL's GTID set at a binlog file and position (mysql/binlog_gtids.py), from the events
SHOW BINLOG EVENTS lists: the file's Previous_gtids plus each GTID event before the position.
The rows are MySQL 9.7's own (columns Log_name, Pos, Event_type, Server_id, End_log_pos,
Info); the integration tests read real servers (test_set_position.py)."""

from __future__ import annotations

from typing import Any

import pytest

from cdc_ingest.mysql import binlog_gtids
from cdc_ingest.mysql.binlog_gtids import mysql_gtid_at

U = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
V = "0a0b0c0d-71ca-11e1-9e33-c80aa9429562"
F = "binlog.000002"
EVENTS = [
    (F, 4, "Format_desc", 1, 127, "Server ver: 9.7.0, Binlog ver: 4"),
    (F, 127, "Previous_gtids", 1, 198, f"{U}:1-10,\n{V}:1-3"),
    (F, 198, "Gtid", 1, 275, f"SET @@SESSION.GTID_NEXT= '{U}:11'"),
    (F, 275, "Query", 1, 350, "BEGIN"),
    (F, 350, "Table_map", 1, 400, "table_id: 90 (db.t)"),
    (F, 400, "Write_rows", 1, 440, "table_id: 90 flags: STMT_END_F"),
    (F, 440, "Xid", 1, 471, "COMMIT /* xid=12 */"),
    (F, 471, "Gtid_tagged_log", 1, 560, f"SET @@SESSION.GTID_NEXT= '{U}:blue:5'"),
    (F, 560, "Query", 1, 700, "use `db`; ALTER TABLE t ADD COLUMN c INT"),
    (F, 700, "Gtid", 1, 777, f"SET @@SESSION.GTID_NEXT= '{U}:12'"),
    (F, 777, "Query", 1, 852, "BEGIN"),
    (F, 852, "Xid", 1, 883, "COMMIT /* xid=15 */"),
]


def _query(events: list[tuple[Any, ...]]) -> Any:
    def query(sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        assert args == (F,)
        start = int(sql.split("FROM ")[1].split(maxsplit=1)[0])
        limit = int(sql.split("LIMIT ")[1])
        rows = [e for e in events if e[1] >= start]
        return rows[:limit]
    return query


@pytest.mark.parametrize(("pos", "expected"), [
    (4, f"{V}:1-3,{U}:1-10"),  # the file's start: what the files before it hold
    (198, f"{V}:1-3,{U}:1-10"),
    (471, f"{V}:1-3,{U}:1-11"),
    (700, f"{V}:1-3,{U}:1-11:blue:5"),
    (883, f"{V}:1-3,{U}:1-12:blue:5"),  # the file's end
])
def test_the_set_at_each_transaction_boundary(pos: int, expected: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(binlog_gtids, "PAGE", 3)  # several pages, the boundary across them
    assert mysql_gtid_at(_query(EVENTS), F, pos) == expected


def test_a_position_no_event_starts_at_is_not_known() -> None:
    with pytest.raises(LookupError, match=f"{F}:300"):
        mysql_gtid_at(_query(EVENTS), F, 300)
    with pytest.raises(LookupError, match=f"{F}:900"):
        mysql_gtid_at(_query(EVENTS), F, 900)  # past the file's end


def test_a_file_the_server_lacks_is_not_known() -> None:
    def query(sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        raise RuntimeError("(1220, 'Error when executing command SHOW BINLOG EVENTS: Could "
                           "not find target log')")
    with pytest.raises(LookupError, match="Could not find target log"):
        mysql_gtid_at(query, F, 4)
