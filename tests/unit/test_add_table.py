"""What ``add-table`` lets a running pipeline take in (capture/add_table.py): the edited file
may change the selection and nothing else, named by YAML path, never by value; the selection
a position records captures what the file's options would (CaptureOptions.selected)."""

from __future__ import annotations

import pytest

from cdc_ingest.capture.add_table import differences
from cdc_ingest.capture.options import capture_options, selection_matcher
from cdc_ingest.capture.resume import added_tables
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
