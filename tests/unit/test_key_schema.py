"""Key schemas: which type changes change a key's bytes, the binlog's key order, and the guard
that stops capture at a key change instead of leaving phantom keys (no services)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from cdc_ingest.capture.binlog_schema import ColumnSpec, FieldType
from cdc_ingest.capture.key_schema import (
    KeySchema,
    binlog_class,
    binlog_primary_key,
    catalog_class,
)
from cdc_ingest.capture.schema_guard import KeySchemaChanged, RekeyNeeded, SchemaGuard
from cdc_ingest.capture.typed_layout import layout_id
from cdc_ingest.errors import SourceError
from cdc_ingest.model.schema_topic import SchemaTopic, layout_value
from cdc_ingest.mysql import Column

T = FieldType


def _col(data_type: str, column_type: str = "", **kw: Any) -> Column:
    return Column("c", data_type, column_type or data_type, **kw)


# the same column as the binlog and as information_schema describe it
PAIRS = [
    (ColumnSpec("c", T.LONG), _col("int"), "int"),
    (ColumnSpec("c", T.LONGLONG, unsigned=True), _col("bigint", "bigint unsigned"), "int"),
    (ColumnSpec("c", T.YEAR), _col("year"), "int"),
    (ColumnSpec("c", T.TINY, as_boolean=True), _col("tinyint", "tinyint(1)"), "bool"),
    (ColumnSpec("c", T.NEWDECIMAL, precision=10, scale=2), _col("decimal", scale=2),
     "decimal:2"),
    (ColumnSpec("c", T.FLOAT), _col("float"), "float"),
    (ColumnSpec("c", T.DOUBLE), _col("double"), "double"),
    (ColumnSpec("c", T.DATE), _col("date"), "date"),
    (ColumnSpec("c", T.DATETIME2, fsp=3), _col("datetime", fsp=3), "datetime:3"),
    (ColumnSpec("c", T.TIMESTAMP2, fsp=0), _col("timestamp"), "timestamp:0"),
    (ColumnSpec("c", T.TIME2, fsp=6), _col("time", fsp=6), "time:6"),
    (ColumnSpec("c", T.VARCHAR, length=160, encoding="utf8"), _col("varchar"), "string"),
    (ColumnSpec("c", T.STRING, length=40, encoding="utf8"), _col("char"), "string"),
    (ColumnSpec("c", T.ENUM, length=1, labels=("a",)), _col("enum", "enum('a')"), "string"),
    (ColumnSpec("c", T.SET, length=1), _col("set", "set('a')"), "set"),
    (ColumnSpec("c", T.STRING, length=16, encoding="binary"),
     _col("binary", "binary(16)", octet_length=16), "binary:16"),
    (ColumnSpec("c", T.VARCHAR, length=16, encoding="binary"), _col("varbinary"), "binary"),
    (ColumnSpec("c", T.BLOB, length=2, encoding="utf8"), _col("text"), "string"),
    (ColumnSpec("c", T.BIT, bits=1), _col("bit", "bit(1)"), "bool"),
    (ColumnSpec("c", T.BIT, bits=12), _col("bit", "bit(12)"), "bit:12"),
    (ColumnSpec("c", T.JSON, length=4), _col("json"), "json"),
]


@pytest.mark.parametrize(("spec", "column", "klass"), PAIRS, ids=[p[2] for p in PAIRS])
def test_binlog_and_catalog_agree_on_each_key_class(spec: ColumnSpec, column: Column,
                                                    klass: str) -> None:
    assert binlog_class(spec) == klass
    assert catalog_class(column, tinyint1_as_boolean=True) == klass


def test_only_changes_that_respell_a_key_change_its_class() -> None:
    assert binlog_class(ColumnSpec("c", T.LONG)) == binlog_class(ColumnSpec("c", T.LONGLONG))
    assert binlog_class(ColumnSpec("c", T.VARCHAR, length=40, encoding="utf8")) == \
        binlog_class(ColumnSpec("c", T.VARCHAR, length=400, encoding="cp1252"))
    # "1.50" vs "1.500"; 0x00-padded to 4 vs 8 bytes; 5 vs "5"
    assert binlog_class(ColumnSpec("c", T.NEWDECIMAL, scale=2)) != \
        binlog_class(ColumnSpec("c", T.NEWDECIMAL, scale=3))
    assert binlog_class(ColumnSpec("c", T.STRING, length=4, encoding="binary")) != \
        binlog_class(ColumnSpec("c", T.STRING, length=8, encoding="binary"))
    assert binlog_class(ColumnSpec("c", T.LONG)) != \
        binlog_class(ColumnSpec("c", T.VARCHAR, encoding="utf8"))
    assert catalog_class(_col("tinyint", "tinyint(1)"), tinyint1_as_boolean=False) == "int"


def _table_map(names: list[str], simple: list[int], prefixed: dict[int, int]) -> Any:
    meta = SimpleNamespace(simple_primary_key_list=simple, primary_keys_with_prefix=prefixed)
    return SimpleNamespace(optional_metadata=meta,
                           columns=[SimpleNamespace(name=n) for n in names])


def test_the_binlog_key_comes_in_key_order_also_with_a_prefix_part() -> None:
    assert binlog_primary_key(_table_map(["a", "b", "c"], [2, 0], {})) == ("c", "a")
    assert binlog_primary_key(_table_map(["a", "b"], [], {1: 10, 0: 0})) == ("b", "a")
    assert binlog_primary_key(_table_map(["a", "b"], [], {})) == ()
    # binlog_row_metadata=MINIMAL: no names, no key
    assert binlog_primary_key(_table_map([None], [], {})) is None  # type: ignore[list-item]


class _Producer:
    def __init__(self) -> None:
        self.sent: list[tuple[str, Any, bytes | None]] = []

    def send(self, topic: str, value: bytes | None, key: bytes | None = None,
             timestamp: int = 0) -> None:
        self.sent.append((topic, orjson.loads(value) if value else None, key))


ID = KeySchema(("id",), ("int",))
ID_K2 = KeySchema(("id", "k2"), ("int", "int"))
LAYOUT = [("id", "int"), ("k2", "int"), ("v", "string")]


def _guard(known: dict[Any, Any] | None = None,
           behavior: str = "lenient") -> tuple[SchemaGuard, _Producer, list[str]]:
    producer, calls = _Producer(), []
    # the typed layout of these tests' rows is known already: only table records are sent
    read = SchemaTopic(tables=known if known is not None else {},
                       layouts={layout_id("shop", "t", []): layout_value("shop", "t", "", [])})
    writer = SimpleNamespace(
        schema_record=lambda key, value, ts_ms=0: (calls.append("open"),
                                                   producer.send("schema", value, key, ts_ms)),
        commit=lambda force=False: calls.append("commit"))
    guard = SchemaGuard(writer, read, behavior)  # type: ignore[arg-type]
    return guard, producer, calls


def test_a_key_change_stops_after_committing_what_came_before() -> None:
    guard, producer, calls = _guard()
    guard.layout("shop", "t", ID, LAYOUT, "bin.1:100", 1, [])
    guard.layout("shop", "t", ID, LAYOUT, "bin.1:200", 2, [])  # same layout: nothing written
    assert [(s[1]["key"], s[2]) for s in producer.sent] == [
        ({"columns": ["id"], "classes": ["int"]}, b'{"db":"shop","table":"t"}')]
    guard.ddl("shop", "t", "ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (id, k2)",
              "alter", "bin.1:300", 3)
    assert producer.sent[-1][1]["ddl"].startswith("ALTER") and producer.sent[-1][1]["key"]
    with pytest.raises(KeySchemaChanged) as caught:
        guard.layout("shop", "t", ID_K2, LAYOUT, "bin.1:400", 4, [])
    assert calls[-1] == "commit" and len(producer.sent) == 2
    text = str(caught.value)
    for part in ("shop.t", "(id int)", "(id int, k2 int)", "ADD PRIMARY KEY (id, k2)",
                 "bin.1:300", "bin.1:400", "phantom", "Fix:", "pipeline of its own",
                 "schema.change.behavior"):
        assert part in text


def test_a_restarted_capture_knows_the_key_from_the_schema_topic() -> None:
    known = {("shop", "t"): {"key": ID.as_json(), "columns": [list(c) for c in LAYOUT],
                             "ddl": "ALTER TABLE t ADD PRIMARY KEY (id, k2)", "pos": "b:9"}}
    guard, producer, _ = _guard(known)
    guard.layout("shop", "t", ID, LAYOUT, "b:10", 1, [])
    assert producer.sent == []
    with pytest.raises(KeySchemaChanged, match="b:9"):
        guard.layout("shop", "t", ID_K2, LAYOUT, "b:10", 1, [])


def test_after_a_table_is_emptied_its_next_key_is_free() -> None:
    guard, producer, _ = _guard()
    guard.layout("shop", "t", ID, LAYOUT, "b:1", 1, [])
    guard.ddl("shop", "t", "DROP TABLE t", "drop", "b:2", 2)
    assert producer.sent[-1][1]["key"] is None
    guard.layout("shop", "t", ID_K2, LAYOUT, "b:3", 3, [])  # CREATE TABLE t (... (id, k2))
    assert producer.sent[-1][1]["key"] == ID_K2.as_json()
    assert producer.sent[-1][1]["ddl"] == "DROP TABLE t"


def test_a_new_column_is_recorded_and_a_first_start_clears_leftovers() -> None:
    guard, producer, calls = _guard({("old", "x"): {"key": ID.as_json()}})
    guard.forget_all()
    assert producer.sent == [("schema", None, b'{"db":"old","table":"x"}')]
    guard.layout("shop", "t", ID, LAYOUT, "b:1", 1, [])
    guard.layout("shop", "t", ID, [*LAYOUT, ("added", "int")], "b:2", 2, [])
    assert producer.sent[-1][1]["columns"][-1] == ["added", "int"]
    assert "commit" not in calls


def test_exception_behavior_stops_at_any_change_but_a_create() -> None:
    guard, producer, calls = _guard(behavior="exception")
    guard.ddl("shop", "t", "CREATE TABLE t (id INT PRIMARY KEY)", "create", "b:1", 1)
    with pytest.raises(SourceError, match=r"shop\.t at binlog b:2.*behavior: exception"):
        guard.ddl("shop", "t", "ALTER TABLE t ADD c INT", "alter", "b:2", 2)
    assert calls[-1] == "commit" and len(producer.sent) == 1


def test_with_evolve_a_key_change_asks_for_a_re_key_and_the_new_key_is_recorded() -> None:
    guard, producer, calls = _guard(behavior="evolve")
    guard.layout("shop", "t", ID, LAYOUT, "b:1", 1, [])
    with pytest.raises(RekeyNeeded) as caught:
        guard.layout("shop", "t", ID_K2, LAYOUT, "b:5", 5, [])
    change = caught.value
    assert calls[-1] == "commit" and isinstance(change, KeySchemaChanged)
    assert (change.db, change.table, change.key, change.where) == ("shop", "t", ID_K2, "b:5")
    guard.rekeyed("shop", "t", ID_K2, LAYOUT, "b:5", 5)
    assert producer.sent[-1][1]["key"] == ID_K2.as_json()
    assert producer.sent[-1][1]["action"] == "rekey"
    guard.layout("shop", "t", ID_K2, LAYOUT, "b:6", 6, [])  # the rows after it: no stop


def test_ignore_pins_the_first_columns_until_the_table_is_dropped() -> None:
    guard, producer, _ = _guard(behavior="ignore")
    typed = [{"name": "id", "type": "INT"}]
    first = guard.layout("shop", "t", ID, LAYOUT, "b:1", 1, typed)
    assert guard.pinned("shop", "t") == ["id", "k2", "v"]
    wider = [*LAYOUT, ("added", "int")]
    again = guard.layout("shop", "t", ID, wider, "b:2", 2,
                         [*typed, {"name": "added", "type": "INT"}])
    assert again == first  # rows keep naming the pinned typed layout
    assert guard.pinned("shop", "t") == ["id", "k2", "v"]
    layouts = [s[1] for s in producer.sent if s[1] and s[1].get("layout")]
    assert [len(r["columns"]) for r in layouts] == [1, 2]  # each typed layout recorded
    with pytest.raises(KeySchemaChanged):  # a key change stops, as with lenient
        guard.layout("shop", "t", ID_K2, wider, "b:3", 3, typed)
    guard.ddl("shop", "t", "TRUNCATE TABLE t", "truncate", "b:4", 4)
    guard.layout("shop", "t", ID, wider, "b:5", 5, typed)
    assert guard.pinned("shop", "t") == ["id", "k2", "v"]  # TRUNCATE keeps the columns
    guard.ddl("shop", "t", "DROP TABLE t", "drop", "b:6", 6)
    guard.layout("shop", "t", ID, wider, "b:7", 7, typed)
    assert guard.pinned("shop", "t") == ["id", "k2", "v", "added"]  # created again
    lenient, _, _ = _guard()
    lenient.layout("shop", "t", ID, LAYOUT, "b:1", 1, typed)
    assert lenient.pinned("shop", "t") is None


def test_pinned_rows_are_projected_onto_the_pinned_columns() -> None:
    from cdc_ingest.capture.binlog_schema import TableSchema  # noqa: PLC0415
    from cdc_ingest.capture.encode import Encoders  # noqa: PLC0415

    schema = TableSchema("shop", "t", (ColumnSpec("id", T.LONG), ColumnSpec("added", T.LONG),
                                       ColumnSpec("v", T.VARCHAR, encoding="utf8")), ("id",))
    sent: list[tuple[bytes, bytes]] = []
    encoders = Encoders(lambda s, w: "abc", lambda db, t: ["id", "v", "gone"])
    encoder = encoders.get(schema, "b:1")
    encoder.produce_rows(lambda topic, v, k, ts: sent.append((k, v)), "cl", "U",
                         [([1, 5, "x"], [1, 6, "y"])], 1, "g", 1000, None)
    assert sent == [(b'{"id":1}', b'{"v":1,"op":"+U","db":"shop","table":"t","layout":"abc",'
                     b'"pk":{"id":1},"before":{"id":1,"v":"x","gone":null},"after":{"id":1,'
                     b'"v":"y","gone":null},"ts_ms":1000,"pos":"g#1"}')]
