"""The binlog in capture's own event types: what the reader yields, what capture consumes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cdc_ingest.capture.binlog_schema import TableSchema


@dataclass(frozen=True, slots=True)
class TxBegin:
    gtid: str | None
    file: str
    pos: int
    ts: int


@dataclass(frozen=True, slots=True)
class TxCommit:
    ts: int
    file: str
    pos: int


@dataclass(frozen=True, slots=True)
class Rows:
    """Row images of one rows event: ``kind`` is ``I``, ``U`` or ``D``."""

    kind: str
    schema: TableSchema
    rows: list[tuple[list[Any] | None, list[Any] | None]]
    ts: int
    where: str
    file: str = ""
    pos: int = 0


@dataclass(frozen=True, slots=True)
class Ddl:
    """A statement other than BEGIN/COMMIT; ``ends_tx`` when it is a transaction of its own."""

    db: str
    sql: str
    ts: int
    file: str
    pos: int
    ends_tx: bool = True


@dataclass(frozen=True, slots=True)
class Heartbeat:
    file: str
    pos: int


BinlogEvent = TxBegin | TxCommit | Rows | Ddl | Heartbeat
