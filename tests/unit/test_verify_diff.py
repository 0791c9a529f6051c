"""verify's comparison: exact JSON values, and a topic against the rows routed to it."""

from __future__ import annotations

import contextlib
from typing import Any

from cdc_ingest.config import parse_pipeline
from cdc_ingest.config.sink_topics import topics_of
from cdc_ingest.verify.diff import TopicCheck, TopicResult
from cdc_ingest.verify.report import summary_line, topic_lines
from cdc_ingest.verify.topics import canonical_key
from cdc_ingest.verify.values import Float32Num, Float64Num, Num, dumps, parse, same


def key(**cols: Any) -> bytes:
    return dumps(cols)


def topic(*entries: tuple[dict[str, Any], dict[str, Any]]) -> dict[bytes, bytes]:
    """A materialized topic from (key, value) pairs, values as the sink writes them."""
    return {canonical_key(dumps(k)): dumps(v) for k, v in entries}


# -- values ------------------------------------------------------------------------------------


def test_decimals_compare_as_text() -> None:
    assert same(Num("0.50"), parse(b"0.50"))
    assert not same(Num("0.50"), parse(b"0.5"))
    assert not same(Num("0.50"), "0.50")  # a string is not a number
    assert same(12345, parse(b"12345"))
    assert not same(12345, parse(b"12345.0"))


def test_types_are_strict() -> None:
    assert not same(True, 1) and not same(1, True) and not same(0, False)
    assert not same(None, "") and not same("", None)
    assert not same([], {}) and not same(["x"], ["x", "y"])
    assert same({"a": [1, None]}, parse(b'{"a":[1,null]}'))
    assert not same({"a": 1}, parse(b'{"a":1,"b":2}'))


def test_floats_compare_by_value() -> None:
    assert same(Float64Num("1e+20"), parse(b"1E20"))
    assert same(Float64Num("1.0"), parse(b"1"))
    assert not same(Float64Num("0.1"), parse(b"0.10000000000000002"))
    # FLOAT: the same 32-bit value, and no longer than the shortest text
    assert same(Float32Num("1.1"), parse(b"1.1"))
    assert same(Float32Num("3.4028235e+38"), parse(b"3.4028235E38"))
    assert not same(Float32Num("1.1"), parse(b"1.100000023841858"))  # widened, not shortest
    assert not same(Float32Num("1.1"), parse(b"1.2"))
    assert not same(Float32Num("1.0"), "1.0")


def test_keys_are_canonical_json() -> None:
    assert canonical_key(b'{ "id" : 42 }') == b'{"id":42}'
    assert canonical_key(b'{"k2":1,"k1":"x"}') == b'{"k2":1,"k1":"x"}'  # key order kept
    assert canonical_key(b'{"d":0.50}') == b'{"d":0.50}'
    assert canonical_key(b"not json") == b"not json"
    assert canonical_key(None) == b"null"


def test_integers_beyond_64_bits_are_exact_in_keys_values_and_reports() -> None:
    """A DECIMAL(65,0) holds integers orjson cannot write: verify keeps their exact text
    (it crashed rendering such a row as extra)."""
    wide, negative = 10**30 + 7, -(10**25)
    assert canonical_key(b'{"k": 1000000000000000000000000000007}') == \
        b'{"k":1000000000000000000000000000007}'
    assert key(k=wide) == b'{"k":1000000000000000000000000000007}'
    assert dumps([negative, 2**64 - 1, Num("1.50")]) == \
        b'[-10000000000000000000000000,18446744073709551615,1.50]'
    assert same(wide, parse(b"1000000000000000000000000000007"))
    assert not same(wide, parse(b"1000000000000000000000000000008"))
    c = check(topic(({"k": wide}, {"k": wide, "v": negative}),
                    ({"k": wide + 1}, {"k": wide + 1, "v": negative})))
    c.row("db.t", key(k=wide), ("k",), {"k": wide, "v": negative})
    result = c.finish()
    assert result.counts == {"missing": 0, "extra": 1, "differing": 0, "conflicts": 0}
    assert result.samples["extra"][0].key == '{"k":1000000000000000000000000000008}'
    assert result.samples["extra"][0].detail == ('mysql (absent) | topic '
        '{"k":1000000000000000000000000000008,"v":-10000000000000000000000000}')


# -- one topic ---------------------------------------------------------------------------------


def check(latest: dict[bytes, bytes] | None, tables: tuple[str, ...] = ("db.t",),
          except_key: bool = False, max_diffs: int = 10) -> TopicCheck:
    return TopicCheck("orders", tables, latest, except_key, max_diffs)


def test_equal_topic() -> None:
    c = check(topic(({"id": 1}, {"id": 1, "d": Num("0.50")}), ({"id": 2}, {"id": 2, "d": None})))
    c.row("db.t", key(id=1), ("id",), {"id": 1, "d": Num("0.50")})
    c.row("db.t", key(id=2), ("id",), {"id": 2, "d": None})
    result = c.finish()
    assert result.ok and result.mysql_rows == 2 and result.topic_keys == 2
    assert list(topic_lines(result)) == [
        "topic orders <- db.t", "  MySQL rows 2, topic keys 2: equal"]


def test_a_column_left_out_is_a_null_only_where_the_sink_leaves_nulls_out() -> None:
    latest = topic(({"id": 1}, {"id": 1}), ({"id": 2}, {"id": 2}))
    for nulls_left_out, differing in ((True, 1), (False, 2)):
        c = TopicCheck("orders", ("db.t",), dict(latest), False, nulls_left_out=nulls_left_out)
        c.row("db.t", key(id=1), ("id",), {"id": 1, "d": None})
        c.row("db.t", key(id=2), ("id",), {"id": 2, "d": Num("0.50")})  # not null: differs
        assert c.finish().counts["differing"] == differing


def test_missing_extra_and_differing_keys() -> None:
    c = check(topic(({"id": 1}, {"id": 1, "s": "new", "d": Num("0.5")}),
                    ({"id": 9}, {"id": 9, "s": "gone", "d": None})))
    c.row("db.t", key(id=1), ("id",), {"id": 1, "s": "paid", "d": Num("0.50")})
    c.row("db.t", key(id=2), ("id",), {"id": 2, "s": "new", "d": None})
    result = c.finish()
    assert not result.ok
    assert result.counts == {"missing": 1, "extra": 1, "differing": 1, "conflicts": 0}
    differing = result.samples["differing"][0]
    assert differing.key == '{"id":1}' and differing.table == "db.t"
    assert differing.detail == 's: mysql "paid" | topic "new"; d: mysql 0.50 | topic 0.5'
    assert result.samples["missing"][0].key == '{"id":2}'
    assert result.samples["missing"][0].detail.endswith("| topic (absent)")
    assert result.samples["extra"][0].key == '{"id":9}'
    assert result.samples["extra"][0].detail == \
        'mysql (absent) | topic {"id":9,"s":"gone","d":null}'
    lines = list(topic_lines(result))
    assert lines[1] == "  MySQL rows 2, topic keys 2: DIFFERENT"
    assert lines[2] == "  missing 1, extra 1, differing 1, conflicts 0"
    assert any(line.startswith('  differing  {"id":1} (db.t): s: mysql "paid"') for line in lines)


def test_columns_only_on_one_side_are_shown() -> None:
    c = check(topic(({"id": 1}, {"id": 1, "b": 2})))
    c.row("db.t", key(id=1), ("id",), {"id": 1, "a": 1})
    detail = c.finish().samples["differing"][0].detail
    assert detail == "a: mysql 1 | topic (absent); b: mysql (absent) | topic 2"


def test_except_key_compares_the_value_without_key_columns() -> None:
    latest = topic(({"k1": "x", "k2": 1}, {"v": True}))
    c = check(latest, except_key=True)
    c.row("db.t", key(k1="x", k2=1), ("k1", "k2"), {"k1": "x", "k2": 1, "v": True})
    assert c.finish().ok
    c = check(topic(({"id": 1}, {"id": 1, "v": True})), except_key=True)
    c.row("db.t", key(id=1), ("id",), {"id": 1, "v": True})
    assert c.finish().counts["differing"] == 1  # the topic value still has the key


def test_sharded_tables_are_compared_as_their_union() -> None:
    latest = topic(({"id": 1}, {"id": 1, "s": "a"}), ({"id": 2}, {"id": 2, "s": "b"}))
    c = check(latest, tables=("db.order_1", "db.order_2"))
    c.row("db.order_1", key(id=1), ("id",), {"id": 1, "s": "a"})
    c.row("db.order_2", key(id=2), ("id",), {"id": 2, "s": "b"})
    result = c.finish()
    assert result.ok and result.rows == {"db.order_1": 1, "db.order_2": 1}
    assert "(db.order_1: 1, db.order_2: 1)" in list(topic_lines(result))[1]


def test_a_key_in_two_shards_is_a_conflict() -> None:
    c = check(topic(({"id": 1}, {"id": 1, "s": "a"})), tables=("db.order_1", "db.order_2"))
    c.row("db.order_1", key(id=1), ("id",), {"id": 1, "s": "a"})
    c.row("db.order_2", key(id=1), ("id",), {"id": 1, "s": "b"})
    result = c.finish()
    assert result.counts == {"missing": 0, "extra": 0, "differing": 0, "conflicts": 1}
    sample = result.samples["conflicts"][0]
    assert sample.key == '{"id":1}'
    assert sample.detail == "both db.order_1 and db.order_2 have a row with it"


def test_missing_topic_and_max_diffs() -> None:
    c = check(None, max_diffs=2)
    for i in range(5):
        c.row("db.t", key(id=i), ("id",), {"id": i})
    result = c.finish()
    assert not result.topic_exists and result.counts["missing"] == 5
    assert len(result.samples["missing"]) == 2
    lines = list(topic_lines(result))
    assert lines[1] == "  MySQL rows 5, topic keys 0 (topic does not exist): DIFFERENT"
    assert lines[-1].strip() == "... and 3 more missing"


def test_a_value_that_is_not_json_differs() -> None:
    c = check({key(id=1): b"{broken"})
    c.row("db.t", key(id=1), ("id",), {"id": 1})
    result = c.finish()
    assert result.counts["differing"] == 1
    assert result.samples["differing"][0].detail == 'mysql {"id":1} | topic "{broken"'


def test_problems_make_the_topic_unverified() -> None:
    c = check({})
    c.problem("db.t has no primary key and no source.tables.key-columns")
    result = c.finish()
    assert not result.ok
    assert "  not verified: db.t has no primary key" in "\n".join(topic_lines(result))


def test_summary() -> None:
    good = TopicResult("a", ("db.a",), rows={"db.a": 3})
    assert summary_line([good]) == "verify: 1 topic(s) from 1 table(s) equal to MySQL (3 rows)"
    bad = TopicResult("b", ("db.b",), rows={"db.b": 1})
    bad.counts["missing"] = 1
    assert summary_line([good, bad]) == (
        "verify: 1 of 2 topic(s) differ from MySQL "
        "(1 missing, 0 extra, 0 differing, 0 conflicts)")


def test_topics_of_follows_fan_out_and_merges() -> None:
    defn = parse_pipeline("""
source: {type: mysql, hostname: h, username: u, password: p, tables: 'app.\\.*', server-id: 1}
sink: {type: upsert-kafka, properties.bootstrap.servers: 'k:9092'}
route:
  - {source-table: 'app.order_[0-9]+', sink-table: orders}
  - {source-table: app.order_1, sink-table: orders_archive}
""")
    tables = [("app", "order_1"), ("app", "order_2"), ("app", "users")]
    assert topics_of(defn, tables) == {
        "orders": ["app.order_1", "app.order_2"],
        "orders_archive": ["app.order_1"],
        "app.users": ["app.users"],
    }


def test_a_column_added_later_stands_for_its_default_where_a_message_lacks_it() -> None:
    c = check(topic(({"id": 1}, {"id": 1, "s": "a"}), ({"id": 2}, {"id": 2, "s": "b"}),
                    ({"id": 3}, {"id": 3, "s": "c"}), ({"id": 4}, {"id": 4, "s": "d"})))
    c.columns_added("db.t", {"s": None, "d": Num("1.50"), "n": None})  # "x": no default
    c.row("db.t", key(id=1), ("id",), {"id": 1, "s": "a", "d": Num("1.50"), "n": None})
    c.row("db.t", key(id=2), ("id",), {"id": 2, "s": "b", "d": Num("2.00"), "n": None})
    c.row("db.t", key(id=3), ("id",), {"id": 3, "s": "c", "d": Num("1.50"), "n": 7})
    c.row("db.t", key(id=4), ("id",), {"id": 4, "s": "d", "d": Num("1.50"), "n": None,
                                       "x": 0})
    result = c.finish()
    assert result.counts["differing"] == 3, result.samples
    assert [s.key for s in result.samples["differing"]] == ['{"id":2}', '{"id":3}', '{"id":4}']
    assert result.samples["differing"][0].detail.startswith("d: mysql 2.00 | topic (absent)")


def test_a_key_already_compact_is_kept_only_where_the_full_reading_agrees() -> None:
    """canonical_key's shortcut (a one-member object of a plain string or a short canonical
    integer is its own form) against the full reading, on keys near that form."""
    import random  # noqa: PLC0415
    import re  # noqa: PLC0415

    import orjson  # noqa: PLC0415

    from cdc_ingest.verify import topics  # noqa: PLC0415

    def full(raw: bytes) -> bytes:
        with contextlib.suppress(orjson.JSONDecodeError):
            found = orjson.loads(raw)
            if type(found) is dict and all(type(v) in topics._PLAIN for v in found.values()):
                return dumps(found)
        try:
            return dumps(parse(raw))
        except ValueError:
            return raw

    rng = random.Random(11)
    alphabet = b' !"#[\\]~az09-:{},.\x7f\x00\xc3\xa9eE+'
    shortcuts = 0
    for _ in range(50_000):
        base = rng.choice([b'{"id":%d}' % rng.randrange(-10**19, 10**19), b'{"k":"a b"}',
                           b'{"id":-0}', b'{"id":007}', b'{"":""}', b'{"id":1.0}'])
        raw = bytearray(base)
        for _ in range(rng.randrange(3)):
            raw[rng.randrange(len(raw))] = rng.choice(alphabet)
        if re.fullmatch(topics._COMPACT, bytes(raw)):
            shortcuts += 1
        assert canonical_key(bytes(raw)) == full(bytes(raw)), bytes(raw)
    assert shortcuts > 5_000
    assert not topics._compact(b'{"id":12345678901234567890}')  # beyond 64 bits: read fully
