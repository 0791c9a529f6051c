"""Identity of a source table."""

from __future__ import annotations

from typing import NamedTuple


class TableId(NamedTuple):
    """A MySQL table: ``db.table``. MySQL has no namespace; it is kept for the sink headers."""

    db: str
    table: str

    def __str__(self) -> str:
        return f"{self.db}.{self.table}"

    @classmethod
    def parse(cls, text: str) -> TableId:
        db, _, table = text.partition(".")
        return cls(db, table)
