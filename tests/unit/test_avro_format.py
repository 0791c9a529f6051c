"""The avro-confluent format's schemas and values (formats/avro_schemas.py): Flink's schema
derivation, and the changelog's JSON form to Avro and back, value for value."""

from __future__ import annotations

import datetime
import io
import json
from decimal import Decimal

import fastavro
import pytest

from cdc_ingest.formats.avro_schemas import (
    AvroTypeError,
    AvroValueError,
    RowCodec,
    decode_json,
    frame,
    record_schema,
    schema_text,
    unframe,
)
from cdc_ingest.registry.avro_subjects import meaning_changes

COLUMNS = [
    ("id", "INT", False), ("b", "BOOLEAN", True), ("ti", "TINYINT", True),
    ("big", "BIGINT", True), ("ubig", "DECIMAL(20, 0)", True), ("dec", "DECIMAL(10, 2)", True),
    ("huge", "STRING", True), ("f", "FLOAT", True), ("d", "DOUBLE", True),
    ("bits", "BINARY(2)", True), ("blob", "BYTES", True), ("s", "VARCHAR(10)", True),
    ("day", "DATE", True), ("t0", "TIME(0)", True), ("t6", "TIME(6)", True),
    ("dt3", "TIMESTAMP(3)", True), ("dt6", "TIMESTAMP(6)", True),
    ("ts0", "TIMESTAMP_LTZ(0)", True), ("ts6", "TIMESTAMP_LTZ(6)", True),
    ("tags", "ARRAY<STRING>", True), ("vec", "ARRAY<FLOAT>", True),
]
ROW = (b'{"id":7,"b":true,"ti":-128,"big":-9223372036854775808,"ubig":18446744073709551615,'
       b'"dec":-0.50,"huge":12345678901234567890123456789012345678901.000000000000000000000001,'
       b'"f":1.1,"d":0.1,"bits":"AQI=","blob":"","s":"caf\xc3\xa9 \xf0\x9f\x94\x91",'
       b'"day":"1000-01-01","t0":"23:59:59","t6":"00:00:00.000001",'
       b'"dt3":"1969-12-31 23:59:59.999","dt6":"9999-12-31 23:59:59.999999",'
       b'"ts0":"2038-01-19 03:14:08Z","ts6":"1970-01-01 00:00:01.000001Z",'
       b'"tags":["a","b"],"vec":[1.5,0.1,-1e-07,3.4e+38]}')


def test_flink_schema_text_for_the_documented_example() -> None:
    # docs/decisions/0013 section 2: Flink 2.0's convertToSchema of
    # orders(id INT NOT NULL, total DECIMAL(10,2), created TIMESTAMP(3))
    schema = record_schema([("id", "INT", False), ("total", "DECIMAL(10, 2)", True),
                            ("created", "TIMESTAMP(3)", True)])
    assert schema_text(schema) == (
        '{"type":"record","name":"record","namespace":"org.apache.flink.avro.generated",'
        '"fields":[{"name":"id","type":"int"},{"name":"total","type":["null",{"type":"bytes",'
        '"logicalType":"decimal","precision":10,"scale":2}],"default":null},'
        '{"name":"created","type":["null",{"type":"long","logicalType":"timestamp-millis"}],'
        '"default":null}]}')


def test_every_type_goes_to_avro_and_back_unchanged() -> None:
    codec = RowCodec(COLUMNS)
    payload = codec.encode(decode_json(ROW))
    # byte for byte, numbers with their exact digits; the one difference: a DECIMAL beyond
    # 38 digits is Flink CDC's STRING, so Avro holds (and gives back) its text as a string
    huge = b"12345678901234567890123456789012345678901.000000000000000000000001"
    assert codec.to_json(payload) == ROW.replace(huge, b'"%b"' % huge)


def test_values_as_other_avro_readers_see_them() -> None:
    codec = RowCodec(COLUMNS)
    record = fastavro.schemaless_reader(io.BytesIO(codec.encode(decode_json(ROW))),
                                        fastavro.parse_schema(json.loads(codec.text)), None)
    assert record["dec"] == Decimal("-0.50")
    assert record["ubig"] == Decimal(18446744073709551615)
    assert record["bits"] == b"\x01\x02"
    assert record["t0"] == (23 * 3600 + 59 * 60 + 59) * 1_000_000
    assert record["dt3"].isoformat() == "1969-12-31T23:59:59.999000+00:00"
    assert record["ts0"].isoformat() == "2038-01-19T03:14:08+00:00"
    assert record["huge"] == ("12345678901234567890123456789012345678901."
                              "000000000000000000000001")


@pytest.mark.parametrize("text", [b"0.000000000000000000000000000001", b"-0.50", b"12345",
                                  b"99999999999999999999999999999999999999999.5"])
def test_a_decimal_beyond_38_digits_is_its_exact_text(text: bytes) -> None:
    codec = RowCodec([("d", "STRING", True)])
    record = codec.read(codec.encode(decode_json(b'{"d":%b}' % text)))
    assert record["d"] == text.decode()  # never 1E-30


def test_nulls_and_not_null_columns() -> None:
    codec = RowCodec(COLUMNS)
    row = {name: None for name, _, _ in COLUMNS} | {"id": 1}
    assert json.loads(codec.to_json(codec.encode(row))) == row
    with pytest.raises(AvroValueError, match="column id is null but its Avro field is not"):
        codec.encode({"id": None})


@pytest.mark.parametrize("text", ["-838:59:59", "-00:00:00.001", "24:00:00", "838:59:59"])
def test_a_time_is_a_signed_duration_in_microseconds(text: str) -> None:
    # MySQL's TIME is not a time of day: Avro's time types would refuse most of it
    codec = RowCodec([("t", "TIME(3)", True)])
    assert codec.schema["fields"][0]["type"] == ["null", "long"]
    payload = codec.encode({"t": text})
    record = fastavro.schemaless_reader(io.BytesIO(payload), codec.parsed, None)
    sign = -1 if text.startswith("-") else 1
    h, m, s = text.lstrip("-").split(":")
    assert record["t"] == sign * round((int(h) * 3600 + int(m) * 60 + float(s)) * 1_000_000)
    # back in the JSON form: TIME(3) spells 3 fraction digits
    assert json.loads(codec.to_json(payload))["t"] == (text if "." in text else text + ".000")


@pytest.mark.parametrize(("type_", "text"), [
    ("DECIMAL(38, 2)", "123456789012345678901234567890123456.78"),
    ("DECIMAL(38, 2)", "-999999999999999999999999999999999999.99"),
    ("DECIMAL(30, 0)", "123456789012345678901234567890"),
    ("DECIMAL(38, 38)", "0.00000000000000000000000000000000000001"),
    ("DECIMAL(20, 0)", "18446744073709551615"), ("DECIMAL(5, 2)", "-0.00"),
])
def test_decimals_of_every_precision_go_to_avro_and_back_exactly(type_: str, text: str) -> None:
    # beyond 28 digits a Decimal's own arithmetic rounds (its default context): never used
    codec = RowCodec([("d", type_, True)])
    row = b'{"d":%b}' % text.encode()
    assert codec.to_json(codec.encode(decode_json(row))) == row.replace(b"-0.00", b"0.00")
    record = fastavro.schemaless_reader(io.BytesIO(codec.encode(decode_json(row))),
                                        codec.parsed, None)
    assert record["d"] == Decimal(text)


def test_a_decimal_that_does_not_fit_is_refused() -> None:
    codec = RowCodec([("d", "DECIMAL(4, 2)", True)])
    with pytest.raises(AvroValueError, match="does not fit DECIMAL"):
        codec.encode({"d": Decimal("123.45")})


def test_names_avro_cannot_hold_are_refused() -> None:
    with pytest.raises(AvroTypeError, match="'order-id' is not a valid Avro field name"):
        record_schema([("order-id", "INT", False)])


def test_confluent_framing() -> None:
    assert frame(258, b"x") == b"\x00\x00\x00\x01\x02x"
    assert unframe(b"\x00\x00\x00\x01\x02x") == (258, b"x")
    with pytest.raises(ValueError, match="magic byte"):
        unframe(b'{"id":1}')


def test_constant_defaults_become_field_defaults_so_older_messages_read_as_mysql_says() -> None:
    # ALTER TABLE t ADD note VARCHAR(20) NOT NULL DEFAULT 'none', ADD n INT NULL,
    #   ADD d DECIMAL(6,2) DEFAULT 1.50, ADD at DATETIME DEFAULT CURRENT_TIMESTAMP
    old = RowCodec([("id", "INT", False, None)])
    new = RowCodec([("id", "INT", False, None), ("note", "VARCHAR(20)", False, "none"),
                    ("n", "INT", True, None), ("d", "DECIMAL(6, 2)", True, "1.50"),
                    ("at", "TIMESTAMP(0)", True, "CURRENT_TIMESTAMP"),
                    ("ok", "BOOLEAN", False, "1"), ("day", "DATE", True, "2024-01-31")])
    fields = {f["name"]: f for f in new.schema["fields"]}
    assert fields["note"] == {"name": "note", "type": "string", "default": "none"}
    assert fields["n"] == {"name": "n", "type": ["null", "int"], "default": None}
    assert fields["d"]["type"][1] == "null" and fields["d"]["default"] == "\x00\x96"  # 150
    assert fields["at"]["default"] is None  # not a constant: Flink's null default
    assert fields["ok"]["default"] is True and fields["day"]["default"] == 19753
    # a reader of the new schema reads a message written before the ALTER
    record = fastavro.schemaless_reader(io.BytesIO(old.encode({"id": 1})), old.parsed,
                                        new.parsed)
    # fastavro fills a default without its logical type (Java's Avro applies it): the
    # decimal's unscaled bytes as the spec's ISO-8859-1 text, the date as its day number
    assert record == {"id": 1, "note": "none", "n": None, "d": "\x00\x96", "at": None,
                      "ok": True, "day": 19753}
    assert int.from_bytes(record["d"].encode("latin-1"), "big", signed=True) == 150
    assert datetime.date(1970, 1, 1) + datetime.timedelta(days=19753) == datetime.date(
        2024, 1, 31)


@pytest.mark.parametrize(("old", "new", "changed"), [
    ('{"type":"bytes","logicalType":"decimal","precision":8,"scale":2}',
     '{"type":"bytes","logicalType":"decimal","precision":8,"scale":3}', True),
    ('{"type":"bytes","logicalType":"decimal","precision":8,"scale":2}',
     '{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}', False),
    ('{"type":"long","logicalType":"timestamp-millis"}',
     '{"type":"long","logicalType":"timestamp-micros"}', True),
    ('"string"', '"bytes"', True), ('"long"', '{"type":"long","logicalType":"timestamp-millis"}',
                                    True),
    ('"int"', '"long"', False), ('"long"', '"int"', False),  # registry's (409 under BACKWARD)
    ('["null","int"]', '"int"', False), ('"string"', '"string"', False),
])
def test_changes_readers_would_silently_misread_are_found(old: str, new: str,
                                                         changed: bool) -> None:
    def schema(t: str) -> dict[str, object]:
        return {"type": "record", "name": "r", "fields": [{"name": "x", "type": json.loads(t)}]}
    assert bool(meaning_changes(schema(old), schema(new))) is changed
