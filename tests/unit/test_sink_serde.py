"""Changelog record -> sink messages: keys, values, tombstones, headers, routes, exact numbers."""

import orjson

from cdc_ingest.routing.routes import Router, RouteRule
from cdc_ingest.sink.serde import decode, last_per_key, sink_messages

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


def test_upsert_value_keeps_every_number_exactly() -> None:
    [msg, _] = sink_messages(b'{"id":7}', decode(ROW), _router().sink_topics, False, False)
    assert msg.key == b'{"id":7}'
    assert msg.value == (
        b'{"id":7,"amount":0.50,"big":-12345678901234567890123456789012345.1234567890123456789'
        b'01234567891,"f":3.4028235e+38,"u":18446744073709551615,"n":null}'
    )
    assert msg.timestamp_ms == 1700000000123 and msg.headers is None


def test_fan_out_first_match_and_unmatched() -> None:
    record = decode(ROW)
    assert [m.topic for m in sink_messages(None, record, _router().sink_topics, False, False)] \
        == ["orders", "all_app"]
    first = _router("FIRST_MATCH").sink_topics
    assert [m.topic for m in sink_messages(None, record, first, False, False)] == ["orders"]
    other = {**record, "db": "shop", "table": "users"}
    assert [m.topic for m in sink_messages(None, other, first, False, False)] == ["shop.users"]


def test_delete_is_a_tombstone_with_headers() -> None:
    record = decode(ROW.replace(b'"+U"', b'"-D"'))
    [msg] = sink_messages(None, record, lambda d, t: ("t",), False, True)
    assert msg.value is None and msg.key == b'{"id":7}'
    assert msg.headers == [("namespace", b""), ("schemaName", b"app"),
                           ("tableName", b"order_1")]


def test_except_key_drops_the_key_columns_and_ddl_writes_nothing() -> None:
    [msg] = sink_messages(None, decode(ROW), lambda d, t: ("t",), True, False)
    assert "id" not in orjson.loads(msg.value or b"{}")
    ddl = decode(b'{"v":1,"op":"DDL","db":"a","table":"b","pk":null,"before":null,'
                 b'"after":null,"ts_ms":1,"pos":"f:1","ddl":"ALTER TABLE b ADD c INT"}')
    assert sink_messages(None, ddl, lambda d, t: ("t",), False, False) == []


def test_buffer_flush_keeps_the_last_record_per_key_in_last_write_order() -> None:
    record = decode(ROW)
    a1, = sink_messages(b"a", record, lambda d, t: ("t",), False, False)
    b1, = sink_messages(b"b", record, lambda d, t: ("t",), False, False)
    a2, = sink_messages(b"a", decode(ROW.replace(b'"+U"', b'"-D"')), lambda d, t: ("t",),
                        False, False)
    assert last_per_key([a1, b1, a2]) == [b1, a2]
