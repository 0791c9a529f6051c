"""AvroSinkSerde's json half and its transform (the registry side is the integration tests'):
a json value beside an Avro key keeps its number text, a filter drops rows, jackson keys
beside an Avro value are Flink's spelling. The registry is stood in by fixed ids here."""

from __future__ import annotations

import io
from typing import Any

import fastavro

from cdc_ingest.formats.avro_schemas import unframe
from cdc_ingest.formats.upsert_avro import AvroSinkSerde
from cdc_ingest.formats.upsert_json import UpsertOptions
from cdc_ingest.transform.rules import RuleSpec

COLUMNS = [{"name": "id", "type": "INT", "nullable": False, "default": None, "comment": None},
           {"name": "note", "type": "STRING", "nullable": True, "default": None,
            "comment": None},
           {"name": "amount", "type": "DECIMAL(10, 2)", "nullable": True, "default": None,
            "comment": None}]


class _FixedIds:
    def schema_id(self, side: str, *_: Any) -> int:
        return 7 if side == "key" else 8


class _OneLayout:
    def columns(self, layout: str | None, *_: Any) -> list[dict[str, Any]]:
        assert layout == "L1"
        return COLUMNS

    def timestamps(self, *_: Any) -> frozenset[bytes]:
        return frozenset()


def _serde(key: bool, value: bool, **more: Any) -> AvroSinkSerde:
    return AvroSinkSerde(lambda db, t: ("out",), UpsertOptions(**more), (key, value),
                         _OneLayout(), _FixedIds())


def _record(op: str, row: bytes, pk: bytes = b'{"id":1}') -> bytes:
    after = b"null" if op == "-D" else row
    return (b'{"v":1,"op":"%b","db":"app","table":"orders","layout":"L1","pk":%b,'
            b'"before":null,"after":%b,"ts_ms":5,"pos":"0-1-2#1"}' % (op.encode(), pk, after))


ROW = b'{"id":1,"note":"\xf0\x9f\x94\x91","amount":0.50}'


def test_a_json_value_beside_an_avro_key_keeps_its_number_text() -> None:
    [(_, key, value, _, _, _)] = _serde(True, False, except_key=True).messages(
        b'{"id":1}', _record("+I", ROW))
    assert unframe(key)[0] == 7
    assert value == b'{"note":"\xf0\x9f\x94\x91","amount":0.50}'


def test_jackson_keys_beside_an_avro_value() -> None:
    serde = _serde(False, True, jackson_keys=True)
    pk = b'{"note":"\xf0\x9f\x94\x91"}'  # a key column beyond the BMP: Jackson escapes it
    [(_, key, value, _, _, _)] = serde.messages(pk, _record("+I", ROW, pk))
    assert key == b'{"note":"\\uD83D\\uDD11"}'
    schema_id, payload = unframe(value)
    assert schema_id == 8
    codec = fastavro.parse_schema({"type": "record", "name": "r", "fields": [
        {"name": "id", "type": "int"}, {"name": "note", "type": ["null", "string"]},
        {"name": "amount", "type": ["null", {"type": "bytes", "logicalType": "decimal",
                                             "precision": 10, "scale": 2}]}]})
    assert fastavro.schemaless_reader(io.BytesIO(payload), codec, None)["note"] == "\U0001f511"


def test_a_filter_transform_drops_rows_as_it_does_for_json() -> None:
    serde = _serde(True, True, transforms=(RuleSpec("app.orders", None, "amount >= 10"),))
    assert serde.messages(b'{"id":1}', _record("+I", ROW)) == []
    big = ROW.replace(b"0.50", b"12.00")
    [(_, _, value, _, _, _)] = serde.messages(b'{"id":1}', _record("+I", big))
    assert unframe(value)[0] == 8
