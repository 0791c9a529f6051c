"""Primary keys ordered as MySQL orders them, for snapshot chunks.

Keys are handled in their output JSON form (``{"id": 42}``), the form both snapshot rows and
binlog rows have in capture. Integers, decimals, date-times and binary strings compare in
Python; text compares through the server with the column's collation (``_ci`` collations
do not order like Python strings), cached.
"""

from __future__ import annotations

import base64
import decimal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

INTEGER = frozenset({"tinyint", "smallint", "mediumint", "int", "integer", "bigint", "year"})
DECIMAL = frozenset({"decimal", "numeric"})
TEMPORAL = frozenset({"date", "datetime", "timestamp"})
BINARY = frozenset({"binary", "varbinary"})
TEXT = frozenset({"char", "varchar"})
CHUNKABLE = INTEGER | DECIMAL | TEMPORAL | BINARY | TEXT

TextCompare = Callable[[str, str, str, str], int]  # (a, b, charset, collation) -> -1/0/1


@dataclass(frozen=True)
class KeyColumn:
    name: str
    data_type: str
    charset: str | None = None
    collation: str | None = None


def _number_text(value: Any) -> str:
    if isinstance(value, orjson.Fragment):
        return orjson.dumps(value).decode()
    return str(value)


class KeyOrder:
    """Compare keys and turn them into SQL parameters, for one table's key columns."""

    def __init__(self, columns: tuple[KeyColumn, ...], compare_text: TextCompare) -> None:
        self.columns = columns
        self.names = tuple(c.name for c in columns)
        self.chunkable = bool(columns) and all(c.data_type in CHUNKABLE for c in columns)
        self._compare_text = compare_text
        self._cache: dict[tuple[str, str, str], int] = {}

    def _column_compare(self, column: KeyColumn, a: Any, b: Any) -> int:
        kind = column.data_type
        if kind in TEXT:
            if a == b:
                return 0
            slot = (column.collation or "", str(a), str(b))
            hit = self._cache.get(slot)
            if hit is None:
                if len(self._cache) > 100_000:
                    self._cache.clear()
                hit = self._compare_text(str(a), str(b), column.charset or "utf8mb4",
                                         column.collation or "utf8mb4_bin")
                self._cache[slot] = hit
            return hit
        x, y = self._sortable(kind, a), self._sortable(kind, b)
        return (x > y) - (x < y)

    @staticmethod
    def _sortable(kind: str, value: Any) -> Any:
        if kind in INTEGER:
            return int(value)
        if kind in DECIMAL:
            return decimal.Decimal(_number_text(value))
        if kind in BINARY:
            return base64.b64decode(value)
        return str(value).removesuffix("Z")  # fixed-width date-time text sorts in time order

    def compare(self, a: dict[str, Any], b: dict[str, Any]) -> int:
        for column in self.columns:
            result = self._column_compare(column, a[column.name], b[column.name])
            if result:
                return result
        return 0

    def within(self, key: dict[str, Any], after: dict[str, Any] | None,
               upto: dict[str, Any] | None) -> bool:
        """``after < key <= upto`` (None: unbounded)."""
        if after is not None and self.compare(key, after) <= 0:
            return False
        return upto is None or self.compare(key, upto) <= 0

    def sql_params(self, key: dict[str, Any]) -> tuple[Any, ...]:
        """The key's values as parameters for a query on the table."""
        out: list[Any] = []
        for column in self.columns:
            value = key[column.name]
            if column.data_type in BINARY:
                out.append(base64.b64decode(value))
            elif column.data_type in DECIMAL:
                out.append(_number_text(value))
            elif column.data_type in TEMPORAL:
                out.append(str(value).removesuffix("Z"))
            elif isinstance(value, bool):
                out.append(int(value))
            else:
                out.append(value)
        return tuple(out)


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def after_condition(names: tuple[str, ...]) -> str:
    """SQL for ``(k1, k2, ...) > (%s, %s, ...)`` written so that indexes serve it."""
    parts = []
    for i, name in enumerate(names):
        equal = [f"{quote(n)} = %s" for n in names[:i]]
        parts.append("(" + " AND ".join([*equal, f"{quote(name)} > %s"]) + ")")
    return "(" + " OR ".join(parts) + ")"


def after_params(names: tuple[str, ...], values: tuple[Any, ...]) -> tuple[Any, ...]:
    """Parameters matching :func:`after_condition`."""
    out: list[Any] = []
    for i in range(len(names)):
        out.extend(values[: i + 1])
    return tuple(out)


def upto_condition(names: tuple[str, ...]) -> str:
    """SQL for ``(k1, k2, ...) <= (%s, %s, ...)``."""
    parts = []
    for i, name in enumerate(names):
        equal = [f"{quote(n)} = %s" for n in names[:i]]
        last = "<=" if i == len(names) - 1 else "<"
        parts.append("(" + " AND ".join([*equal, f"{quote(name)} {last} %s"]) + ")")
    return "(" + " OR ".join(parts) + ")"
