"""Benchmark results name the commit and say whether the tree differed from it
(benchmarks/_common.py ``git_state``, in every result's ``machine_info``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.unit.benchmark_common import bench_common

_common = bench_common


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    _git(tmp_path, "init", "-q")
    (tmp_path / "code.py").write_text("x = 1\n")
    _git(tmp_path, "add", "code.py")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    return tmp_path


def test_a_clean_tree_is_its_commit(repo: Path) -> None:
    state = _common().git_state(repo)
    assert state == {"commit": _git(repo, "rev-parse", "HEAD"), "dirty": False}


def test_a_dirty_tree_says_so_and_lists_what_differs(repo: Path) -> None:
    (repo / "code.py").write_text("x = 2\n")
    (repo / "new.py").write_text("y = 1\n")
    state = _common().git_state(repo)
    assert state["commit"] == _git(repo, "rev-parse", "HEAD")
    assert state["dirty"] is True
    assert state["modified"] == [" M code.py", "?? new.py"]


def test_outside_git_nothing_is_claimed(tmp_path: Path) -> None:
    assert _common().git_state(tmp_path / "nowhere") == {"commit": None, "dirty": None}


def test_machine_info_carries_the_state() -> None:
    info = _common().machine_info()
    assert set(info["git"]) >= {"commit", "dirty"} and "git_commit" not in info
