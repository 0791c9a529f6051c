"""The MySQL side of verify: captured tables, their columns and keys, rows streamed.

Rows come through an unbuffered cursor (``SSCursor``), so a table of millions of rows costs
one row at a time. The tables of one sink topic are read inside one consistent snapshot.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

from cdc_ingest.errors import SourceError
from cdc_ingest.mysql import (
    COLUMNS_QUERY,
    Column,
    ConnectionSettings,
    as_text,
    connect,
    stream_rows,
    try_query,
)
from cdc_ingest.mysql.packets import ParserFactory, stream_packets
from cdc_ingest.mysql.raw_rows import RawRows, raw_rows
from cdc_ingest.verify.convert import UnsupportedType, converter, select_expression
from cdc_ingest.verify.values import dumps

log = logging.getLogger(__name__)

_SYSTEM_SCHEMAS = ("mysql", "information_schema", "performance_schema", "sys")
_FETCH = 1000


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


@dataclass(frozen=True)
class TableShape:
    """A table as verify reads it: columns in order, key columns in key order."""

    db: str
    table: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.db}.{self.table}"

    def select(self) -> str:
        columns = ", ".join(select_expression(c) for c in self.columns)
        # Identifiers cannot be bound parameters; both are quoted names from the catalog.
        return f"SELECT {columns} FROM {quote(self.db)}.{quote(self.table)}"  # noqa: S608


class RowConverter:
    """Rows of one table -> (canonical key JSON, row as output JSON values)."""

    def __init__(self, shape: TableShape, tinyint1_as_boolean: bool) -> None:
        missing = [k for k in shape.key if k not in {c.name for c in shape.columns}]
        if missing:
            raise SourceError(f"key column(s) {missing} are not columns of {shape.name}. "
                              "Fix: correct source.tables.key-columns.")
        self.names = tuple(c.name for c in shape.columns)
        self.key = shape.key
        try:
            self._convert = tuple(converter(c, tinyint1_as_boolean) for c in shape.columns)
        except UnsupportedType as exc:
            raise SourceError(f"{shape.name}: {exc}, which verify cannot check") from None

    def __call__(self, values: tuple[Any, ...]) -> tuple[bytes, dict[str, Any]]:
        row = {
            name: None if value is None else convert(value)
            for name, convert, value in zip(self.names, self._convert, values, strict=True)
        }
        return dumps({k: row[k] for k in self.key}), row


class MySqlSide:
    """One connection: catalog queries, then row streams (one at a time)."""

    def __init__(self, settings: ConnectionSettings, retries: int = 3) -> None:
        self._conn = connect(settings, retries)
        self._run("SET SESSION time_zone = '+00:00'")
        # A slow consumer of a long stream must not be cut off by the server.
        self._run("SET SESSION net_write_timeout = 3600")

    def close(self) -> None:
        self._conn.close()

    def _run(self, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        with self._conn.cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())

    def tables(self, captured: Callable[[str, str], bool]) -> list[tuple[str, str]]:
        """Base tables the pipeline captures, sorted."""
        rows = self._run(
            "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "
            "WHERE TABLE_TYPE = 'BASE TABLE' AND TABLE_SCHEMA NOT IN (%s, %s, %s, %s)",
            _SYSTEM_SCHEMAS,
        )
        names = [(as_text(db), as_text(table)) for db, table in rows]
        return sorted((db, table) for db, table in names if captured(db, table))

    def shape(self, db: str, table: str, key_columns: tuple[str, ...] | None) -> TableShape:
        """Columns and key (``key_columns`` from the config, else the primary key)."""
        columns = tuple(Column.from_row(r) for r in self._run(COLUMNS_QUERY, (db, table)))
        key = key_columns or tuple(as_text(r[0]) for r in self._run(
            "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA=%s "
            "AND TABLE_NAME=%s AND CONSTRAINT_NAME='PRIMARY' ORDER BY ORDINAL_POSITION",
            (db, table)))
        return TableShape(db, table, columns, key)

    def estimated_rows(self, shape: TableShape) -> int:
        """The server's estimate of the table's rows (``TABLE_ROWS``; 0 when unknown)."""
        rows = self._run("SELECT TABLE_ROWS FROM information_schema.TABLES WHERE "
                         "TABLE_SCHEMA=%s AND TABLE_NAME=%s", (shape.db, shape.table))
        return int(rows[0][0] or 0) if rows else 0

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """A consistent read view over every table read inside it."""
        self._run("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
        try:
            yield
        finally:
            self._run("COMMIT")

    def rows_by_key(self, shape: TableShape, keys: list[tuple[Any, ...]]
                    ) -> Iterator[tuple[Any, ...]]:
        """The rows whose key columns hold one of ``keys`` (values as MySQL gave them, or
        as plain JSON numbers and strings), in batches of :data:`_FETCH`."""
        columns = ", ".join(quote(k) for k in shape.key)
        for start in range(0, len(keys), _FETCH):
            batch = keys[start:start + _FETCH]
            tuples = ", ".join(["(" + ", ".join(["%s"] * len(shape.key)) + ")"] * len(batch))
            sql = f"{shape.select()} WHERE ({columns}) IN ({tuples})"
            yield from self._run(sql, [v for key in batch for v in key])

    def added_values(self, shape: TableShape, tinyint1_as_boolean: bool) -> dict[str, Any]:
        """Each non-key column's default as output JSON (``DEFAULT(col)``): the value rows
        that existed when the column was added got, which a message written before then
        stands for (docs/output-contract.md, "Schema changes"). A column whose default the
        server will not give (none, or an expression MySQL does not evaluate here) is left
        out: such a message cannot be checked. Empty for an empty table."""
        out: dict[str, Any] = {}
        source = f"{quote(shape.db)}.{quote(shape.table)}"
        for column in shape.columns:
            if column.name in shape.key:
                continue
            expression = select_expression(column, f"DEFAULT({quote(column.name)})")
            try:
                convert = converter(column, tinyint1_as_boolean)
            except UnsupportedType:
                continue
            rows = try_query(self._conn, f"SELECT {expression} FROM {source} LIMIT 1")  # noqa: S608
            if rows:
                value = rows[0][0]
                out[column.name] = None if value is None else convert(value)
        return out

    def rows(self, shape: TableShape) -> Iterator[tuple[Any, ...]]:
        """Every row of the table, streamed."""
        yield from stream_rows(self._conn, shape.select(), None, _FETCH, shape.name)

    def streams(self) -> bool:
        """Whether :meth:`stream` can read this connection (PyMySQL's internals it uses)."""
        return hasattr(self._conn, "_rfile") and hasattr(self._conn, "_next_seq_id")

    def stream(self, shape: TableShape, parser_for: ParserFactory) -> None:
        """Every row of the table, its packets fed as the socket's bytes to the parser
        ``parser_for`` makes (:func:`~cdc_ingest.mysql.packets.stream_packets`)."""
        stream_packets(self._conn, shape.select(), None, shape.name, parser_for)

    def raw(self, shape: TableShape) -> AbstractContextManager[RawRows]:
        """Every row of the table as its text-protocol fields, streamed."""
        return raw_rows(self._conn, shape.select(), shape.name)
