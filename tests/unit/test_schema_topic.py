"""The schema topic's records (cdc_ingest/model/schema_topic.py) as docs/changelog-format.md
spells them, and the one reader capture, the sink and verify share."""

from __future__ import annotations

from dataclasses import dataclass

from cdc_ingest.model.schema_topic import (
    encode,
    fold,
    layout_key,
    layout_value,
    table_key,
    table_value,
)


@dataclass
class Msg:
    key: bytes | None
    value: bytes | None


def test_a_table_record_has_the_documented_fields_in_order() -> None:
    # the example of docs/changelog-format.md, "Schema topic", byte for byte
    value = table_value("shop", "orders", {
        "key": {"columns": ["id"], "classes": ["int"]},
        "columns": [["id", "int"], ["note", "string"], ["total", "decimal:2"]],
        "ddl": "ALTER TABLE orders ADD COLUMN note TEXT", "action": "alter",
        "pos": "binlog.000003:1234", "ts_ms": 1700000000000})
    assert encode(value) == (
        b'{"v":1,"db":"shop","table":"orders",'
        b'"key":{"columns":["id"],"classes":["int"]},'
        b'"columns":[["id","int"],["note","string"],["total","decimal:2"]],'
        b'"ddl":"ALTER TABLE orders ADD COLUMN note TEXT","action":"alter",'
        b'"pos":"binlog.000003:1234","ts_ms":1700000000000}')
    assert table_key("shop", "orders") == b'{"db":"shop","table":"orders"}'


def test_fields_not_set_are_null_and_later_ones_keep_their_order() -> None:
    value = table_value("shop", "t", {"pos": "p", "ts_ms": 1, "pinned": {"columns": ["id"],
                                                                       "layout": "x"}})
    assert encode(value) == (b'{"v":1,"db":"shop","table":"t","key":null,"columns":null,'
                             b'"ddl":null,"action":null,"pos":"p","ts_ms":1,'
                             b'"pinned":{"columns":["id"],"layout":"x"}}')


def test_a_layout_record_as_documented() -> None:
    column = {"name": "id", "type": "INT", "nullable": False, "default": None,
              "comment": None}
    assert encode(layout_value("shop", "orders", "9c1f0e7d2a4b6c80", [column])) == (
        b'{"v":1,"db":"shop","table":"orders","layout":"9c1f0e7d2a4b6c80",'
        b'"columns":[{"name":"id","type":"INT","nullable":false,"default":null,'
        b'"comment":null}]}')
    assert layout_key("shop", "orders", "9c1f0e7d2a4b6c80") == (
        b'{"db":"shop","table":"orders","layout":"9c1f0e7d2a4b6c80"}')


def _table(db: str, table: str, **fields: object) -> Msg:
    return Msg(table_key(db, table), encode(table_value(db, table, {"pos": "p", "ts_ms": 1,
                                                                    **fields})))


def test_the_reader_keeps_each_tables_last_record_and_every_layout() -> None:
    stamp = {"name": "at", "type": "TIMESTAMP_LTZ(3)", "nullable": True, "default": None,
             "comment": None}
    plain = {"name": "id", "type": "INT", "nullable": False, "default": None,
             "comment": None}
    layout = Msg(layout_key("shop", "t", "L1"),
                 encode(layout_value("shop", "t", "L1", [plain, stamp])))
    messages = [
        _table("shop", "t", action="create"),
        layout,
        Msg(layout_key("shop", "t", "L1"), None),  # a layout is never deleted
        _table("shop", "t", action="alter", pinned={"columns": ["id"], "layout": "L1"}),
        _table("shop", "gone"),
        Msg(table_key("shop", "gone"), None),  # a tombstone forgets the table
        Msg(None, b"{}"),  # no key: not a record of this topic
    ]
    read = fold(messages)
    assert set(read.tables) == {("shop", "t")}
    assert read.tables[("shop", "t")]["action"] == "alter"
    assert set(read.layouts) == {"L1"}
    assert read.pinned("shop", "t") == ["id"] and read.pinned("shop", "x") is None
    assert read.pins() == {("shop", "t"): ["id"]}
    assert read.timestamps("shop", "t") == frozenset({"at"})


def test_a_table_named_layout_is_a_table() -> None:
    # verify once told layout records by the bytes '"layout"' in the key
    read = fold([_table("layout", "layout", pinned={"columns": ["a"], "layout": "L"})])
    assert read.pins() == {("layout", "layout"): ["a"]} and read.layouts == {}


def test_a_later_read_folds_into_an_earlier_one() -> None:
    first = fold([_table("shop", "a")])
    fold([_table("shop", "b"), Msg(table_key("shop", "a"), None)], into=first)
    assert set(first.tables) == {("shop", "b")}
