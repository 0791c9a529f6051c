"""README.md against the code: its Commands table lists every command of the CLI, and the
order it says pytest runs the suite in is the order pytest collects it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from cdc_ingest.cli import cli

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _commands_table() -> list[str]:
    section = README.split("## Commands", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `cdc-ingest (\w+)", section, flags=re.M)


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
