"""A benchmark figure measured over repeats reports its median and min-max, and a ratio to a
baseline the min-max of the repeats' own ratios (benchmarks/_common.py ``Measure``,
``ratio_samples``, ``table``; compare.py ``--repeat``)."""

from __future__ import annotations

from typing import Any

from tests.unit.benchmark_common import bench_common

_common = bench_common


def _measures() -> list[Any]:
    c = _common()
    ours = c.Measure("ours", "rows/s", [100.0, 120.0, 90.0], "theirs", repeats=[1, 2, 3])
    # repeat 2 of the baseline failed: its ratio is left out, not paired with repeat 3's
    theirs = c.Measure("theirs", "rows/s", [50.0, 45.0], repeats=[1, 3])
    return [ours, theirs]


def test_ratios_pair_the_samples_of_one_repeat() -> None:
    c = _common()
    ours, theirs = _measures()
    assert ours.spread == (90.0, 120.0)
    assert c.ratio_samples([ours, theirs]) == {"ours": [2.0, 2.0], "theirs": []}
    assert c.ratios([ours, theirs])["ours"] == 100.0 / 47.5  # medians


def test_the_json_gives_median_min_max_and_the_ratios_spread() -> None:
    c = _common()
    ours, theirs = _measures()
    doc = ours.as_json(c.ratios([ours, theirs])["ours"],
                       c.ratio_samples([ours, theirs])["ours"])
    assert (doc["median"], doc["min"], doc["max"]) == (100.0, 90.0, 120.0)
    assert doc["repeats"] == [1, 2, 3]
    assert (doc["ratio_min"], doc["ratio_max"]) == (2.0, 2.0)
    assert "ratio_samples" not in theirs.as_json(None, [])


def test_without_repeats_no_ratio_spread_is_made_up() -> None:
    c = _common()
    ours = c.Measure("ours", "rows/s", [100.0, 120.0], "theirs")
    theirs = c.Measure("theirs", "rows/s", [50.0, 40.0])
    assert c.ratio_samples([ours, theirs])["ours"] == []


def test_the_table_prints_the_spreads_only_when_asked() -> None:
    c = _common()
    measures = _measures()
    plain = c.table(measures, "vs theirs")
    assert "min-max" not in plain
    lines = c.table(measures, "vs theirs", spread=True).splitlines()
    assert lines[0].split() == ["measure", "median", "min-max", "samples", "vs", "theirs",
                                "vs", "theirs:", "min-max"]
    row = lines[2]  # header, rule, then ours
    assert row.startswith("ours (rows/s)")
    assert "90.0-120.0" in row and "2.11x" in row and row.endswith("2.00-2.00x")
