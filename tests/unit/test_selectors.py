"""Flink CDC table selector syntax: ``,`` alternatives, ``.`` separator, ``\\.`` regex dot."""

from __future__ import annotations

import pytest

from cdc_ingest.errors import ConfigError
from cdc_ingest.routing import TableSelector


@pytest.mark.parametrize(("text", "db", "table", "expected"), [
    (r"shop.\.*", "shop", "orders", True),
    (r"shop.\.*", "shop", "", True),
    (r"shop.\.*", "shop2", "orders", False),      # full match on the database
    (r"shop.\.*", "myshop", "orders", False),
    ("app.order_[0-9]+", "app", "order_17", True),
    ("app.order_[0-9]+", "app", "order_x", False),
    ("app.order_[0-9]+", "app", "order_17_old", False),  # full match on the table
    ("app.orders", "app", "ordersX", False),
    ("app.orders", "App", "orders", False),        # case-sensitive
    ("app.orders", "app", "Orders", False),
    (r"shop.\.*, app.order_[0-9]+", "app", "order_2", True),
    (r"shop.\.*, app.order_[0-9]+", "shop", "x", True),
    (r"shop.\.*, app.order_[0-9]+", "app", "users", False),
    (r"db[1-2].[app|web]order_\.*", "db1", "aorder_x", True),
    ("(app|web).users", "web", "users", True),
    ("app|web.users", "app", "users", True),      # alternation stays inside the db part
    (r"db.user\.", "db", "users", True),          # \. is "any character"
    (r"db.user\.", "db", "user", False),
    (r"db.t{1\,3}", "db", "ttt", True),           # \, is a literal comma inside the regex
    (r"db.t\d+", "db", "t42", True),              # other escapes reach the regex untouched
    (r"db.a\$b", "db", "a$b", True),
    ("  shop . orders  ,", "shop", "orders", True),  # whitespace and empty alternatives
])
def test_matches(text: str, db: str, table: str, expected: bool) -> None:
    assert TableSelector.parse(text).matches(db, table) is expected


def test_literal_dot_does_not_match_other_characters() -> None:
    # The unescaped dot separates; it is never "any character" between db and table.
    selector = TableSelector.parse("a.b")
    assert selector.matches("a", "b")
    assert selector.pattern.fullmatch("aXb") is None


def test_combined_pattern_numbers_groups_across_alternatives() -> None:
    selector = TableSelector.parse(r"(a)_\.*.t, (b).(u)")
    assert selector.group_count == 3
    match = selector.match_groups("b", "u")
    assert match is not None and match.group(2, 3) == ("b", "u")


def test_text_equality_and_str() -> None:
    assert TableSelector.parse("a.b") == TableSelector.parse("a.b")
    assert str(TableSelector.parse(r"a.\.*")) == r"a.\.*"


def test_cache_is_bounded_and_consistent() -> None:
    selector = TableSelector.parse(r"db.t_\.*")
    for i in range(5000):
        assert selector.matches("db", f"t_{i}")
    assert len(selector._cache) <= 4096
    assert selector.matches("db", "t_1") and not selector.matches("db", "u_1")


@pytest.mark.parametrize(("text", "message"), [
    ("shop.*", "'shop.*' is not a valid regular expression (nothing to repeat)"),
    ("shop", "'shop' is not of the form <database>.<table>"),
    ("a.b.c", "'a.b.c' is not of the form <database>.<table>"),
    ("shop.", "'shop.' is not of the form <database>.<table>"),
    (".orders", "'.orders' is not of the form <database>.<table>"),
    ("", "selects no table: the value is empty"),
    (" , ", "selects no table: the value is empty"),
    ("a.[b", "'a.[b' is not a valid regular expression (unterminated character set)"),
    ("a.b\\", "ends with a lone backslash"),
    ("(?P<x>a).b, (?P<x>c).d", "'(?P<x>a).b, (?P<x>c).d' is not a valid regular expression "
     "(redefinition of group name 'x' as group 2; was group 1)"),
])
def test_bad_selectors_name_the_option(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        TableSelector.parse(text, option="source.tables")
    (problem,) = caught.value.problems
    assert (problem.path, problem.message) == ("source.tables", message)
    assert "\\." in problem.fix
