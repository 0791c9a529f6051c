"""Changelog record -> sink messages: keys, values, tombstones, headers, routes, exact numbers."""

import json
import random
import string
from typing import Any

import orjson
import pytest

from cdc_ingest.formats.upsert_json import SinkMessage, SinkSerde, UpsertOptions, last_per_key
from cdc_ingest.routing.routes import Router, RouteRule

ROW = (
    b'{"v":1,"op":"+U","db":"app","table":"order_1","pk":{"id":7},'
    b'"before":{"id":7,"amount":0.10},"after":{"id":7,"amount":0.50,"big":'
    b'-12345678901234567890123456789012345.123456789012345678901234567891,"f":3.4028235e+38,'
    b'"u":18446744073709551615,"n":null},"ts_ms":1700000000123,"pos":"0-1-9#1"}'
)


def _router(mode: str = "ALL_MATCH") -> Router:
    return Router(
        [RouteRule.compile("app.order_[0-9]+", "orders"),
         RouteRule.compile("app.\\.*", "all_app")],
        mode,
    )


def _one(key: bytes | None, value: bytes, except_key: bool = False,
         headers: bool = False) -> SinkMessage:
    [msg] = SinkSerde(lambda d, t: ("t",), UpsertOptions(except_key, headers)).messages(key, value)
    return msg


def test_upsert_value_keeps_every_number_exactly() -> None:
    [msg, _] = SinkSerde(_router().sink_topics, UpsertOptions(False, False)).messages(b'{"id":7}', ROW)
    topic, key, value, headers, ts, table = msg
    assert (topic, key, headers, ts, table) == ("orders", b'{"id":7}', None, 1700000000123,
                                                "app.order_1")
    assert value == (
        b'{"id":7,"amount":0.50,"big":-12345678901234567890123456789012345.1234567890123456789'
        b'01234567891,"f":3.4028235e+38,"u":18446744073709551615,"n":null}'
    )


def test_integers_beyond_64_bits_pass_through() -> None:
    # DECIMAL(65,0): an integer JSON number no float and no 64-bit integer holds
    big = b"-12345678901234567890123456789012345678901234567890123456789012345"
    row = (b'{"v":1,"op":"+I","db":"d","table":"t","pk":{"id":' + big + b'},"before":null,'
           b'"after":{"id":' + big + b',"x":1},"ts_ms":1,"pos":"p"}')
    msg = _one(None, row)
    assert msg[1] == b'{"id":' + big + b"}" and msg[2] == b'{"id":' + big + b',"x":1}'
    assert _one(None, row, except_key=True)[2] == b'{"x":1}'


def test_fan_out_first_match_and_unmatched() -> None:
    def topics(mode: str, value: bytes = ROW) -> list[str]:
        return [m[0] for m in SinkSerde(_router(mode).sink_topics, UpsertOptions(False, False))
                .messages(None, value)]

    assert topics("ALL_MATCH") == ["orders", "all_app"]
    assert topics("FIRST_MATCH") == ["orders"]
    other = ROW.replace(b'"db":"app","table":"order_1"', b'"db":"shop","table":"users"')
    assert topics("FIRST_MATCH", other) == ["shop.users"]


def test_delete_is_a_tombstone_with_headers() -> None:
    _, key, value, headers, _, _ = _one(None, ROW.replace(b'"+U"', b'"-D"'), headers=True)
    assert value is None and key == b'{"id":7}'
    assert headers == [("namespace", b""), ("schemaName", b"app"), ("tableName", b"order_1")]


def test_except_key_drops_the_key_columns_and_ddl_writes_nothing() -> None:
    value = _one(None, ROW, except_key=True)[2]
    assert value == (
        b'{"amount":0.50,"big":-12345678901234567890123456789012345.1234567890123456789'
        b'01234567891,"f":3.4028235e+38,"u":18446744073709551615,"n":null}'
    )
    ddl = (b'{"v":1,"op":"DDL","db":"a","table":"b","pk":null,"before":null,'
           b'"after":null,"ts_ms":1,"pos":"f:1","ddl":"ALTER TABLE b ADD c INT"}')
    for except_key in (False, True):
        serde = SinkSerde(lambda d, t: ("t",), UpsertOptions(except_key, False))
        out: list[SinkMessage] = []
        assert serde.add(out, None, ddl) == 1 and out == []


@pytest.mark.parametrize("value", [
    b"not json",
    b'{"v":1,"op":"+I"}',  # fields missing
    b'{"v":1,"op":"+I","db":"a","table":"b","pk":{"id":1},"before":null,"after":{"id":1},'
    b'"ts_ms":"soon","pos":"p"}',
    b'{"v":1,"op":"+I","db":null,"table":"b","pk":{"id":1},"before":null,"after":{"id":1},'
    b'"ts_ms":1,"pos":"p"}',
])
def test_a_value_that_is_no_changelog_record_is_a_value_error(value: bytes) -> None:
    for except_key in (False, True):
        with pytest.raises(ValueError):
            SinkSerde(lambda d, t: ("t",), UpsertOptions(except_key, False)).messages(b"k", value)


def test_buffer_flush_keeps_the_last_record_per_key_in_last_write_order() -> None:
    serde = SinkSerde(lambda d, t: ("t",), UpsertOptions(False, False))
    a1, = serde.messages(b"a", ROW)
    b1, = serde.messages(b"b", ROW)
    a2, = serde.messages(b"a", ROW.replace(b'"+U"', b'"-D"'))
    assert last_per_key([a1, b1, a2]) == [b1, a2]


# -- the values are what parsing the record and writing `after` again would give ----------


_TEXT = string.printable + "\x00\x01\x1f\x7f\u00e9\u2028\U0001f600\"\\/"
_NUMBERS = ["0.50", "-0.01", "1e300", "3.4028235e+38", "-1.5E-7",
            "12345678901234567890123456789012345.123456789012345678901234567891"]


def _random_value(rnd: random.Random, depth: int = 0) -> Any:
    kind = rnd.randrange(8)
    if kind == 0:
        return rnd.choice([None, True, False])
    if kind == 1:
        return rnd.choice([0, -1, 2**63 - 1, -(2**63), 2**64 - 1, rnd.randint(-10**9, 10**9)])
    if kind == 2:
        return orjson.Fragment(rnd.choice(_NUMBERS))  # DECIMAL, as capture writes it
    if kind == 3:
        return rnd.random() * 10 ** rnd.randint(-300, 300)  # DOUBLE
    if kind == 4 and depth < 2:
        return [_random_value(rnd, depth + 1) for _ in range(rnd.randrange(4))]  # SET
    return "".join(rnd.choice(_TEXT) for _ in range(rnd.randrange(20)))


def _reference(key: bytes | None, value: bytes, except_key: bool) -> tuple[bytes, bytes | None]:
    """The sink's former way: parse keeping number text, serialize ``after`` again."""
    record = json.loads(value, parse_float=orjson.Fragment)
    after = record["after"]
    if except_key and after is not None:
        after = {k: v for k, v in after.items() if k not in record["pk"]}
    body = None if record["op"] == "-D" else orjson.dumps(after)
    return (key if key is not None else orjson.dumps(record["pk"])), body


def test_messages_are_byte_identical_to_parsing_and_serializing_again() -> None:
    rnd = random.Random(20240131)
    for _ in range(3000):
        pk = {"id": _random_value(rnd), "k2": _random_value(rnd)}
        after = {**pk, **{f"c{n}{_random_value(rnd)!s:.5}": _random_value(rnd)
                          for n in range(rnd.randrange(8))}}
        op = rnd.choice(["+I", "+U", "-D"])
        value = orjson.dumps({
            "v": 1, "op": op, "db": "d", "table": "t", "pk": pk,
            "before": None if op == "+I" else after, "after": None if op == "-D" else after,
            "ts_ms": 1, "pos": "p"})  # fmt: skip
        key = orjson.dumps(pk) if rnd.random() < 0.5 else None
        for except_key in (False, True):
            msg = _one(key, value, except_key=except_key)
            assert (msg[1], msg[2]) == _reference(key, value, except_key), value
