"""What ``add-table`` lets a running pipeline take in (capture/add_table.py): the edited file
may change the selection and nothing else, named by YAML path, never by value; the selection
a position records captures what the file's options would (CaptureOptions.selected)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from cdc_ingest.capture import resume
from cdc_ingest.capture.add_table import differences, file_digest, take_add_table
from cdc_ingest.capture.options import CaptureOptions, capture_options, selection_matcher
from cdc_ingest.capture.resume import added_tables
from cdc_ingest.capture.signal_format import Signal
from cdc_ingest.capture.snapshot.state import SnapshotState
from cdc_ingest.config import PipelineDef, parse_pipeline
from cdc_ingest.errors import ConfigError
from cdc_ingest.model import Position

TEXT = """
source:
  type: mysql
  hostname: localhost
  port: 3306
  username: u
  password: {password}
  tables: {tables}
  server-id: 5400
sink:
  type: upsert-kafka
  properties.bootstrap.servers: localhost:9092
route:
  - source-table: app.a
    sink-table: {topic}
transform:
  - source-table: app.\\.*
    projection: "*"
pipeline:
  name: p
"""


def _file(tables: str = "app.a", password: str = "s3cret-one", topic: str = "x",
          **source: str) -> PipelineDef:
    text = TEXT.format(password=password, tables=tables, topic=topic)
    for key, value in source.items():
        text = text.replace("  server-id: 5400\n", f"  server-id: 5400\n  {key}: {value}\n")
    return parse_pipeline(text)


def test_only_the_selection_may_change() -> None:
    running = _file()
    running.source.captures("app", "a")  # a selector's match cache is not a difference
    assert differences(running, _file("app.(a|b)")) == []
    assert differences(running, _file("app.\\.*", **{"tables.exclude": "app.c"})) == []
    changed = differences(running, _file("app.(a|b)", password="s3cret-two", topic="y"))
    assert changed == ["source.password", "route[0].sink-table"]
    assert not any("s3cret" in path for path in changed)
    routes = differences(running, _file().model_copy(update={"routes": ()}))
    assert routes == ["route"]


def test_a_recorded_selection_captures_as_the_files_options_do() -> None:
    options = capture_options(_file("app.\\.*", **{"tables.exclude": "app.c"}))
    matcher = selection_matcher(options.selection)
    for table in ("a", "b", "c"):
        assert matcher("app", table) == options.captured("app", table) == (table != "c")
    assert not matcher("other", "a")
    narrower = options.selected(["app.a", None])
    assert narrower.captured("app", "a") and not narrower.captured("app", "b")
    assert narrower.selection == ["app.a", None] and narrower.definition is options.definition
    assert options.selected(options.selection) is options
    assert options.selected(None) is options


class _Catalog:
    def tables(self) -> list[tuple[str, str]]:
        return [("app", "a"), ("app", "b")]

    def server_identity(self) -> str:
        return "server-1"


def test_a_start_keeps_the_committed_selection_while_an_add_table_waits() -> None:
    options = capture_options(_file("app.(a|b)"))
    committed = Position(gtid_set="0-1-5", tables=["app.a", None])
    catalog = _Catalog()
    waiting = added_tables(options, committed, catalog, lambda: True)  # type: ignore[arg-type]
    assert waiting == committed  # the signal takes b in, as it says
    with pytest.raises(ConfigError, match="cdc-ingest add-table"):
        added_tables(options, committed, catalog)  # type: ignore[arg-type]


def _signal(tables: tuple[tuple[str, str], ...], digest: str, rows: bool = True) -> Signal:
    return Signal("s1", "add-table", 4, tables, with_rows=rows, config_sha256=digest)


def _running(tmp_path: Path, tables: str = "app.a") -> tuple[CaptureOptions, Path]:
    path = tmp_path / "p.yaml"
    path.write_text(TEXT.format(password="pw", tables=tables, topic="x"))
    return capture_options(parse_pipeline(path.read_text()), path), path


def _edit(path: Path, tables: str, topic: str = "x") -> str:
    path.write_text(TEXT.format(password="pw", tables=tables, topic=topic))
    return file_digest(path.read_bytes())


@pytest.fixture
def schema_topic(monkeypatch: pytest.MonkeyPatch) -> set[tuple[str, str]]:
    """The tables the schema topic knows (captured before), in place of reading Kafka."""
    known: set[tuple[str, str]] = set()
    monkeypatch.setattr(resume, "read_schema_topic",
                        lambda kafka, topic: SimpleNamespace(tables=known))
    return known


def test_capture_takes_the_tables_in_with_or_without_their_rows(
        tmp_path: Path, schema_topic: set[tuple[str, str]]) -> None:
    options, path = _running(tmp_path)
    start = Position(gtid_set="0-1-5", tables=options.selection, signals=4)
    digest = _edit(path, "app.(a|b)")
    taken, note = take_add_table(options, start, _signal((("app", "b"),), digest), _Catalog())  # type: ignore[arg-type]
    assert taken.tables == ["app.(a|b)", None] and taken.signals == 5
    state = SnapshotState.from_json(taken.snapshot or {})
    assert state.tables == [["app", "b"]] and state.note is not None and state.note["id"] == "s1"
    assert state.resets == []  # never captured: its topic has nothing to tombstone
    assert b'"type":"TAKEN"' in note and b'"data_collections":"app.b"' in note
    now, note = take_add_table(options, start, _signal((("app", "b"),), digest, rows=False),
                               _Catalog())  # type: ignore[arg-type]
    assert now.tables == ["app.(a|b)", None] and now.snapshot is None
    assert b'"data_collections":"app.b (from now on)"' in note
    # captured before, taken out, added again: its topic may hold keys of rows deleted
    # meanwhile, so they are tombstoned before its snapshot rows
    schema_topic.add(("app", "b"))
    again, _ = take_add_table(options, start, _signal((("app", "b"),), digest), _Catalog())  # type: ignore[arg-type]
    assert SnapshotState.from_json(again.snapshot or {}).resets == [["app", "b"]]


@pytest.mark.parametrize(("tables", "named", "edited_digest", "why"), [
    ("app.(a|b)", (("app", "b"),), False, "is not the file the command checked"),
    ("app.b", (("app", "b"),), True, "no longer selects app.a; add-table only takes tables in"),
    ("app.(a|b)", (("app", "a"), ("app", "b")), True, "app.a is captured already"),
    ("app.(a|b)", (("app", "zz"),), True, "app.zz is not a table in MySQL"),
    ("app.a", (("app", "b"),), True, "the edited source.tables does not select app.b"),
])
def test_capture_refuses_what_it_cannot_take_exactly(
        tmp_path: Path, tables: str, named: tuple[tuple[str, str], ...], edited_digest: bool,
        why: str) -> None:
    options, path = _running(tmp_path)
    start = Position(gtid_set="0-1-5", tables=options.selection, signals=4)
    digest = _edit(path, tables)
    signal = _signal(named, digest if edited_digest else "0" * 64)
    refused, note = take_add_table(options, start, signal, _Catalog())  # type: ignore[arg-type]
    assert refused == replace(start, signals=5)  # past the signal, nothing else changed
    assert b'"type":"REFUSED"' in note and why.encode() in note, note


def test_status_lists_what_the_file_selects_beyond_the_committed_selection() -> None:
    from cdc_ingest.capture.add_table import not_captured_yet  # noqa: PLC0415

    tables = [("app", "a"), ("app", "b"), ("app", "c"), ("other", "x")]
    edited = _file("app.\\.*", **{"tables.exclude": "app.c"})
    assert not_captured_yet(edited, ["app.a", None], tables) == ["app.b"]
    assert not_captured_yet(edited, ["app.\\.*", "app.c"], tables) == []
    assert not_captured_yet(edited, None, tables) == []  # a release that did not record it
