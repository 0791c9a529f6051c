"""``sink.type: kafka``: change events byte for byte as Flink CDC's Kafka pipeline sink writes
them. The expected strings are Flink CDC's own test expectations (apache/flink-cdc master
23fb108e, flink-cdc-pipeline-connector-kafka: DebeziumJsonSerializationSchemaTest,
CanalJsonSerializationSchemaTest, JsonSerializationSchemaTest, CsvSerializationSchemaTest,
KafkaDataSinkITCase) and the partitions its quickstart shows."""

from __future__ import annotations

import pytest

from cdc_ingest.formats.change_events import EventSerde
from cdc_ingest.formats.event_routing import EventOptions, exclusive
from cdc_ingest.formats.event_values import csv_field
from cdc_ingest.kafka.consumer import Message
from cdc_ingest.kafka.partition import java_partition
from cdc_ingest.model.changelog import DdlRecord, ddl_value, row_value
from cdc_ingest.routing.routes import Router, RouteRule
from cdc_ingest.sink.task.event_resets import deletes

# Flink's tests use TableId default_namespace.default_schema.table1; here a route gives the
# source table shop.t1 that table id, as a Flink CDC route would.
TABLE_ID = "default_namespace.default_schema.table1"
ROUTER = Router([RouteRule.compile("shop.t1", TABLE_ID)])


def serde(**options: object) -> EventSerde:
    headers = bool(options.pop("headers", False))
    return EventSerde(ROUTER, EventOptions(**options), headers)  # type: ignore[arg-type]


def record(op: str, before: dict | None, after: dict | None) -> bytes:
    row = after if after is not None else before
    assert row is not None
    return row_value(op, "shop", "t1", {"col1": row["col1"]}, before, after, 1700000000000,
                     "f:1#0")


EVENTS = [  # Flink's source events: insert 1, insert 2, delete 2, update 1 -> x
    record("+I", None, {"col1": "1", "col2": "1"}),
    record("+I", None, {"col1": "2", "col2": "2"}),
    record("-D", {"col1": "2", "col2": "2"}, None),
    record("+U", {"col1": "1", "col2": "1"}, {"col1": "1", "col2": "x"}),
]


def one(s: EventSerde, value: bytes) -> tuple[str, bytes, bytes | None]:
    [(topic, key, body, _headers, _ts, name)] = s.messages(None, value)
    assert name == "shop.t1"
    return topic, key, body


def test_debezium_json_values_match_flink_cdc() -> None:
    expected = [
        '{"before":null,"after":{"col1":"1","col2":"1"},"op":"c","source":{"db":"default_schema","table":"table1"}}',
        '{"before":null,"after":{"col1":"2","col2":"2"},"op":"c","source":{"db":"default_schema","table":"table1"}}',
        '{"before":{"col1":"2","col2":"2"},"after":null,"op":"d","source":{"db":"default_schema","table":"table1"}}',
        '{"before":{"col1":"1","col2":"1"},"after":{"col1":"1","col2":"x"},"op":"u","source":{"db":"default_schema","table":"table1"}}',
    ]
    s = serde()
    assert [one(s, value)[2].decode() for value in EVENTS] == expected  # type: ignore[union-attr]


def test_canal_json_values_match_flink_cdc() -> None:
    expected = [
        '{"old":null,"data":[{"col1":"1","col2":"1"}],"type":"INSERT","database":"default_schema","table":"table1","pkNames":["col1"]}',
        '{"old":null,"data":[{"col1":"2","col2":"2"}],"type":"INSERT","database":"default_schema","table":"table1","pkNames":["col1"]}',
        '{"old":null,"data":[{"col1":"2","col2":"2"}],"type":"DELETE","database":"default_schema","table":"table1","pkNames":["col1"]}',
        '{"old":[{"col1":"1","col2":"1"}],"data":[{"col1":"1","col2":"x"}],"type":"UPDATE","database":"default_schema","table":"table1","pkNames":["col1"]}',
    ]
    s = serde(value_format="canal-json")
    assert [one(s, value)[2].decode() for value in EVENTS] == expected  # type: ignore[union-attr]


NULLS = [  # a null column, and a one-part table id (no database)
    record("+I", None, {"col1": "1", "col2": None}),
    record("+U", {"col1": "1", "col2": None}, {"col1": "1", "col2": "x"}),
    record("-D", {"col1": "1", "col2": "x"}, None),
]


@pytest.mark.parametrize(("fmt", "expected"), [
    ("debezium-json", [
        '{"after":{"col1":"1"},"op":"c","source":{"table":"t9"}}',
        '{"before":{"col1":"1"},"after":{"col1":"1","col2":"x"},"op":"u","source":{"table":"t9"}}',
        '{"before":{"col1":"1","col2":"x"},"op":"d","source":{"table":"t9"}}']),
    ("canal-json", [
        '{"data":[{"col1":"1"}],"type":"INSERT","table":"t9","pkNames":["col1"]}',
        '{"old":[{"col1":"1"}],"data":[{"col1":"1","col2":"x"}],"type":"UPDATE","table":"t9","pkNames":["col1"]}',
        '{"data":[{"col1":"1","col2":"x"}],"type":"DELETE","table":"t9","pkNames":["col1"]}']),
])
def test_ignore_null_fields_leaves_out_every_null_field_as_flinks_json_does(
        fmt: str, expected: list[str]) -> None:
    # Flink's RowDataToJsonConverters with ignoreNullFields: a null field is not written, at
    # any depth: before/after/old of none, null columns, source.db of a one-part table id
    router = Router([RouteRule.compile("shop.t1", "t9")])
    s = EventSerde(router, EventOptions(value_format=fmt, value_ignore_nulls=True), False)
    assert [s.messages(None, v)[0][2].decode() for v in NULLS] == expected  # type: ignore[union-attr]
    # a truncate's delete events leave them out too
    [(_t, key, body, *_rest)] = s.messages(None, NULLS[1])
    read_back = [Message("t9", 0, 0, key, body, [], 0)]
    ddl = DdlRecord("shop", "t1", "TRUNCATE t1", "f:9", "truncate", key=["col1"])
    [(_t, _k, value, *_rest)] = deletes(s, "t9", read_back, ddl, 5, 1, None)
    assert value == expected[2].encode()
    # json.encode.ignore-null-fields: the key's null columns too (a configured key may hold one)
    keyed = EventSerde(router, EventOptions(value_format=fmt, key_ignore_nulls=True), False)
    null_key = record("+I", None, {"col1": None, "col2": "y"})
    assert keyed.messages(None, null_key)[0][1] == b'{"TableId":"t9"}'
    # off (the default): written as before
    plain = EventSerde(router, EventOptions(value_format=fmt), False)
    assert plain.messages(None, null_key)[0][1] == b'{"TableId":"t9","col1":null}'
    assert b'"col2":null' in plain.messages(None, NULLS[0])[0][2]  # type: ignore[operator]


def test_json_and_csv_keys_match_flink_cdc() -> None:
    json_keys = [one(serde(), v)[1].decode() for v in EVENTS]
    assert json_keys == [f'{{"TableId":"{TABLE_ID}","col1":"{n}"}}' for n in "1221"]
    csv_keys = [one(serde(key_format="csv"), v)[1].decode() for v in EVENTS]
    assert csv_keys == [f'"{TABLE_ID}",{n}' for n in "1221"]


@pytest.mark.parametrize(("text", "written"), [
    ("inventory.products", "inventory.products"),
    ("abcdefghijklmnopqrstuvwx", "abcdefghijklmnopqrstuvwx"),
    ("abcdefghijklmnopqrstuvwxy", '"abcdefghijklmnopqrstuvwxy"'),
    ("db.tab le", '"db.tab le"'), ("db.t,x", '"db.t,x"'), ('db.t"q', '"db.t""q"'),
    ("a+b", '"a+b"'), ("a$b", '"a$b"'), ("a-b", "a-b"), ("a/b", "a/b"), ("a:b", "a:b"),
    ("é", "é"),
])
def test_csv_quoting_is_jacksons(text: str, written: str) -> None:
    assert csv_field(text) == written


def test_unrouted_table_id_is_db_table_and_routed_one_part_has_no_db() -> None:
    plain = EventSerde(Router([]), EventOptions(), False)
    topic, key, value = one(plain, EVENTS[0])
    assert topic == "shop.t1"
    assert key == b'{"TableId":"shop.t1","col1":"1"}'
    assert value is not None and value.endswith(b'"source":{"db":"shop","table":"t1"}}')
    routed = EventSerde(Router([RouteRule.compile("shop.t1", "kafka_ods_orders")]),
                        EventOptions(), False)
    topic, key, value = one(routed, EVENTS[0])
    assert topic == "kafka_ods_orders"
    assert key == b'{"TableId":"kafka_ods_orders","col1":"1"}'
    assert value is not None and value.endswith(b'"source":{"db":null,"table":"kafka_ods_orders"}}')


def test_topic_then_mapping_then_table_id() -> None:
    mapping = (("default_namespace.default_schema_copy.\\.*", "test_topic_mapping_copy"),
               ("default_namespace.default_schema.\\.*", "test_topic_mapping"))
    assert one(serde(mapping=mapping), EVENTS[0])[0] == "test_topic_mapping"
    assert one(serde(mapping=mapping, topic="test_topic"), EVENTS[0])[0] == "test_topic"
    assert one(serde(mapping=(("other.\\.*", "x"),)), EVENTS[0])[0] == TABLE_ID
    # selectors are case-insensitive, as Flink CDC's
    upper = (("DEFAULT_NAMESPACE.Default_Schema.TABLE1", "t"),)
    assert one(serde(mapping=upper), EVENTS[0])[0] == "t"


def test_headers_table_id_then_custom() -> None:
    s = serde(headers=True, custom_headers=(("k1", "v1"), ("k2", "v2")))
    [(_t, _k, _v, headers, _ts, _n)] = s.messages(None, EVENTS[0])
    assert headers == [("namespace", b"default_namespace"), ("schemaName", b"default_schema"),
                       ("tableName", b"table1"), ("k1", b"v1"), ("k2", b"v2")]
    plain = EventSerde(Router([]), EventOptions(), True)
    [(_t, _k, _v, headers, _ts, _n)] = plain.messages(None, EVENTS[0])
    assert headers == [("namespace", b""), ("schemaName", b"shop"), ("tableName", b"t1")]
    assert serde().messages(None, EVENTS[0])[0][3] is None


def test_hash_by_key_partitions_are_the_quickstarts() -> None:
    # Flink CDC's quickstart (12 partitions, hash-by-key): orders id 1 in partition 0,
    # products id 2 and shipments id 1 in partition 4.
    assert java_partition(b'{"TableId":"app_db.orders","id":1}', 12) == 0
    assert java_partition(b'{"TableId":"app_db.products","id":2}', 12) == 4
    assert java_partition(b'{"TableId":"app_db.shipments","id":1}', 12) == 4
    assert EventOptions(all_to_zero=False).partition == -1
    assert EventOptions().partition == 0


def test_ddl_writes_nothing() -> None:
    s = serde()
    value = ddl_value("shop", "t1", "ALTER TABLE t1 ADD c INT", 1, "f:2", "alter")
    assert s.messages(None, value) == []
    assert s.ddl is not None and s.ddl.action == "alter"


@pytest.mark.parametrize("fmt", ["debezium-json", "canal-json"])
def test_truncate_deletes_every_live_row(fmt: str) -> None:
    s = EventSerde(Router([]), EventOptions(value_format=fmt), False)
    written = [m for v in [*EVENTS, record("+I", None, {"col1": "3", "col2": "3"})]
               for m in s.messages(None, v)]
    topic = written[0][0]
    read_back = [Message(topic, 0, i, key, value, [], 0)
                 for i, (_t, key, value, _h, _ts, _n) in enumerate(written)]
    ddl = DdlRecord("shop", "t1", "TRUNCATE t1", "f:9", "truncate", key=["col1"])
    out = deletes(s, topic, read_back, ddl, 5, 1, None)
    keys = sorted(m[1] for m in out)
    assert keys == [b'{"TableId":"shop.t1","col1":"1"}', b'{"TableId":"shop.t1","col1":"3"}']
    by_key = {m[1]: m[2] for m in out}
    if fmt == "debezium-json":
        assert by_key[keys[0]] == (b'{"before":{"col1":"1","col2":"x"},"after":null,"op":"d",'
                                   b'"source":{"db":"shop","table":"t1"}}')
    else:
        assert by_key[keys[0]] == (b'{"old":null,"data":[{"col1":"1","col2":"x"}],'
                                   b'"type":"DELETE","database":"shop","table":"t1",'
                                   b'"pkNames":["col1"]}')
    # with two changelog partitions each task deletes only the rows whose changelog key
    # hashes to it
    mine = [deletes(s, topic, read_back, ddl, 5, 2, p) for p in (0, 1)]
    assert sorted(m[1] for part in mine for m in part) == keys
    for p, part in enumerate(mine):
        for m in part:
            pk = m[1].replace(b'"TableId":"shop.t1",', b"")
            assert java_partition(pk, 2) == p


def test_a_table_id_is_exclusive_only_when_no_other_table_can_carry_it() -> None:
    def rules(*pairs: tuple[str, str]) -> Router:
        return Router([RouteRule.compile(src, dst) for src, dst in pairs])

    assert exclusive(Router([]), "shop", "a", "shop.a")
    assert exclusive(rules(("shop.a", "ods_a")), "shop", "a", "ods_a")
    # two tables routed to one sink-table, each by a literal rule
    assert not exclusive(rules(("shop.a", "ods"), ("shop.b", "ods")), "shop", "a", "ods")
    # another table routed onto this one's own name
    assert not exclusive(rules(("shop.b", "shop.a")), "shop", "a", "shop.a")
    assert not exclusive(Router([RouteRule.compile("other.\\.*", "shop.<>", "<>")]),
                         "shop", "a", "shop.a")
    # a regex rule takes the table: others may share its name
    assert not exclusive(rules(("shop.\\.*", "ods")), "shop", "a", "ods")
