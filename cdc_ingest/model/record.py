"""The changelog record: one Kafka message per row change between capture and sink.

Key: canonical JSON of the primary-key values, ``{"id":42}`` (so one key always lands in one
changelog partition, in binlog order). Value: orjson bytes of the fields below. Values are
already in their output JSON form (DESIGN section 4). Internal and versioned by ``v``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import orjson

CHANGELOG_VERSION = 1


class Op(StrEnum):
    INSERT = "+I"
    UPDATE = "+U"
    DELETE = "-D"
    DDL = "DDL"


@dataclass(frozen=True, slots=True)
class ChangeRecord:
    """A row change (or a DDL statement) as it travels in the changelog topic."""

    op: Op
    db: str
    table: str
    pk: dict[str, Any] | None
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    ts_ms: int
    pos: str
    ddl: str | None = None

    def key_bytes(self) -> bytes:
        return orjson.dumps(self.pk) if self.pk is not None else b"null"

    def value_bytes(self) -> bytes:
        body: dict[str, Any] = {
            "v": CHANGELOG_VERSION,
            "op": self.op.value,
            "db": self.db,
            "table": self.table,
            "pk": self.pk,
            "before": self.before,
            "after": self.after,
            "ts_ms": self.ts_ms,
            "pos": self.pos,
        }
        if self.ddl is not None:
            body["ddl"] = self.ddl
        return orjson.dumps(body)

    @classmethod
    def from_bytes(cls, value: bytes) -> ChangeRecord:
        body = orjson.loads(value)
        return cls(
            op=Op(body["op"]),
            db=body["db"],
            table=body["table"],
            pk=body.get("pk"),
            before=body.get("before"),
            after=body.get("after"),
            ts_ms=body["ts_ms"],
            pos=body["pos"],
            ddl=body.get("ddl"),
        )
