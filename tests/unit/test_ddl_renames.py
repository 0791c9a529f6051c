"""Which names a rename touches, and which of them hold a table after it (capture snapshots
those when captured: capture/table_ddl.py)."""

from __future__ import annotations

import pytest

from cdc_ingest.capture.ddl import action_of, arrivals, dropped_database, renames, tables_of


@pytest.mark.parametrize(("sql", "pairs"), [
    ("RENAME TABLE a TO b", [("a", "b")]),
    ("rename tables `a` to `b`, c TO d", [("a", "b"), ("c", "d")]),
    ("RENAME TABLE t TO t_old, t_new TO t", [("t", "t_old"), ("t_new", "t")]),
    ("ALTER TABLE a RENAME TO b", [("a", "b")]),
    ("ALTER TABLE a RENAME AS b", [("a", "b")]),
    ("ALTER TABLE a RENAME b", [("a", "b")]),
    ("ALTER TABLE a ADD COLUMN c INT, RENAME TO b", [("a", "b")]),
    ("ALTER TABLE a RENAME COLUMN x TO y", []),
    ("ALTER TABLE a RENAME INDEX i TO j", []),
    ("ALTER TABLE a RENAME KEY i TO j", []),
    ("ALTER TABLE a COMMENT 'x, rename to z'", []),
    ("DROP TABLE a", []),
])
def test_renames_names_old_and_new_in_order(sql: str, pairs: list[tuple[str, str]]) -> None:
    assert renames(sql, "db") == [(("db", a), ("db", b)) for a, b in pairs]
    assert (action_of(sql) == "rename") == bool(pairs)


def test_a_rename_across_databases_keeps_each_side_qualified() -> None:
    assert renames("RENAME TABLE `x`.`a` TO y.b", "db") == [(("x", "a"), ("y", "b"))]
    assert tables_of("RENAME TABLE `x`.`a` TO y.b", "db") == [("x", "a"), ("y", "b")]


def test_a_swap_touches_each_name_once_and_brings_tables_to_two() -> None:
    sql = "RENAME TABLE t TO t_old, t_new TO t"
    assert tables_of(sql, "db") == [("db", "t"), ("db", "t_old"), ("db", "t_new")]
    assert arrivals(sql, "db") == [("db", "t_old"), ("db", "t")]


def test_a_name_passed_through_is_not_an_arrival() -> None:
    assert arrivals("RENAME TABLE a TO tmp, b TO a, tmp TO b", "db") == [("db", "a"),
                                                                         ("db", "b")]


def test_alter_rename_is_a_rename_and_other_alters_are_not() -> None:
    assert action_of("ALTER TABLE a ADD COLUMN c INT, RENAME TO b") == "rename"
    assert action_of("ALTER TABLE a RENAME COLUMN x TO y") == "alter"
    assert tables_of("ALTER TABLE a RENAME TO b", "db") == [("db", "a"), ("db", "b")]


@pytest.mark.parametrize(("sql", "db"), [
    ("DROP DATABASE shop", "shop"),
    ("drop schema if exists `my db`", "my db"),
    ("/* x */ DROP DATABASE `a``b`", "a`b"),
    ("DROP TABLE shop", None),
    ("CREATE DATABASE shop", None),
])
def test_drop_database_names_the_database_it_drops(sql: str, db: str | None) -> None:
    assert dropped_database(sql) == db
