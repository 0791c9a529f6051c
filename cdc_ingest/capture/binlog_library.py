"""What python-mysql-replication 1.0 does not know of MySQL 8.3+/9.x, taught in its own
classes, once per process (:func:`teach_the_library`):

* **VECTOR columns** (MySQL 9.0+): the library misreads the TableMap of any table with a
  VECTOR column, captured or not: it reads no metadata for the column (VECTOR has one byte,
  its length prefix size, as a BLOB), and it stops at optional metadata types it does not know
  (VECTOR's dimensionality, 13): "0 (or 13) is not a valid MetadataFieldType". And MySQL
  counts a VECTOR column among the character columns whose charsets the optional metadata
  lists (it has one: binary), while the library does not: every text column after a VECTOR
  took the charset of the character column before it (the first one VECTOR's binary, so its
  text came out as base64). The library is taught that VECTOR has a charset entry on MySQL.
* **status variables of a query event it does not know** (MariaDB 11's
  ``character_set_collations``, code 131, written with any DDL that names a character set
  without a collation, in any database): the library raised ``StatusVariableMismatch`` and
  capture stopped on the statement, again at every restart. It is taught to do what MariaDB's
  own parser does with a code it does not know: skip the rest of the status variables (they
  are written in growing order of code, and capture reads none of them); the schema and the
  statement that follow them are read as before.
* **tagged GTID sets** (MySQL 8.3+): the library encodes the GTID set it sends in
  COM_BINLOG_DUMP_GTID with its own ``GtidSet``, which cannot parse ``uuid:tag:1-3``. The dump
  request uses :func:`cdc_ingest.mysql.encode_gtid_set` instead (MySQL's tagged format when
  the set has a tag, the classic one otherwise).
"""

from __future__ import annotations

from typing import Any

import pymysqlreplication.binlogstream as _binlogstream
from pymysqlreplication.column import Column as _LibraryColumn
from pymysqlreplication.event import QueryEvent
from pymysqlreplication.exceptions import StatusVariableMismatch
from pymysqlreplication.row_event import TableMapEvent

from cdc_ingest.capture.binlog_errors import drop_unknown_metadata
from cdc_ingest.capture.binlog_schema import FieldType
from cdc_ingest.mysql.gtid_wire import encode_gtid_set


class _DumpGtidSet:
    """Stands in for the library's ``GtidSet`` where it builds COM_BINLOG_DUMP_GTID."""

    def __init__(self, gtid_set: str) -> None:
        self._encoded = encode_gtid_set(str(gtid_set or ""))

    @property
    def encoded_length(self) -> int:
        return len(self._encoded)

    def encoded(self) -> bytes:
        return self._encoded


def _teach_vector() -> None:
    parse = _LibraryColumn._Column__parse_column_definition

    def parse_with_vector(self: Any, column_type: int, packet: Any) -> None:
        parse(self, column_type, packet)
        if column_type == FieldType.VECTOR:
            self.length_size = packet.read_uint8()

    optional = TableMapEvent._get_optional_meta_data

    def known_optional_metadata(self: Any) -> Any:
        drop_unknown_metadata(self.packet.packet)
        return optional(self)

    character = TableMapEvent._is_character_column

    def character_with_vector(column_type: int, dbms: str = "mysql") -> bool:
        if column_type == FieldType.VECTOR and dbms == "mysql":
            return True
        return bool(character(column_type, dbms=dbms))

    _LibraryColumn._Column__parse_column_definition = parse_with_vector
    TableMapEvent._get_optional_meta_data = known_optional_metadata
    TableMapEvent._is_character_column = staticmethod(character_with_vector)


def _teach_status_variables() -> None:
    read_value = QueryEvent._read_status_vars_value_for_key

    def read_or_skip_the_rest(self: Any, key: int) -> None:
        if not hasattr(self, "_cdc_vars_end"):  # the first key's byte has just been read
            self._cdc_vars_end = self.packet.read_bytes - 1 + self.status_vars_length
        try:
            read_value(self, key)
        except StatusVariableMismatch:
            self.packet.read(self._cdc_vars_end - self.packet.read_bytes)

    QueryEvent._read_status_vars_value_for_key = read_or_skip_the_rest


_taught: list[bool] = []


def teach_the_library() -> None:
    if _taught:
        return
    _taught.append(True)
    _teach_vector()
    _teach_status_variables()
    _binlogstream.GtidSet = _DumpGtidSet  # only the dump request uses it in that module
