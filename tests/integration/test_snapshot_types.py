"""Snapshot rows (read with SELECT) carry the same JSON as binlog rows of the same values."""

from __future__ import annotations

import decimal
import json
from pathlib import Path
from typing import Any

from tests.integration.flavors import Source
from tests.integration.pipeline_helpers import changelog, start_capture, write_pipeline
from tests.integration.test_capture_types import fill_all_types


def _normal(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    for geo in ("g", "p"):
        if out.get(geo) is not None:
            out[geo] = json.loads(out[geo], parse_float=decimal.Decimal)
    return out


def test_snapshot_rows_match_the_binlog_fixture(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    fresh_db = fresh_source_db
    fill_all_types(source, fresh_db)
    name = f"snaptypes-{fresh_db}"
    config = write_pipeline(tmp_path / "p.yaml", source, kafka, name, rf"{fresh_db}.all_types",
                            source={"scan.startup.mode": "snapshot"},
                            pipeline={"parallelism": 1})
    log = tmp_path / "capture.log"
    assert start_capture(config, log).wait(120) == 0, log.read_text()[-3000:]

    # the fixture's final state per key, from the binlog path
    state: dict[int, dict[str, Any]] = {}
    for line in source.facts.all_types_fixture.read_text().splitlines():
        record = json.loads(line, parse_float=decimal.Decimal)
        if record["op"] == "-D":
            state.pop(record["pk"]["id"], None)
        else:
            state[record["pk"]["id"]] = record["after"]
    snapshot = {r["pk"]["id"]: r["after"] for r in changelog(kafka, name)}
    assert set(snapshot) == set(state) == {1, 3, 4}
    for key, expected in state.items():
        got, want = _normal(snapshot[key]), _normal(expected)
        differing = {c: (got.get(c), want[c]) for c in want if got.get(c) != want[c]}
        assert not differing, f"id {key}: {differing}"
    # decimals keep their scale exactly in the raw text, as on the binlog path
    raw = next(r for r in changelog(kafka, name, str) if r["pk"] == {"id": 3})
    assert raw["after"]["d"] == "0.50" and raw["after"]["dbig"].endswith("0001")
