"""MySQL's GTID set at a binlog file and position: what a replica that stopped there has.

MySQL has no ``BINLOG_GTID_POS`` (MariaDB's): the set is the file's ``Previous_gtids`` event
(every GTID of the files before it) plus the GTID event of each transaction in the file before
the position, read with ``SHOW BINLOG EVENTS``. Capture resumes by GTID set on MySQL
(capture/binlog.py), so a position given as a file and position (``specific-offset``,
``set-binlog-position``) becomes this set: a later restart then asks the server for exactly
what follows it, not for every transaction outside the few capture saw since.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from cdc_ingest.mysql.gtid import format_gtid_set, parse_gtid, parse_gtid_set_strict

Query = Callable[..., list[tuple[Any, ...]]]

PAGE = 10_000  # events per SHOW BINLOG EVENTS
_GTID_NEXT = re.compile(r"GTID_NEXT\s*=\s*'([^']+)'", re.IGNORECASE)
_GTID_EVENTS = ("Gtid", "Gtid_tagged_log")


def mysql_gtid_at(query: Query, file: str, pos: int) -> str:
    """The GTID set at ``file``:``pos``; ``LookupError`` when no event of that file starts
    there (nor does the file end there), or the server does not have the file."""
    intervals: dict[str, list[tuple[int, int]]] = {}
    at, found = 4, pos == 4
    while True:
        try:
            rows = query(f"SHOW BINLOG EVENTS IN %s FROM {int(at)} LIMIT {PAGE}", (file,))
        except Exception as exc:  # noqa: BLE001 - pymysql's error for a file it lacks
            raise LookupError(f"{file}:{pos}: {exc}") from None
        for _name, start, kind, _server, end, info in rows:
            if kind == "Previous_gtids":  # what the files before hold: at any position
                if str(info).strip():
                    for key, items in parse_gtid_set_strict(str(info)).items():
                        intervals.setdefault(key, []).extend(items)
            elif int(start) >= pos:
                found = found or int(start) == pos
                if kind != "Format_desc":  # the file's Previous_gtids follows that one
                    return _text(intervals, found, file, pos)
            elif kind in _GTID_EVENTS and (m := _GTID_NEXT.search(str(info))):
                key, gno = parse_gtid(m.group(1))
                intervals.setdefault(key, []).append((gno, gno))
            at = int(end)
            found = found or at == pos
        if len(rows) < PAGE:
            return _text(intervals, found, file, pos)


def _text(intervals: dict[str, list[tuple[int, int]]], found: bool, file: str,
          pos: int) -> str:
    if not found:
        raise LookupError(f"{file}:{pos}")
    return format_gtid_set(intervals).replace("\n", "")
