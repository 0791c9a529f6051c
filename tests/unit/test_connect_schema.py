"""The Kafka Connect schema block of debezium-json with include-schema, against the
expectations of Flink CDC's own DebeziumJsonSerializationSchemaTest, and the MySQL column ->
Flink CDC type mapping both ways (information_schema, binlog TableMap)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from cdc_ingest.capture.binlog_schema import ColumnSpec, FieldType
from cdc_ingest.capture.typed_layout import (
    binlog_type,
    catalog_type,
    layout_id,
    typed_from_binlog,
    typed_from_catalog,
)
from cdc_ingest.formats.connect_schema import column_schema, schema_block
from cdc_ingest.formats.event_values import iso_timestamps
from cdc_ingest.model.java_numbers import java_double
from cdc_ingest.mysql import Column


def _col(name: str, type_: str, default: str | None = None, comment: str | None = None,
         nullable: bool = True) -> dict[str, Any]:
    return {"name": name, "type": type_, "nullable": nullable, "default": default,
            "comment": comment}


# testSerializeWithSchemaAllDataTypes: each column and the member Flink CDC writes for it
ALL_TYPES = [
    (_col("_boolean", "BOOLEAN", comment="_boolean comment"),
     '{"type":"boolean","optional":true,"doc":"_boolean comment","field":"_boolean"}'),
    (_col("_binary", "BINARY(3)"), '{"type":"bytes","optional":true,"name":'
     '"io.debezium.data.Bits","version":1,"parameters":{"length":"3"},"field":"_binary"}'),
    (_col("_varbinary", "VARBINARY(10)"), '{"type":"bytes","optional":true,"name":'
     '"io.debezium.data.Bits","version":1,"parameters":{"length":"10"},"field":"_varbinary"}'),
    (_col("_bytes", "BYTES"), '{"type":"bytes","optional":true,"name":"io.debezium.data.Bits",'
     '"version":1,"parameters":{"length":"2147483647"},"field":"_bytes"}'),
    (_col("_tinyint", "TINYINT"), '{"type":"int16","optional":true,"field":"_tinyint"}'),
    (_col("_smallint", "SMALLINT"), '{"type":"int16","optional":true,"field":"_smallint"}'),
    (_col("_int", "INT"), '{"type":"int32","optional":true,"field":"_int"}'),
    (_col("_bigint", "BIGINT"), '{"type":"int64","optional":true,"field":"_bigint"}'),
    (_col("_float", "FLOAT"), '{"type":"float","optional":true,"field":"_float"}'),
    (_col("_double", "DOUBLE"), '{"type":"double","optional":true,"field":"_double"}'),
    (_col("_decimal", "DECIMAL(6, 3)"), '{"type":"bytes","optional":true,"name":'
     '"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"3",'
     '"connect.decimal.precision":"6"},"field":"_decimal"}'),
    (_col("_char", "CHAR(5)"), '{"type":"string","optional":true,"field":"_char"}'),
    (_col("_varchar", "VARCHAR(10)"), '{"type":"string","optional":true,"field":"_varchar"}'),
    (_col("_date", "DATE"), '{"type":"int32","optional":true,"name":"io.debezium.time.Date",'
     '"version":1,"field":"_date"}'),
    (_col("_time_6", "TIME(6)"), '{"type":"int64","optional":true,"name":'
     '"io.debezium.time.MicroTime","version":1,"field":"_time_6"}'),
    (_col("_timestamp", "TIMESTAMP(6)"), '{"type":"int64","optional":true,"name":'
     '"io.debezium.time.MicroTimestamp","version":1,"field":"_timestamp"}'),
    (_col("_timestamp_3", "TIMESTAMP(3)"), '{"type":"int64","optional":true,"name":'
     '"io.debezium.time.Timestamp","version":1,"field":"_timestamp_3"}'),
    (_col("_timestamp_ltz_3", "TIMESTAMP_LTZ(3)"), '{"type":"string","optional":true,"name":'
     '"io.debezium.time.ZonedTimestamp","version":1,"field":"_timestamp_ltz_3"}'),
    (_col("pt", "STRING"), '{"type":"string","optional":true,"field":"pt"}'),
]
# testSerializeWithNonStringDefaultValues
DEFAULTS = [
    (_col("_boolean", "BOOLEAN", "true"),
     '{"type":"boolean","optional":true,"default":true,"field":"_boolean"}'),
    (_col("_tinyint", "TINYINT", "1"),
     '{"type":"int16","optional":true,"default":1,"field":"_tinyint"}'),
    (_col("_bigint", "BIGINT", "0"),
     '{"type":"int64","optional":true,"default":0,"field":"_bigint"}'),
    (_col("_float", "FLOAT", "1.5"),
     '{"type":"float","optional":true,"default":1.5,"field":"_float"}'),
    (_col("_double", "DOUBLE", "3.14"),
     '{"type":"double","optional":true,"default":3.14,"field":"_double"}'),
    (_col("_decimal", "DECIMAL(10, 2)", "99.99"), '{"type":"bytes","optional":true,"name":'
     '"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2",'
     '"connect.decimal.precision":"10"},"default":"Jw8=","field":"_decimal"}'),
    (_col("_string", "STRING", "unknown"),
     '{"type":"string","optional":true,"default":"unknown","field":"_string"}'),
    (_col("_date", "DATE", "100"), '{"type":"int32","optional":true,"name":'
     '"io.debezium.time.Date","version":1,"default":100,"field":"_date"}'),
    (_col("_timestamp", "TIMESTAMP(6)", "1672531200000000"), '{"type":"int64","optional":'
     'true,"name":"io.debezium.time.MicroTimestamp","version":1,"default":1672531200000000,'
     '"field":"_timestamp"}'),
    (_col("_timestamp_ltz", "TIMESTAMP_LTZ(6)", "2023-01-01T00:00:00Z"), '{"type":"string",'
     '"optional":true,"name":"io.debezium.time.ZonedTimestamp","version":1,"default":'
     '"2023-01-01T00:00:00Z","field":"_timestamp_ltz"}'),
    (_col("_binary", "BINARY(3)", "bin"), '{"type":"bytes","optional":true,"name":'
     '"io.debezium.data.Bits","version":1,"parameters":{"length":"3"},"default":"Ymlu",'
     '"field":"_binary"}'),
]


@pytest.mark.parametrize(("column", "expected"), ALL_TYPES + DEFAULTS,
                         ids=[c["name"] + (":d" if c["default"] else "")
                              for c, _ in ALL_TYPES + DEFAULTS])
def test_each_column_is_the_member_flink_cdc_writes(column: dict[str, Any],
                                                    expected: str) -> None:
    assert orjson.dumps(column_schema(column)) == expected.encode()


def test_defaults_flink_cdc_cannot_convert_are_left_out_as_it_does() -> None:
    # convertDefaultValue parses DATE/TIME/TIMESTAMP defaults as numbers: MySQL's spelling of
    # a date or CURRENT_TIMESTAMP fails there, and Flink CDC leaves the default out
    for column in (_col("d", "DATE", "2024-01-01"), _col("t", "TIMESTAMP(0)",
                                                          "CURRENT_TIMESTAMP"),
                   _col("i", "INT", "abc"), _col("s", "SMALLINT", "40000")):
        assert "default" not in column_schema(column)
    # BOOLEAN is Boolean.parseBoolean: anything but "true" (any case) is false
    assert column_schema(_col("b", "BOOLEAN", "1"))["default"] is False
    assert orjson.dumps(column_schema(_col("b", "BOOLEAN", "TRUE"))["default"]) == b"true"
    # a FLOAT default goes through a 32-bit float; the DECIMAL default is rounded HALF_UP
    assert orjson.dumps(column_schema(_col("f", "FLOAT", "0.1"))["default"]) == b"0.1"
    assert column_schema(_col("d", "DECIMAL(5, 1)", "-0.05"))["default"] == "/w=="  # -1
    assert column_schema(_col("n", "INT", "-7", nullable=False))["optional"] is False


def test_the_block_has_before_and_after_only_and_jackson_escapes() -> None:
    block = schema_block([_col("id", "INT", nullable=False),
                          _col("s", "ARRAY<STRING>", comment="emoji 🔑")])
    assert block == (
        b'{"type":"struct","fields":[{"type":"struct","fields":[{"type":"int32","optional":'
        b'false,"field":"id"},{"type":"array","items":{"type":"string","optional":false},'
        b'"optional":true,"doc":"emoji \\uD83D\\uDD11","field":"s"}],"optional":true,'
        b'"field":"before"},{"type":"struct","fields":[{"type":"int32","optional":false,'
        b'"field":"id"},{"type":"array","items":{"type":"string","optional":false},'
        b'"optional":true,"doc":"emoji \\uD83D\\uDD11","field":"s"}],"optional":true,'
        b'"field":"after"}],"optional":false}')


def test_java_double() -> None:
    assert [java_double(v) for v in (1.0, 3.14, 1e10, 1.5e-5, 1e-3, 9999999.0, 1e7, -0.0)] \
        == ["1.0", "3.14", "1.0E10", "1.5E-5", "0.001", "9999999.0", "1.0E7", "-0.0"]


def _catalog(name: str, data_type: str, column_type: str, fsp: int = 0,
             charset: str | None = None) -> Column:
    return Column(name, data_type, column_type, fsp=fsp, charset=charset)


CATALOG = [  # MySqlTypeUtils' mapping (cdc-ingest's booleans aside)
    (("tinyint", "tinyint(4)"), "TINYINT"), (("tinyint", "tinyint unsigned"), "SMALLINT"),
    (("tinyint", "tinyint(1)"), "BOOLEAN"), (("smallint", "smallint unsigned"), "INT"),
    (("mediumint", "mediumint"), "INT"), (("int", "int unsigned"), "BIGINT"),
    (("int", "int(11)"), "INT"), (("bigint", "bigint unsigned"), "DECIMAL(20, 0)"),
    (("year", "year(4)"), "INT"), (("float", "float"), "FLOAT"),
    (("float", "float(7,4)"), "DOUBLE"), (("double", "double"), "DOUBLE"),
    (("decimal", "decimal(10,2)"), "DECIMAL(10, 2)"), (("decimal", "decimal(65,30)"), "STRING"),
    (("bit", "bit(1)"), "BOOLEAN"), (("bit", "bit(10)"), "BINARY(2)"),
    (("char", "char(3)"), "CHAR(3)"), (("varchar", "varchar(20)"), "VARCHAR(20)"),
    (("text", "text"), "STRING"), (("json", "json"), "STRING"),
    (("enum", "enum('a','b')"), "STRING"), (("set", "set('a','b')"), "ARRAY<STRING>"),
    (("binary", "binary(4)"), "BINARY(4)"), (("varbinary", "varbinary(9)"), "VARBINARY(9)"),
    (("blob", "blob"), "BYTES"), (("point", "point"), "STRING"), (("date", "date"), "DATE"),
]


@pytest.mark.parametrize(("spelled", "expected"), CATALOG, ids=[s[1] for s, _ in CATALOG])
def test_catalog_types(spelled: tuple[str, str], expected: str) -> None:
    assert catalog_type(_catalog("c", *spelled), True) == expected


def test_time_types_and_binlog_types() -> None:
    assert catalog_type(_catalog("c", "datetime", "datetime(3)", 3), True) == "TIMESTAMP(3)"
    assert catalog_type(_catalog("c", "timestamp", "timestamp", 0), True) == "TIMESTAMP_LTZ(0)"
    assert catalog_type(_catalog("c", "time", "time(6)", 6), True) == "TIME(6)"
    assert catalog_type(_catalog("c", "tinyint", "tinyint(1)"), False) == "TINYINT"
    spec = ColumnSpec
    assert binlog_type(spec("c", FieldType.LONG, unsigned=True)) == "BIGINT"
    assert binlog_type(spec("c", FieldType.LONGLONG, unsigned=True)) == "DECIMAL(20, 0)"
    assert binlog_type(spec("c", FieldType.NEWDECIMAL, precision=8, scale=3)) == "DECIMAL(8, 3)"
    assert binlog_type(spec("c", FieldType.DATETIME2, fsp=3)) == "TIMESTAMP(3)"
    assert binlog_type(spec("c", FieldType.TIMESTAMP2, fsp=6)) == "TIMESTAMP_LTZ(6)"
    assert binlog_type(spec("c", FieldType.STRING, length=4, encoding="binary")) == "BINARY(4)"
    assert binlog_type(spec("c", FieldType.BLOB, length=2, encoding="binary")) == "BYTES"
    assert binlog_type(spec("c", FieldType.BLOB, length=2, encoding="utf8")) == "STRING"
    assert binlog_type(spec("c", FieldType.TINY, as_boolean=True)) == "BOOLEAN"


def test_binlog_layouts_take_the_catalogs_description_where_it_still_fits() -> None:
    catalog = [Column("id", "int", "int", nullable=False),
               Column("name", "varchar", "varchar(9)", default="x", comment="who"),
               Column("n", "varchar", "varchar(3)")]  # retyped since: INT in the binlog
    specs = (ColumnSpec("id", FieldType.LONG), ColumnSpec("name", FieldType.VARCHAR,
                                                          encoding="utf8"),
             ColumnSpec("n", FieldType.LONG), ColumnSpec("gone", FieldType.DOUBLE))
    layout = [("id", "int"), ("name", "string"), ("n", "int"), ("gone", "double")]
    typed = typed_from_binlog(layout, specs, catalog, True)
    assert typed == [
        {"name": "id", "type": "INT", "nullable": False, "default": None, "comment": None},
        {"name": "name", "type": "VARCHAR(9)", "nullable": True, "default": "x",
         "comment": "who"},
        {"name": "n", "type": "INT", "nullable": True, "default": None, "comment": None},
        {"name": "gone", "type": "DOUBLE", "nullable": True, "default": None, "comment": None},
    ]
    assert typed_from_catalog(catalog[:1], True) == typed[:1]
    assert layout_id("d", "t", typed) == layout_id("d", "t", [dict(c) for c in typed])
    assert layout_id("d", "t", typed) != layout_id("d", "t2", typed)
    assert len(layout_id("d", "t", typed)) == 16


def test_catalog_rows_read_defaults_as_the_ddl_spells_them() -> None:
    row = ("c", "varchar", "varchar(9)", None, None, "utf8mb4", 36)
    assert Column.from_row((*row, "NO", "it's", "")).default == "it's"
    mariadb = Column.from_row((*row, "YES", "'it''s'", "a note"), mariadb=True)
    assert (mariadb.default, mariadb.nullable, mariadb.comment) == ("it's", True, "a note")
    assert Column.from_row((*row, "YES", "NULL", ""), mariadb=True).default is None
    assert Column.from_row((*row, "YES", "current_timestamp()", ""),
                           mariadb=True).default == "current_timestamp()"
    assert Column.from_row(row).nullable  # the 7-column form verify reads


def test_iso_timestamps_change_only_the_named_timestamp_columns() -> None:
    row = b'{"at":"2024-01-31 12:34:56.5","ltz":"2024-01-31 12:34:56Z","s":"a b","n":null}'
    assert iso_timestamps(row, frozenset({b"at", b"ltz", b"n"})) == (
        b'{"at":"2024-01-31T12:34:56.5","ltz":"2024-01-31T12:34:56Z","s":"a b","n":null}')
    assert iso_timestamps(row, frozenset({b"x"})) is row
