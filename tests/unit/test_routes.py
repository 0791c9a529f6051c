"""Route rules: fan-out, FIRST_MATCH, replace-symbol, $n groups, unmatched tables, caching."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from cdc_ingest.errors import ConfigError
from cdc_ingest.routing import RouteMode, Router, RouteRule


@dataclass(frozen=True)
class Route:
    source_table: str
    sink_table: str
    replace_symbol: str | None = None


def router(*routes: Route, mode: RouteMode = RouteMode.ALL_MATCH) -> Router:
    return Router.from_defs(routes, mode)


def test_unmatched_table_goes_to_db_dot_table() -> None:
    assert router().sink_topics("shop", "customers") == ("shop.customers",)
    assert router(Route("app.orders", "o")).sink_topics("app", "users") == ("app.users",)


def test_merge_sharded_tables() -> None:
    r = router(Route("app.order_[0-9]+", "orders"))
    assert r.sink_topics("app", "order_1") == ("orders",)
    assert r.sink_topics("app", "order_22") == ("orders",)


def test_fan_out_to_every_matching_route_in_order() -> None:
    r = router(Route("db.(a|b)", "one"), Route("db.(b|c)", "two"), Route(r"db.\.*", "all"))
    assert r.sink_topics("db", "a") == ("one", "all")
    assert r.sink_topics("db", "b") == ("one", "two", "all")
    assert r.sink_topics("db", "z") == ("all",)


def test_first_match_takes_only_the_first_route() -> None:
    r = router(Route("db.(a|b)", "one"), Route("db.(b|c)", "two"), mode=RouteMode.FIRST_MATCH)
    assert r.sink_topics("db", "b") == ("one",)
    assert r.sink_topics("db", "c") == ("two",)
    assert r.sink_topics("db", "d") == ("db.d",)


def test_mode_accepts_its_text() -> None:
    assert Router([], "FIRST_MATCH").mode is RouteMode.FIRST_MATCH  # type: ignore[arg-type]


def test_two_routes_naming_one_topic_write_once() -> None:
    r = router(Route("db.a", "t"), Route(r"db.\.*", "t"))
    assert r.sink_topics("db", "a") == ("t",)


def test_replace_symbol_becomes_the_table_name() -> None:
    r = router(Route(r"inventory.\.*", "ods.<>_v1.<>", "<>"))
    assert r.sink_topics("inventory", "stock") == ("ods.stock_v1.stock",)


def test_replace_symbol_wins_over_group_syntax() -> None:
    # As in Flink CDC, a rule with a replace-symbol does not expand $n.
    rule = RouteRule.compile("db.(t)", "x_$1_<>", "<>")
    assert rule.target("db", "t") == "x_$1_t"


def test_group_references() -> None:
    r = router(Route("(shard_[0-9]+).(order|invoice)s?", "$2.from_$1"))
    assert r.sink_topics("shard_7", "orders") == ("order.from_shard_7",)
    assert r.sink_topics("shard_8", "invoice") == ("invoice.from_shard_8",)


def test_group_zero_is_the_whole_table_id() -> None:
    assert router(Route("db.(t)", "copy.$0")).sink_topics("db", "t") == ("copy.db.t",)


def test_groups_of_a_later_alternative() -> None:
    r = router(Route("(a).x, (b).(y)", "t_$1$2$3"))
    assert r.sink_topics("a", "x") == ("t_a",)        # unmatched groups are empty
    assert r.sink_topics("b", "y") == ("t_by",)


def test_results_are_cached_per_table() -> None:
    r = router(Route("db.a", "t"))
    first = r.sink_topics("db", "a")
    assert r.sink_topics("db", "a") is first


def test_bad_regex_names_the_route() -> None:
    with pytest.raises(ConfigError) as caught:
        router(Route("ok.ok", "t"), Route("db.(a", "t"))
    (problem,) = caught.value.problems
    assert problem.path == "route[1].source-table"
    assert "not a valid regular expression" in problem.message


def test_missing_group_names_the_sink_table() -> None:
    with pytest.raises(ConfigError) as caught:
        router(Route("db.a", "t_$1"))
    assert caught.value.problems[0].path == "route[0].sink-table"


@pytest.mark.parametrize(("sink_table", "symbol", "path"), [
    ("", None, "sink-table"), ("t", "", "replace-symbol"), ("a$b", None, "sink-table"),
])
def test_rule_problems_without_a_path_prefix(sink_table: str, symbol: str | None,
                                             path: str) -> None:
    with pytest.raises(ConfigError) as caught:
        RouteRule.compile("db.t", sink_table, symbol)
    assert caught.value.problems[0].path == path
