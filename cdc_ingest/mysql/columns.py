"""A column as ``information_schema.COLUMNS`` describes it: what verify needs to convert it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_LABEL = re.compile(r"'((?:[^']|'')*)'")
_BIT_WIDTH = re.compile(r"bit\((\d+)\)")

COLUMNS_QUERY = (
    "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, DATETIME_PRECISION, NUMERIC_SCALE, "
    "CHARACTER_SET_NAME, CHARACTER_OCTET_LENGTH, IS_NULLABLE, COLUMN_DEFAULT, COLUMN_COMMENT "
    "FROM information_schema.COLUMNS "
    "WHERE TABLE_SCHEMA=%s AND TABLE_NAME=%s ORDER BY ORDINAL_POSITION"
)


# Every DATA_TYPE information_schema.COLUMNS shows on MySQL 8.0+/9 and MariaDB 10.5+/11.8
# (lower case): what capture, the snapshot and verify know how to read. A column of any other
# type stops capture of its table before anything of it is written (unknown_type_error).
KNOWN_TYPES = frozenset({
    "tinyint", "smallint", "mediumint", "int", "integer", "bigint", "decimal", "numeric",
    "float", "double", "real", "double precision", "bit", "date", "time", "datetime",
    "timestamp", "year", "char", "varchar", "binary", "varbinary", "tinytext", "text",
    "mediumtext", "longtext", "tinyblob", "blob", "mediumblob", "longblob", "enum", "set",
    "json", "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring",
    "multipolygon", "geometrycollection", "geomcollection", "vector",
    "uuid", "inet4", "inet6",  # MariaDB's data-type plugins (10.7+, 10.10+, 10.5+)
})
# Types the binlog writes as another type, so that only the catalog tells them apart:
# MariaDB's UUID, INET4, INET6 (as BINARY(16 / 4 / 16)) and VECTOR (as VARBINARY(4n)).
CATALOG_KINDS = frozenset({"uuid", "inet4", "inet6", "vector"})


@dataclass(frozen=True)
class Column:
    """``data_type`` is lower case (``decimal``); ``column_type`` as the server spells it
    (``enum('A','b')``: labels keep their case); ``fsp`` is the fractional-second digits;
    ``octet_length`` the byte width of BINARY(n); ``default`` the default as the DDL spells
    it without quotes (``flink``, ``0``, ``CURRENT_TIMESTAMP``; None for none or NULL), what
    Debezium's DDL parser and so Flink CDC's schemas hold; ``comment`` None when empty."""

    name: str
    data_type: str
    column_type: str
    fsp: int = 0
    scale: int = 0
    charset: str | None = None
    octet_length: int | None = None
    nullable: bool = True
    default: str | None = None
    comment: str | None = None

    @classmethod
    def from_row(cls, row: tuple[Any, ...], mariadb: bool = False) -> Column:
        """One row of :data:`COLUMNS_QUERY` (MariaDB quotes a literal default and spells no
        default ``NULL``; MySQL gives the bare value and SQL NULL)."""
        name, data_type, column_type, fsp, scale, charset, octets = row[:7]
        nullable, default, comment = (*row[7:10], "YES", None, None)[:3]
        text = as_text(default) if default is not None else None
        if mariadb and text is not None:
            if text == "NULL":
                text = None
            elif len(text) >= 2 and text[0] == text[-1] == "'":
                text = text[1:-1].replace("''", "'").replace("\\\\", "\\")
        return cls(
            name=as_text(name),
            data_type=as_text(data_type).lower(),
            column_type=as_text(column_type),
            fsp=int(fsp or 0),
            scale=int(scale or 0),
            charset=as_text(charset) if charset is not None else None,
            octet_length=int(octets) if octets is not None else None,
            nullable=as_text(nullable).upper() != "NO",
            default=text,
            comment=as_text(comment) or None if comment is not None else None,
        )

    @property
    def labels(self) -> tuple[str, ...]:
        """ENUM / SET members in definition order (``set('x','it''s')`` -> x, it's)."""
        start = self.column_type.find("(")
        body = self.column_type[start:] if start >= 0 else ""
        return tuple(m.group(1).replace("''", "'") for m in _LABEL.finditer(body))

    @property
    def bits(self) -> int:
        """The n of BIT(n)."""
        match = _BIT_WIDTH.match(self.column_type.lower())
        return int(match.group(1)) if match else 1

    @property
    def is_tinyint1(self) -> bool:
        return self.data_type == "tinyint" and self.column_type.lower().startswith("tinyint(1)")


def as_text(value: Any) -> str:
    """A catalog value as text (some servers send information_schema names as bytes)."""
    return value.decode() if isinstance(value, bytes) else str(value)
