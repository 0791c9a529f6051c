"""`key.format` / `value.format: avro-confluent` read back by confluent-kafka's deserializer
and `verify` (test_avro_sink.py's checks) and by real Apache Flink: the all-types
table (test_capture_types.fill_all_types) written by `cdc-ingest start` with Avro keys and
values and a real Schema Registry (Apicurio, Confluent API), then read by PyFlink 2.0.2's
``upsert-kafka`` connector with ``key.format = avro-confluent`` and ``value.format =
avro-confluent`` (flink_env.read_back: the writer schema fetched by id, resolved against
the reader schema Flink derives from the table below), and compared, value by value, with
what the server says each value is (server_oracle, the server's own text, plus the
hand-written values), turned into the value Flink gives by this test's own rules.

Each column is declared with the Flink type that reads its documented Avro type
(docs/output-contract.md, "avro-confluent"; formats/avro_schemas.py): Flink CDC's type of the
column (MySqlTypeUtils: TINYINT UNSIGNED -> SMALLINT, INT UNSIGNED -> BIGINT, BIGINT
UNSIGNED -> DECIMAL(20, 0), DECIMAL(p <= 38, s) -> DECIMAL(p, s), BIT(1) and TINYINT(1) ->
BOOLEAN, SET -> ARRAY<STRING>, VECTOR -> ARRAY<FLOAT>, YEAR -> INT, text kinds -> STRING,
binary kinds -> BYTES), except where Flink 2.0 cannot read the value as that type:

- DECIMAL(65, 30): Flink CDC's STRING (beyond Flink's 38 digits); the sink writes its exact
  text, read as STRING and compared with the server's text.
- TIMESTAMP(0..3) (Flink CDC's TIMESTAMP_LTZ): Flink 2.0's Avro format cannot derive a
  schema for TIMESTAMP_LTZ (``TIMESTAMP_LTZ(3)`` in the DDL: "Unsupported to derive Schema
  for type: TIMESTAMP_LTZ(3)"; the avro-confluent format 2.0.0 has no
  ``timestamp_mapping.legacy`` option), so it is declared TIMESTAMP(3); the
  ``timestamp-millis`` value reads as the UTC wall clock, compared with the server's UTC
  text.
- DATETIME(6), TIMESTAMP(6): the sink writes ``long`` ``timestamp-micros`` (the exact
  value). Flink 2.0 cannot derive TIMESTAMP(6) for Avro ("Avro does not support TIMESTAMP
  type with precision: 6, it only supports precision less than 3.") and, declared
  TIMESTAMP(3), reads the micros as millis (FLINK-39036: 2000-01-01 00:00:00.000001 comes
  out in the year 31969), so they are declared BIGINT and compared with the microseconds
  since 1970-01-01 00:00:00 (UTC for TIMESTAMP) of the server's text: exact, but not a
  Flink timestamp.
- TIME(0..6): MySQL's TIME is a signed duration up to 838:59:59.999999, beyond Avro's
  one-day time types: the sink writes a plain ``long`` of microseconds, which Flink's TIME
  (an ``int`` ``time-millis`` reader) cannot resolve ("Found long, expecting union" at the
  first record); declared BIGINT and compared with the server's text in microseconds.
- CHAR(n), VARCHAR(n), BINARY(n), VARBINARY(n): declared STRING / BYTES (the same Avro
  ``string`` / ``bytes``).

FLOAT and VECTOR elements are read as Flink's FLOAT exactly, but PyFlink hands a FLOAT to
Python through Java's ``Float.toString`` text (FLT_MAX arrives as 3.4028235e38): the test
rounds it back to the 32-bit float it stands for, which is exact (see ``_flink_value``).

The test also checks that each column's writer type in the registry is the one its declared
Flink type reads, the ``tableName`` header of every row Flink emits, and that the deleted key
(id 2, inserted then deleted) is absent from what Flink folds.
"""

from __future__ import annotations

import datetime
import json
import re
import struct
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from cdc_ingest.maven import MavenError
from tests.integration import flink_env, server_oracle
from tests.integration.flavors import MYSQL, Source
from tests.integration.test_avro_sink import (
    assert_read_back_by_confluent_kafka_and_verify,
    expected_avro,
    registry_get,
    run_all_types,
)

UTC = datetime.UTC
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=UTC)
_SIZE = re.compile(r"\((\d+)(?:,(\d+))?\)")

_TEXT = ("char", "varchar", "tinytext", "text", "mediumtext", "longtext", "json", "enum",
         "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring",
         "multipolygon")
_BYTES = ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob")
_MILLIS = {"type": "long", "logicalType": "timestamp-millis"}
_MICROS = {"type": "long", "logicalType": "timestamp-micros"}


def _f32(value: float) -> float:
    """``value`` rounded to the nearest 32-bit float."""
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


def _fsp(column: server_oracle.Column) -> int:
    match = _SIZE.search(column.column_type)
    return int(match.group(1)) if match else 0


def flink_column(column: server_oracle.Column) -> tuple[str, Any]:
    """The Flink SQL type this test declares for a column, and the (not null) Avro type the
    sink must have written for it (the one that Flink type reads), by the rules of the
    module docstring. A column type without a rule fails the test."""
    kind, spelled = column.data_type, column.column_type
    unsigned = "unsigned" in spelled
    if column.name == "id":  # the key: NOT NULL (a primary key column)
        return "INT NOT NULL", "int"
    if spelled.startswith("tinyint(1)") or (kind == "bit" and column.precision == 1):
        return "BOOLEAN", "boolean"
    integers = {"tinyint": "SMALLINT" if unsigned else "TINYINT",
                "smallint": "INT" if unsigned else "SMALLINT", "mediumint": "INT",
                "int": "BIGINT" if unsigned else "INT", "year": "INT"}
    if kind in integers:
        return integers[kind], "long" if integers[kind] == "BIGINT" else "int"
    if kind == "bigint":
        if unsigned:
            return "DECIMAL(20, 0)", {"type": "bytes", "logicalType": "decimal",
                                      "precision": 20, "scale": 0}
        return "BIGINT", "long"
    if kind == "decimal":
        match = _SIZE.search(spelled)
        assert match, spelled
        precision, scale = int(match.group(1)), int(match.group(2) or 0)
        if precision > 38:  # Flink CDC's STRING: the sink writes the exact text
            return "STRING", "string"
        return f"DECIMAL({precision}, {scale})", {
            "type": "bytes", "logicalType": "decimal", "precision": precision, "scale": scale}
    if kind == "float":
        return "FLOAT", "float"
    if kind == "double":
        return "DOUBLE", "double"
    if kind == "bit" or kind in _BYTES:
        return "BYTES", "bytes"
    if kind == "date":
        return "DATE", {"type": "int", "logicalType": "date"}
    if kind == "time":  # a signed duration beyond one day: a long of microseconds
        return "BIGINT", "long"
    if kind in ("datetime", "timestamp"):
        if _fsp(column) <= 3:
            # TIMESTAMP is Flink CDC's TIMESTAMP_LTZ, which Flink 2.0's Avro format cannot
            # derive: declared TIMESTAMP(3), the UTC wall clock of the epoch millis
            return "TIMESTAMP(3)", _MILLIS
        # Flink 2.0 cannot derive TIMESTAMP(6) for Avro and would read these micros as
        # millis (FLINK-39036): the exact long, microseconds since the epoch
        return "BIGINT", _MICROS
    if kind in _TEXT:
        return "STRING", "string"
    if kind == "set":
        return "ARRAY<STRING>", {"type": "array", "items": ["null", "string"]}
    if kind == "vector":
        return "ARRAY<FLOAT>", {"type": "array", "items": ["null", "float"]}
    raise AssertionError(f"no Flink type rule for {column.name} {spelled}")


def flink_expected(column: server_oracle.Column, value: Any) -> Any:
    """The value the Flink read-back gives (flink_env.read_back's Python values) for a
    column whose canonical value (server_oracle) is ``value``: the Avro value
    (test_avro_sink.expected_avro) as the declared Flink type reads it."""
    avro = expected_avro(column, value)
    if avro is None:
        return None
    if column.data_type in ("datetime", "timestamp"):
        assert isinstance(avro, datetime.datetime)
        if _fsp(column) <= 3:
            # TIMESTAMP(3): read_back gives Flink's text, parsed here (the UTC wall clock)
            return avro.astimezone(UTC).replace(tzinfo=None)
        return (avro - _EPOCH) // datetime.timedelta(microseconds=1)  # BIGINT: micros
    return avro  # the rest reads as the same Python value (time: a long of micros)


def _flink_value(column: server_oracle.Column, got: Any) -> Any:
    """Flink's value as compared: TIMESTAMP(3) text (``2024-01-31 12:00:00.123``) parsed,
    checked to carry Flink's three fraction digits; FLOAT (and VECTOR elements) rounded to
    the 32-bit float they stand for.

    PyFlink hands a FLOAT to Python as Java's ``Float.toString`` text parsed as a Python
    (64-bit) float (``pickled_bytes_to_python_converter``: ``ast.literal_eval``), so FLT_MAX
    arrives as 3.4028235e38, not 3.4028234663852886e38. That text reads back as exactly the
    32-bit float Flink holds (Java guarantees it), so rounding it to 32 bits recovers Flink's
    value exactly: a float Flink read wrong would still differ."""
    if got is None:
        return None
    if column.data_type in ("datetime", "timestamp") and _fsp(column) <= 3:
        assert isinstance(got, str) and re.fullmatch(
            r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}", got), got
        return datetime.datetime.fromisoformat(got)
    if column.data_type == "float":
        assert isinstance(got, float), got
        return _f32(got)
    if column.data_type == "vector":
        assert isinstance(got, list), got
        return [_f32(x) if isinstance(x, float) else x for x in got]
    return got


def _same(want: Any, got: Any) -> bool:
    """Equal value and Python type; floats bit for bit; decimals with the same scale."""
    if isinstance(want, list):
        return (isinstance(got, list) and len(want) == len(got)
                and all(_same(w, g) for w, g in zip(want, got, strict=True)))
    if isinstance(want, float) and isinstance(got, float):
        return struct.pack("<d", want) == struct.pack("<d", got)
    if isinstance(want, Decimal):
        return (isinstance(got, Decimal) and want == got
                and want.as_tuple().exponent == got.as_tuple().exponent)
    return type(want) is type(got) and want == got


def _writer_fields(registry: Any, subject: str) -> dict[str, Any]:
    """Each field's not-null Avro type in the subject's latest schema."""
    schema = json.loads(registry_get(registry, f"/subjects/{subject}/versions/latest")["schema"])
    out = {}
    for field in schema["fields"]:
        type_ = field["type"]
        if isinstance(type_, list):
            assert type_[0] == "null" and len(type_) == 2 and field["default"] is None, field
            type_ = type_[1]
        out[field["name"]] = type_
    return out


def test_all_types_in_avro_read_back_by_confluent_kafka_and_flink_equal_the_server(
        source: Source, kafka: Any, registry: Any, fresh_source_db: str,
        tmp_path: Path) -> None:
    db = fresh_source_db
    # ids 1, 2, 3, 4 inserted, 3 updated, 2 deleted (a tombstone)
    topic, config = run_all_types(source, kafka, registry, db, tmp_path, "avro-types")
    # confluent-kafka's deserializer and verify first (test_avro_sink.py), then Flink
    assert_read_back_by_confluent_kafka_and_verify(source, kafka, registry, db, topic, config)

    server = server_oracle.read_server(source.admin, db)
    declared = {c.name: flink_column(c) for c in server.columns}

    # the sink wrote each column as the Avro type its declared Flink type reads
    assert _writer_fields(registry, f"{topic}-key") == {"id": "int"}
    writer = _writer_fields(registry, f"{topic}-value")
    assert list(writer) == [c.name for c in server.columns]
    wrong_types = [f"{name}: written {writer[name]!r}, the Flink type {flink_type} reads "
                   f"{avro!r}" for name, (flink_type, avro) in declared.items()
                   if writer[name] != avro]
    assert not wrong_types, "\n".join(wrong_types)

    try:
        result = flink_env.read_back(
            kafka.bootstrap, topic, [(n, t) for n, (t, _) in declared.items()], ["id"],
            tmp_path, key_value_format="avro-confluent", registry_url=registry.url)
    except (flink_env.FlinkEnvError, MavenError) as exc:
        pytest.fail(f"cannot provision PyFlink for the read-back (scripts/setup.sh makes it): "
                    f"{exc}", pytrace=False)

    # every row Flink emitted carries the sink's tableName header
    assert result.summary["table_names"] == ["all_types"], result.summary
    assert all(row["tableName"] == "all_types" for row in result.rows)
    # inserts, the update of id 3 and the deletion of id 2 went through Flink's changelog
    assert {"+I", "+U", "-D"} <= set(result.summary["kinds"]), result.summary

    flink = {row["values"]["id"]: row["values"] for row in result.rows}
    assert 2 not in flink, "the deleted key 2 is live in Flink's table"
    assert sorted(flink) == sorted(server.expected), "keys differ from the server's"
    columns = {c.name: c for c in server.columns}
    wrong = []
    for key, want_row in server.expected.items():
        got_row = flink[key]
        assert list(got_row) == list(declared)
        for name, column in columns.items():
            want = flink_expected(column, want_row[name])
            got = _flink_value(column, got_row[name])
            if not _same(want, got):
                wrong.append(f"id {key} {name} ({column.column_type} as "
                             f"{declared[name][0]}): server {want!r} | Flink {got!r}")
        # the values whose server text needs reading, written by hand
        for name, text in server_oracle.hand_written(source.facts is MYSQL).get(key, {}).items():
            column = columns[name]
            want = flink_expected(column, server_oracle.observe(
                name, server_oracle.parse(text)))
            got = _flink_value(column, got_row[name])
            if not _same(want, got):
                wrong.append(f"id {key} {name}: hand-written {want!r} | Flink {got!r}")
    assert not wrong, "\n".join(wrong)
