"""What capture knows about a captured table: its columns as the binlog describes them.

Built from a binlog TableMap event (plus the tinyint(1) widths, which only the catalog knows),
compiled once into a row decoder and cached by :attr:`TableSchema.signature`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


class FieldType:
    """MySQL binlog column type codes (``enum_field_types``)."""

    DECIMAL = 0
    TINY = 1
    SHORT = 2
    LONG = 3
    FLOAT = 4
    DOUBLE = 5
    NULL = 6
    TIMESTAMP = 7
    LONGLONG = 8
    INT24 = 9
    DATE = 10
    TIME = 11
    DATETIME = 12
    YEAR = 13
    NEWDATE = 14
    VARCHAR = 15
    BIT = 16
    TIMESTAMP2 = 17
    DATETIME2 = 18
    TIME2 = 19
    VECTOR = 242  # MySQL 9.0+: float32 values, stored like a BLOB
    JSON = 245
    NEWDECIMAL = 246
    ENUM = 247
    SET = 248
    TINY_BLOB = 249
    MEDIUM_BLOB = 250
    LONG_BLOB = 251
    BLOB = 252
    VAR_STRING = 253
    STRING = 254
    GEOMETRY = 255


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """One column as the binlog encodes it.

    ``length`` is the type's metadata that sizes the value: max byte length for
    CHAR/VARCHAR/BINARY, length-prefix size for BLOB/TEXT/JSON/GEOMETRY, byte size for
    ENUM/SET. ``encoding`` is the Python codec of a text column, ``"binary"`` for binary data.
    """

    name: str
    type: int
    unsigned: bool = False
    length: int = 0
    precision: int = 0
    scale: int = 0
    fsp: int = 0
    bits: int = 0
    encoding: str | None = None
    labels: tuple[str, ...] = ()
    as_boolean: bool = False
    # A type the binlog writes as another and only the catalog names: MariaDB's UUID / INET4 /
    # INET6, which the binlog holds as BINARY(16 / 4 / 16) (capture/mariadb_types.py)
    kind: str = ""


@dataclass(frozen=True, slots=True)
class TableSchema:
    db: str
    table: str
    columns: tuple[ColumnSpec, ...]
    primary_key: tuple[str, ...]
    signature: tuple[object, ...] = field(default=(), compare=False)
    # Column names, computed once: the hot path zips them with every row.
    names: tuple[str, ...] = field(default=(), compare=False, init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", tuple(c.name for c in self.columns))


# MySQL's binary JSON -> its JSON text (the binlog reader supplies it)
JsonText = Callable[[bytes], str]

LENGTH_PREFIXED = (
    FieldType.BLOB,
    FieldType.TINY_BLOB,
    FieldType.MEDIUM_BLOB,
    FieldType.LONG_BLOB,
    FieldType.GEOMETRY,
    FieldType.VECTOR,
    FieldType.JSON,
)


class UnsupportedColumn(ValueError):
    """A column the decoder cannot represent exactly; ``column_name`` names it."""

    def __init__(self, message: str, column_name: str = "?") -> None:
        super().__init__(message)
        self.column_name = column_name
