"""benchmarks/_common.py for the unit tests of the benchmarks' shared code."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

COMMON = Path(__file__).resolve().parents[2] / "benchmarks" / "_common.py"


def bench_common() -> ModuleType:
    """benchmarks/_common.py, loaded once (the scripts import it as ``_common``)."""
    if "bench_common" not in sys.modules:
        spec = importlib.util.spec_from_file_location("bench_common", COMMON)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["bench_common"] = module  # its dataclasses look their module up
        spec.loader.exec_module(module)
    return sys.modules["bench_common"]
