"""`key.json.encoding: jackson`: keys byte for byte as Flink's json format (Jackson's
UTF8JsonGenerator) writes them, so a Flink job and cdc-ingest writing one compacted topic
overwrite and tombstone each other's keys; `type: kafka` keys always are."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from cdc_ingest.formats.change_events import EventSerde
from cdc_ingest.formats.event_routing import EventOptions
from cdc_ingest.formats.jackson import jackson_json
from cdc_ingest.formats.upsert_json import SinkSerde, UpsertOptions
from cdc_ingest.kafka.partition import java_partition
from cdc_ingest.routing.routes import Router
from tests.unit.test_config import minimal
from tests.unit.test_config_errors import problems_of


@pytest.mark.parametrize(("value", "jackson"), [
    # Jackson escapes each UTF-16 surrogate with upper-case hex (UTF8JsonGenerator
    # _outputMultiByteChar) and a control character without a short escape as \u00XX
    ("🔑", b'"\\uD83D\\uDD11"'),
    ("a𝄞b", b'"a\\uD834\\uDD1Eb"'),
    ("\x1f\x00\x7f", b'"\\u001F\\u0000\x7f"'),
    ("\b\t\n\f\r\"\\/", b'"\\b\\t\\n\\f\\r\\"\\\\/"'),
    ("\\u001f", b'"\\\\u001f"'),  # a backslash then "u001f": text, not an escape
    ("é中\u2028", '"é中\u2028"'.encode()),  # BMP characters stay UTF-8 in both
])
def test_jackson_spelling(value: str, jackson: bytes) -> None:
    assert jackson_json(orjson.dumps(value)) == jackson
    assert orjson.loads(jackson) == value


def test_keys_without_such_characters_are_the_same_object() -> None:
    key = b'{"id":1,"name":"plain \\" text"}'
    assert jackson_json(key) is key


def _record(pk: dict[str, Any]) -> bytes:
    return orjson.dumps({"v": 1, "op": "+I", "db": "app", "table": "t", "pk": pk,
                         "before": None, "after": {**pk, "x": 1}, "ts_ms": 1, "pos": "g#1"})


def test_upsert_keys_follow_the_option_and_so_does_the_partition() -> None:
    pk = {"k": "🔑"}
    for jackson, want in ((False, orjson.dumps(pk)), (True, b'{"k":"\\uD83D\\uDD11"}')):
        serde = SinkSerde(lambda db, t: ("out",), UpsertOptions(False, False, (), jackson))
        out: list[Any] = []
        serde.add(out, orjson.dumps(pk), _record(pk))
        assert out[0][1] == want
    assert java_partition(b'{"k":"\\uD83D\\uDD11"}', 6) != java_partition(orjson.dumps(pk), 6)


def test_change_event_json_keys_are_flink_cdcs() -> None:
    serde = EventSerde(Router([]), EventOptions(), False)
    out: list[Any] = []
    serde.add(out, None, _record({"k": "🔑\x01"}))
    assert out[0][1] == b'{"TableId":"app.t","k":"\\uD83D\\uDD11\\u0001"}'


def test_the_option_takes_two_values() -> None:
    found = problems_of(minimal(sink={"key.json.encoding": "latin1"}))
    assert "utf-8, jackson" in found["sink.key.json.encoding"].fix
