"""Measured figures live in the decision records, not in the code's comments, where they go
stale: a comment names the record instead, and every record a comment names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "cdc_ingest"
DECISIONS = ROOT / "docs" / "decisions"

# What a measurement looks like in prose: before -> after with a unit, shares of a CPU or of a
# time, "x faster", "took N ms", memory measured against a setting.
MEASURED = re.compile(
    r"\d(?:\.\d+)? ?(?:ms|s|%)? ?-> ?\d[\d.,]* ?(?:ms\b|s\b|%|MiB|MB)"
    r"|\d+(?:\.\d+)?% (?:of a CPU|of a worker|of capture|against)"
    r"|\b\d+(?:\.\d+)?x (?:faster|slower)"
    r"|\b(?:took|takes) \d+(?:\.\d+)? ?(?:ms|s)\b"
    r"|\bp(?:50|90|95|99) (?:of \w+ )?\d"
    r"|\d+ ?MiB (?:RSS|instead of)"
    r"|\(measured\)"
    r"|\d+(?:\.\d+)? ?s of CPU"
    r"|\bwaits? ~\d"
)


def _sources() -> list[Path]:
    return sorted(p for ext in ("*.py", "*.pyx") for p in PACKAGE.rglob(ext))


def test_no_measured_figures_in_the_code() -> None:
    found = []
    for path in _sources():
        name = path.relative_to(ROOT).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if MEASURED.search(line):
                found.append(f"{name}:{number}: {line.strip()}")
    assert not found, ("measured figures in the code; move each to its decision record "
                       "(docs/decisions/) and point there:\n" + "\n".join(found))


def test_the_pattern_catches_the_figures_that_were_moved() -> None:
    for line in ("start-up 4.0 -> 3.0 s and JVM CPU about halved",
                 "SparkSession start 5.0 s -> 2.8 s, the first job 2.1 s -> 1.1 s",
                 "sink JVM 61% -> 49% of a CPU, p99 640 -> 382 ms",
                 "every 10 ms (Spark's default): 12.6% of a CPU in the idle sink's JVM",
                 "init_transactions took 55 ms, or 505 ms",
                 "(p90 of addBatch 711 -> 333 ms at 2,000 rows/s)",
                 "a smaller performance_schema: about 300 MiB RSS",
                 "about 2.5x faster than dataclasses.replace",
                 "(a zip holds no bytecode cache: 0.7 s of CPU against 0.25 s",
                 "each commit (with its offsets) waits ~10-30 ms for the broker"):
        assert MEASURED.search(line), line


def test_every_decision_record_the_code_names_exists() -> None:
    records = {p.name[:4] for p in DECISIONS.glob("[0-9][0-9][0-9][0-9]-*.md")}
    named = set()
    for path in _sources():
        text = path.read_text(encoding="utf-8")
        named |= {(n, path.name) for n in
                  re.findall(r"decisions/(\d{4})|decision(?: record)? (\d{4})", text)
                  for n in n if n}
    assert named, "no comment names a decision record"
    missing = sorted(f"{file} names decision {n}" for n, file in named if n not in records)
    assert not missing, missing
