"""Transform expressions and rules: values as Flink CDC's transform computes them, and what a
filter does to inserts, updates and deletes (Flink CDC's PostTransformOperator)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import msgspec
import orjson
import pytest

from cdc_ingest.errors import SinkError
from cdc_ingest.formats.upsert_json import SinkSerde, UpsertOptions
from cdc_ingest.model.changelog import decode_full_record
from cdc_ingest.transform.evaluate import compile_node
from cdc_ingest.transform.parse import ExpressionError, parse_expression
from cdc_ingest.transform.records import Transformer
from cdc_ingest.transform.rules import Rule, RuleSpec

META: dict[str, str | None] = {"__namespace_name__": None, "__schema_name__": "app",
                               "__table_name__": "orders", "__data_event_type__": "+I"}


class _Row:
    def __init__(self, row: dict[str, Any]) -> None:
        self.row = row

    def column(self, name: str) -> Any:
        return self.row[name]

    def meta(self, name: str) -> str | None:
        return META[name]


def ev(text: str, **row: Any) -> Any:
    return compile_node(parse_expression(text))(_Row(row))


@pytest.mark.parametrize(("text", "row", "want"), [
    ("price * 2", {"price": Decimal("4.00")}, "8.00"),
    ("7 / 2", {}, 3),
    ("-7 / 2", {}, -3),
    ("-7 % 3", {}, -1),
    ("price / 3", {"price": Decimal("10.00")}, "3.33"),
    ("a = NULL", {"a": 1}, False),
    ("a <> NULL", {"a": 1}, True),   # Flink CDC: !valueEquals
    ("a > NULL", {"a": 1}, False),
    ("NULL AND FALSE", {}, False),
    ("NULL OR TRUE", {}, True),
    ("NOT (NULL AND TRUE)", {}, None),
    ("'a' || NULL || 'b'", {}, "anullb"),  # Java's String.join
    ("CONCAT_WS('-', 'a', NULL, 'b')", {}, "a-b"),
    ("name LIKE 'b.b'", {"name": "abcbd"}, True),  # two arguments: a Java regex, found
    ("name LIKE 'a%' ESCAPE '!'", {"name": "abc"}, True),
    ("name LIKE 'a!%' ESCAPE '!'", {"name": "abc"}, False),
    ("id IN (1, 2, 3)", {"id": 2}, True),
    ("id NOT BETWEEN 1 AND 3", {"id": 4}, True),
    ("CASE WHEN id > 1 THEN 'many' ELSE 'one' END", {"id": 1}, "one"),
    ("CASE id WHEN 1 THEN 'x' WHEN 2 THEN 'y' END", {"id": 3}, None),
    ("CAST(price AS INT)", {"price": Decimal("9.99")}, 9),
    ("CAST(price AS DECIMAL(10, 1))", {"price": Decimal("9.95")}, "10.0"),
    ("CAST(id AS STRING) || 'x'", {"id": 5}, "5x"),
    ("UPPER(name) || LOWER('AB')", {"name": "xé"}, "XÉab"),
    ("CHAR_LENGTH(name)", {"name": "a🔑"}, 3),  # UTF-16 units, as Java counts
    ("SUBSTRING(name FROM 2 FOR 3)", {"name": "abcdef"}, "bcd"),
    ("SUBSTR(name, -2)", {"name": "abcdef"}, "ef"),
    ("TRIM(name)", {"name": "  a b  "}, "a b"),
    ("REGEXP_REPLACE(name, '([a-z])([0-9])', '$2$1')", {"name": "a1b2"}, "1a2b"),
    ("POSITION('c' IN name)", {"name": "abc"}, 3),
    ("COALESCE(a, b, 'z')", {"a": None, "b": None}, "z"),
    ("IF(a > 1, 'big', 'small')", {"a": 2}, "big"),
    ("ROUND(price, 1)", {"price": Decimal("2.45")}, "2.5"),
    ("YEAR(d) * 100 + MONTH(d)", {"d": "2024-03-05 10:00:00"}, 202403),
    ("EXTRACT(HOUR FROM ts)", {"ts": "2024-03-05 10:11:12.5Z"}, 10),
    ("__schema_name__ || '.' || __table_name__", {}, "app.orders"),
    ("__namespace_name__ || '.' || __schema_name__", {}, "null.app"),
    ("__data_event_type__", {}, "+I"),
])
def test_expressions(text: str, row: dict[str, Any], want: Any) -> None:
    got = ev(text, **row)
    assert (format(got, "f") if type(got).__name__ == "Decimal" else got) == want


@pytest.mark.parametrize(("text", "message"), [
    ("NOW()", "replay after a failure"),
    ("CURRENT_TIMESTAMP", "replay after a failure"),
    ("UUID()", "replay after a failure"),
    ("NOPE(a)", "unknown function NOPE()"),
    ("UPPER(a, b)", "UPPER() takes 1 arguments, not 2"),
    ("a +", "expected a value"),
    ("a ? b", "unexpected character"),
])
def test_expressions_that_are_refused(text: str, message: str) -> None:
    with pytest.raises(ExpressionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        compile_node(parse_expression(text))


def test_division_by_zero_stops_the_sink_naming_table_and_position() -> None:
    t = Transformer((RuleSpec("app.orders", r"\*, amount / qty AS unit"),))
    with pytest.raises(SinkError, match=r"app\.orders .* binlog g1#2: column unit: division"):
        _apply(t, _record("+I", after={"id": 1, "amount": 10, "qty": 0}, pos="g1#2"))


def _record(op: str, before: Any = None, after: Any = None, pk: Any = None,
            pos: str = "g#1") -> bytes:
    row = after if after is not None else before
    return orjson.dumps({"v": 1, "op": op, "db": "app", "table": "orders",
                         "pk": pk or {"id": row["id"]}, "before": before, "after": after,
                         "ts_ms": 7, "pos": pos})


def _parsed(value: bytes | None) -> Any:
    return None if value is None else orjson.loads(value)


def _apply(t: Transformer, raw: bytes) -> bytes | None:
    """The record as the rule makes it, decoded once as the serdes do, written back as JSON."""
    record = t.apply(decode_full_record(raw))
    return None if record is None else msgspec.json.encode(record)


def test_flink_cdc_metadata_example() -> None:
    """TransformE2eITCase: `\\*, __namespace_name__ || '.' || __schema_name__ || '.' ||
    __table_name__ AS identifier_name, __data_event_type__ AS type`: the update's before is
    `null.<db>.TABLEALPHA, -U`, its after `..., +U`; a delete's row `..., -D`."""
    rule = RuleSpec("app.orders", r"\*, __namespace_name__ || '.' || __schema_name__ || '.' "
                    "|| __table_name__ AS identifier_name, __data_event_type__ AS type")
    t = Transformer((rule,))
    got = _parsed(_apply(t, _record("+U", {"id": 1009, "v": "8.1"}, {"id": 1009, "v": "100"})))
    assert got["before"] == {"id": 1009, "v": "8.1", "identifier_name": "null.app.orders",
                             "type": "-U"}
    assert got["after"] == {"id": 1009, "v": "100", "identifier_name": "null.app.orders",
                            "type": "+U"}
    got = _parsed(_apply(t, _record("-D", before={"id": 2011, "v": "x"})))
    assert (got["op"], got["before"]["type"], got["after"]) == ("-D", "-D", None)


def test_filter_turns_updates_into_inserts_and_deletes() -> None:
    t = Transformer((RuleSpec("app.orders", None, "amount >= 10"),))
    small, big = {"id": 1, "amount": 5}, {"id": 1, "amount": 20}
    assert _parsed(_apply(t, _record("+I", after=small))) is None
    moved_in = _parsed(_apply(t, _record("+U", small, big)))
    assert (moved_in["op"], moved_in["before"], moved_in["after"]) == ("+I", None, big)
    stays = _parsed(_apply(t, _record("+U", big, {"id": 1, "amount": 30})))
    assert stays["op"] == "+U"
    moved_out = _parsed(_apply(t, _record("+U", big, small)))
    assert (moved_out["op"], moved_out["before"], moved_out["after"]) == ("-D", big, None)
    assert _parsed(_apply(t, _record("-D", before=small))) is None
    # a rewritten record keeps naming its typed layout (include-schema needs it)
    named = orjson.loads(_record("+U", small, big))
    named = {**{k: named[k] for k in ("v", "op", "db", "table")}, "layout": "ab12",
             **{k: named[k] for k in ("pk", "before", "after", "ts_ms", "pos")}}
    rewritten = _apply(t, orjson.dumps(named))
    assert rewritten is not None and b'"layout":"ab12"' in rewritten


def test_soft_delete_writes_the_deleted_row_as_an_insert() -> None:
    t = Transformer((RuleSpec("app.orders", r"\*, __data_event_type__ AS op_type",
                              "amount >= 10", soft_delete=True),))
    got = _parsed(_apply(t, _record("-D", before={"id": 1, "amount": 20})))
    assert (got["op"], got["after"]) == ("+I", {"id": 1, "amount": 20, "op_type": "-D"})
    # an update out of the filter is a delete of `before`, so it is kept the same way
    got = _parsed(_apply(t, _record("+U", {"id": 1, "amount": 20}, {"id": 1, "amount": 1})))
    assert (got["op"], got["after"]) == ("+I", {"id": 1, "amount": 20, "op_type": "-U"})


def test_projection_copies_source_values_byte_for_byte_and_replaces_by_name() -> None:
    t = Transformer((RuleSpec("app.orders", r"\*, UPPER(name) AS name, price * 2 AS dbl"),))
    raw = (b'{"v":1,"op":"+I","db":"app","table":"orders","pk":{"id":1},"before":null,'
           b'"after":{"id":1,"name":"a\\u00e9","price":0.50,"big":18446744073709551615},'
           b'"ts_ms":7,"pos":"g#1"}')
    got = _apply(t, raw)
    assert got is not None
    assert b'"after":{"id":1,"name":"A\xc3\x89","price":0.50,"big":18446744073709551615,' \
           b'"dbl":1.00}' in got


def test_a_projection_that_drops_the_key_stops_the_sink() -> None:
    t = Transformer((RuleSpec("app.orders", "amount"),))
    with pytest.raises(SinkError, match=r"does not keep the key column\(s\) \['id'\]"):
        _apply(t, _record("+I", after={"id": 1, "amount": 5}))


def test_first_matching_rule_wins_and_other_tables_pass_unchanged() -> None:
    t = Transformer((RuleSpec("app.orders", "id"), RuleSpec(r"app.\.*", r"\*, 1 AS one")))
    assert _parsed(_apply(t, _record("+I", after={"id": 1, "x": 2})))["after"] == {"id": 1}
    other = _record("+I", after={"id": 1})
    assert _apply(t, other.replace(b'"table":"orders"', b'"table":"items"')) is not None
    untouched = Transformer((RuleSpec("shop.x", "id"),))
    decoded = decode_full_record(other)
    assert untouched.apply(decoded) is decoded


def test_upsert_serde_tombstones_a_row_that_leaves_the_filter() -> None:
    serde = SinkSerde(lambda db, t: ("out",), UpsertOptions(False, False, (RuleSpec("app.orders", r"\*, amount * 2 AS twice", "amount >= 10"),)))
    out: list[Any] = []
    serde.add(out, b'{"id":1}', _record("+I", after={"id": 1, "amount": 20}))
    serde.add(out, b'{"id":1}', _record("+U", {"id": 1, "amount": 20}, {"id": 1, "amount": 5}))
    serde.add(out, b'{"id":2}', _record("+I", after={"id": 2, "amount": 5}))
    assert [(m[1], m[2]) for m in out] == [
        (b'{"id":1}', b'{"id":1,"amount":20,"twice":40}'), (b'{"id":1}', None)]


def test_rule_compiles_selector_and_expressions_once() -> None:
    rule = Rule(RuleSpec(r"app.order_[0-9]+", "id, name", "id > 0"))
    assert rule.selector.matches("app", "order_12") and not rule.selector.matches("app", "x")
    assert rule.row(b'{"id":1,"name":"n","x":1}', META) == (b'{"id":1,"name":"n"}', True)


def test_change_events_carry_the_projected_rows() -> None:
    """`type: kafka`: Debezium JSON events of a transformed table, as Flink CDC's Kafka sink
    writes the transformed schema: computed columns in `before`/`after`, a row leaving the
    filter as a delete event."""
    from cdc_ingest.formats.change_events import EventSerde  # noqa: PLC0415
    from cdc_ingest.formats.event_routing import EventOptions  # noqa: PLC0415
    from cdc_ingest.routing.routes import Router  # noqa: PLC0415

    serde = EventSerde(Router([]), EventOptions(), False,
                       (RuleSpec("app.orders", "id, amount * 2 AS twice", "amount >= 10"),))
    out: list[Any] = []
    serde.add(out, b'{"id":1}', _record("+I", after={"id": 1, "amount": 20, "x": 1}))
    serde.add(out, b'{"id":1}', _record("+U", {"id": 1, "amount": 20, "x": 1},
                                        {"id": 1, "amount": 5, "x": 1}))
    assert [(m[1], m[2]) for m in out] == [
        (b'{"TableId":"app.orders","id":1}',
         b'{"before":null,"after":{"id":1,"twice":40},"op":"c",'
         b'"source":{"db":"app","table":"orders"}}'),
        (b'{"TableId":"app.orders","id":1}',
         b'{"before":{"id":1,"twice":40},"after":null,"op":"d",'
         b'"source":{"db":"app","table":"orders"}}')]


def test_op_ts_is_the_binlog_time_and_zero_for_snapshot_rows() -> None:
    """Flink CDC's `metadata.list: op_ts` with `projection: \\*, op_ts AS opts`."""
    t = Transformer((RuleSpec("app.orders", r"\*, op_ts AS opts", "op_ts >= 0",
                              metadata=("op_ts",)),))
    streamed = _parsed(_apply(t, _record("+I", after={"id": 1}, pos="g#1")))
    snapshot = _parsed(_apply(t, _record("+I", after={"id": 2}, pos="snapshot")))
    assert streamed["after"] == {"id": 1, "opts": 7}
    assert snapshot["after"] == {"id": 2, "opts": 0}
    # without metadata.list, op_ts is a column like any other
    plain = Transformer((RuleSpec("app.orders", r"\*, op_ts AS opts"),))
    assert _parsed(_apply(plain, _record("+I", after={"id": 3, "op_ts": 5})))["after"] == {
        "id": 3, "op_ts": 5, "opts": 5}


def test_verify_leaves_op_ts_columns_out_and_accepts_either_event_type() -> None:
    from cdc_ingest.verify.expect import transformed  # noqa: PLC0415

    rule = Rule(RuleSpec("app.orders", r"\*, op_ts AS opts, __data_event_type__ AS t",
                         "amount > 1", metadata=("op_ts",)))
    assert transformed(rule, "app.orders", {"id": 1, "amount": 2}) == (
        {"id": 1, "amount": 2, "t": "+I"}, {"id": 1, "amount": 2, "t": "+U"})
    assert transformed(rule, "app.orders", {"id": 1, "amount": 0}) is None


def test_metadata_list_takes_op_ts_only() -> None:
    from tests.unit.test_config import minimal  # noqa: PLC0415
    from tests.unit.test_config_errors import problems_of  # noqa: PLC0415

    found = problems_of(minimal(source={"metadata.list": "op_ts,row_kind"}))
    assert "row_kind" in found["source.metadata.list"].message
    assert found["source.metadata.list"].fix.startswith("use op_ts")


def test_an_unreadable_expression_is_quoted_as_written() -> None:
    from cdc_ingest.transform.lexer import ExpressionError  # noqa: PLC0415
    from cdc_ingest.transform.parse import parse_projection  # noqa: PLC0415

    with pytest.raises(ExpressionError) as caught:
        parse_projection("\\*, UPPER(name AS up")
    assert str(caught.value) == "expected ')', found 'AS' in `\\*, UPPER(name AS up`"


def test_a_record_of_another_changelog_version_is_refused_with_a_transform_too() -> None:
    # the transform once re-wrote the record with this version's "v" before the check
    from cdc_ingest.formats.change_events import EventSerde  # noqa: PLC0415
    from cdc_ingest.formats.event_routing import EventOptions  # noqa: PLC0415
    from cdc_ingest.model.changelog import ChangelogVersionError  # noqa: PLC0415
    from cdc_ingest.routing.routes import Router  # noqa: PLC0415

    rules = (RuleSpec("app.orders", r"\*, 1 AS one"),)
    future = _record("+I", after={"id": 1}).replace(b'"v":1', b'"v":2')
    for serde in (SinkSerde(lambda db, table: ("t",), UpsertOptions(False, False, rules)),
                  EventSerde(Router([]), EventOptions(), False, rules)):
        with pytest.raises(ChangelogVersionError, match="version 2"):
            serde.add([], b'{"id":1}', future)
