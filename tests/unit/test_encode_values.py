"""The compiled encoder writes rows and keys byte for byte as the Python one (orjson) does,
whatever the value, and a message librdkafka's own produce refuses goes through send."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from cdc_ingest.capture.binlog_schema import ColumnSpec, FieldType, TableSchema
from cdc_ingest.capture.decoder import compiled_available
from cdc_ingest.capture.encode import KeyPlan, TableEncoder, table_encoder

# the extension is built wherever tests run (test_compiled_decoder.test_extension_is_built)
pytestmark = pytest.mark.skipif(not compiled_available(), reason="no compiled extension")

SCHEMA = TableSchema("db", "t", (ColumnSpec("k", FieldType.VARCHAR),
                                 ColumnSpec('q"é', FieldType.VARCHAR)), ("k",))

VALUES: list[Any] = [
    None, True, False, 0, -1, 2**63 - 1, -2**63, 2**63, 2**64 - 1, 1.5, 1e16, -0.0, 1e-7,
    "", "plain", "ünïcödé ✓ 😀", 'a "quote"', "back\\slash", "ctl\x01\x1f\n\t\r\b\f",
    "\x7f", "a/b", "\u2028", orjson.Fragment(b'{"x":[1,2]}'), [1, "a", None], {"k": None},
    "".join(chr(c) for c in range(128)), 'é"\\\x00😀\x1b中', '{"json": "text", "n": [1]}',
]


def _records(encoder: Any, rows: list[tuple[Any, Any]], kind: str) -> list[tuple[bytes, bytes]]:
    out: list[tuple[bytes, bytes]] = []
    encoder.produce_rows(lambda t, v, k, ts: out.append((k, v)), "t", kind, rows, 1, "0-1-2",
                         1000, None)
    return out


def test_every_kind_of_value_reads_as_orjson_writes_it() -> None:
    plan = KeyPlan(SCHEMA, "test")
    compiled = table_encoder(SCHEMA, plan)
    assert type(compiled) is not TableEncoder
    reference = TableEncoder(SCHEMA, plan)
    for value in VALUES:
        rows = [([value, value], [value, "after"])]
        for kind in ("I", "U", "D"):
            pairs = [(None, rows[0][1])] if kind == "I" else (
                [(rows[0][0], None)] if kind == "D" else rows)
            assert _records(compiled, pairs, kind) == _records(reference, pairs, kind), value


def test_values_orjson_refuses_fail_the_same_way() -> None:
    plan = KeyPlan(SCHEMA, "test")
    for bad in ("\ud800", 2**64, object()):
        errors = []
        for encoder in (TableEncoder(SCHEMA, plan), table_encoder(SCHEMA, plan)):
            with pytest.raises(TypeError) as caught:
                _records(encoder, [(None, ["k", bad])], "I")
            errors.append(str(caught.value))
        assert errors[0] == errors[1]


def test_a_message_produce_refuses_goes_through_send() -> None:
    plan = KeyPlan(SCHEMA, "test")
    encoder = table_encoder(SCHEMA, plan)
    produced: list[bytes] = []
    sent: list[bytes] = []

    def produce(topic: str, value: bytes, key: bytes, timestamp: int) -> None:
        if key == b'{"k":"full"}':
            raise BufferError("queue full")  # librdkafka's local queue: send waits for room
        produced.append(key)

    rows = [(None, ["a", 1]), (None, ["full", 2]), (None, ["b", 3])]
    n = encoder.produce_rows(lambda t, v, k, ts: sent.append(k), "t", "I", rows, 1, "0-1-2",
                             1000, None, produce)
    assert n == 3
    assert produced == [b'{"k":"a"}', b'{"k":"b"}'] and sent == [b'{"k":"full"}']
