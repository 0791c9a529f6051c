"""What MySQL's binlog holds after a position, as ``SHOW BINLOG EVENTS`` lists it (cutover).

Two questions, both answered from the server's own listing rather than capture's reading, so
the cut-over gate does not take capture's word for what it checks:

* :func:`changes_after`: the first change after ``file:pos`` that could make a captured table
  differ from what it was there: a row event of a captured table (its ``Table_map``), a
  statement other than transaction control (DDL, whatever table: the listing does not say
  reliably which it touches), a compressed transaction (MySQL's ``Transaction_payload``,
  whose tables the listing need not show). Row events of tables the pipeline does not
  capture are not changes of the copy.
* :func:`gtid_end`: where the transaction of a GTID ends, the position after its last event.

Privileges: ``SHOW BINLOG EVENTS`` needs REPLICATION SLAVE on MySQL and BINLOG MONITOR on
MariaDB, both granted to a capture user (docs/mysql-setup.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

Query = Callable[..., list[tuple[Any, ...]]]
PAGE = 5_000  # events per SHOW BINLOG EVENTS

_TABLE_MAP = re.compile(r"table_id: \d+ \((.*)\)\s*$")
_USE = re.compile(r"^use `(?:[^`]|``)*`;\s*", re.IGNORECASE)
_CONTROL = re.compile(r"^(BEGIN|COMMIT|ROLLBACK|XA |SAVEPOINT|RELEASE SAVEPOINT)",
                      re.IGNORECASE)
_MYSQL_GTID = re.compile(r"GTID_NEXT\s*=\s*'([^']+)'", re.IGNORECASE)
_MARIADB_GTID = re.compile(r"GTID (\d+-\d+-\d+)")


@dataclass(frozen=True)
class Event:
    file: str
    pos: int
    type: str
    end: int
    info: str

    @property
    def where(self) -> str:
        return f"{self.file}:{self.pos}"


def events(query: Query, file: str, pos: int | None = None) -> Iterator[Event]:
    """The events of binlog ``file`` from ``pos`` (a position an event starts at; the start
    of the file when None), a page at a time."""
    start = pos
    while True:
        where = "" if start is None else f" FROM {int(start)}"
        rows = query(f"SHOW BINLOG EVENTS IN %s{where} LIMIT {PAGE}", (file,))
        if not rows:
            return
        for row in rows:
            yield Event(str(row[0]), int(row[1]), str(row[2]), int(row[4]),
                        _text(row[5]))
        if len(rows) < PAGE:
            return
        start = int(rows[-1][4])


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return "" if value is None else str(value)


def files_from(query: Query, file: str) -> list[str]:
    """The binlog files from ``file`` on, oldest first."""
    names = [_text(r[0]) for r in query("SHOW BINARY LOGS")]
    return [n for n in names if _order(n) >= _order(file)]


def _order(name: str) -> tuple[str, int]:
    stem, _, number = name.rpartition(".")
    return (stem, int(number)) if number.isdigit() else (name, 0)


def _statement(info: str) -> str:
    return _USE.sub("", info.strip())


def _tables(info: str) -> list[tuple[str, str]]:
    """A Table_map's ``db.table``, every way its text splits (a dot may be in a name)."""
    found = _TABLE_MAP.search(info)
    if not found:
        return []
    text = found.group(1)
    return [(text[:i], text[i + 1:]) for i, c in enumerate(text) if c == "."]


def changes_after(query: Query, file: str, pos: int, captured: Callable[[str, str], bool]
                  ) -> tuple[Event, str] | None:
    """The first event after ``file:pos`` that may change a captured table, with what it
    is; None when the binlog holds none."""
    for name in files_from(query, file):
        for event in events(query, name, pos if name == file else None):
            kind = event.type.lower()
            if kind == "table_map":
                hit = next(((db, t) for db, t in _tables(event.info) if captured(db, t)), None)
                if hit is not None:
                    return event, f"a row change of {hit[0]}.{hit[1]}"
            elif kind.startswith("query"):  # MariaDB's Query_compressed too
                statement = _statement(event.info)
                if statement and not _CONTROL.match(statement):
                    return event, f"the statement {statement[:160]!r}"
            elif kind == "transaction_payload":
                return event, "a compressed transaction (its tables are not listed)"
    return None


def _gtid_of(event: Event) -> str | None:
    if not event.type.lower().startswith("gtid"):
        return None
    found = _MYSQL_GTID.search(event.info) or _MARIADB_GTID.search(event.info)
    return found.group(1).lower() if found else None


def gtid_end(query: Query, gtid: str) -> tuple[str, int] | None:
    """The position after the last event of the transaction ``gtid`` (MySQL ``uuid:n`` or
    ``uuid:tag:n``, MariaDB ``domain-server-seq``), searched newest binlog file first; None
    when no binlog file holds it."""
    wanted = gtid.strip().lower()
    names = [_text(r[0]) for r in query("SHOW BINARY LOGS")]
    for name in reversed(names):
        found, in_transaction = False, False
        for event in events(query, name):
            if not found:
                if _gtid_of(event) == wanted:
                    found, in_transaction = True, event.info.upper().startswith("BEGIN")
                continue
            kind = event.type.lower()
            statement = _statement(event.info).upper()
            if kind in ("xid", "transaction_payload") or (
                    kind == "query" and statement.startswith(("COMMIT", "ROLLBACK"))):
                return name, event.end
            if kind == "query" and statement.startswith("BEGIN"):
                in_transaction = True
            elif kind == "query" and not in_transaction:
                return name, event.end  # a DDL: its own transaction
        if found:
            raise LookupError(f"the transaction of GTID {gtid} has no end in {name}")
    return None
