"""README.md against the code: its Commands table lists every command of the CLI, the
order it says pytest runs the suite in is the order pytest collects it, and its table by
workload size is compare.py's results file."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from cdc_ingest.cli import cli

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _commands_table() -> list[str]:
    section = README.split("## Commands", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `cdc-ingest ([\w-]+)", section, flags=re.M)


def test_the_commands_table_lists_every_command() -> None:
    assert sorted(_commands_table()) == sorted(cli.commands)
    assert "demo" in _commands_table()


def test_the_suite_runs_integration_then_unit_as_the_readme_says() -> None:
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    dirs = [line.split("/")[1] for line in done.stdout.splitlines()
            if line.startswith("tests/") and "::" in line]
    order = [d for i, d in enumerate(dirs) if i == 0 or dirs[i - 1] != d]
    assert order == ["integration", "unit"]
    text = " ".join(README.split())
    assert "`pytest` over `tests/` in path order (first `tests/integration`" in text
    assert "then `tests/unit`)" in text
    assert "unit tests, then integration tests" not in text


def _size_table() -> dict[str, list[str]]:
    section = README.split("By workload size", 1)[1].split("\n\n", 2)[1]
    rows = [line.strip("|").split("|") for line in section.splitlines()
            if re.match(r"^\| \d+[kM] \|", line)]
    return {cells[0].strip(): [c.strip() for c in cells[1:]] for cells in rows}


def test_the_size_table_is_the_results_file() -> None:
    # every figure of README's table by workload size, as compare.py wrote it
    doc = json.loads((ROOT / "benchmarks" / "results" / "compare-sizes.json").read_text())
    table = _size_table()
    assert sorted(table) == sorted(row["size"] for row in doc["sizes"])
    for row in doc["sizes"]:
        rate, versus, first, empty = table[row["size"]][:4]
        assert rate.startswith(f"{row['eo_rows_per_s'] / 1000:.1f}k rows/s"), (rate, row)
        assert versus == f"{row['eo_vs_debezium']:.2f}x", (versus, row)
        assert first == (f"{row['first_first_output_s']:.1f} s / "
                         f"{row['debezium_first_output_s']:.1f} s"), (first, row)
        assert empty == (f"{row['first_empty_trigger_0_s']:.1f} s / "
                         f"{row['first_empty_default_trigger_s']:.1f} s"), (empty, row)
