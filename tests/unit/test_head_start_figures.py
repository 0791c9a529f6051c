"""Decision 0017's table and benchmarks/README.md's are benchmarks/results/head-start.json
(benchmarks/head_start.py's last run); the latency the READMEs give since is
benchmarks/results/latency-head-start.json (pipeline.py --only latency)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULT = json.loads((ROOT / "benchmarks" / "results" / "head-start.json").read_text())
ROWS = {
    "300k backlog: first message read_committed": "backlog: first output",
    "300k backlog: whole changelog written": "backlog: whole changelog written",
    "300k backlog: sink query started": "backlog: sink query started",
    "empty backlog, one row: first message": "empty: first output",
    "empty backlog: sink query started": "empty: sink query started",
}


def test_decision_0017_gives_the_result_file() -> None:
    text = (ROOT / "docs" / "decisions" / "0017-sink-head-start.md").read_text()
    section = text[text.index("## Measured"):]
    off, on = RESULT["summary"]["spark only"], RESULT["summary"]["head start"]
    ratios = RESULT["ratio_spark_only_to_head_start"]
    assert RESULT["changes"] == 299_999 and "300k backlog" in section
    for row, key in ROWS.items():
        assert f"| {row} | {off[key]:.2f} s | {on[key]:.2f} s | {ratios[key]:.2f}x |" in section
    assert f"git\n{RESULT['machine']['git']['commit'][:7]})" in section
    assert not RESULT["machine"]["git"]["dirty"] and not RESULT["errors"]
    assert f"--repeat {RESULT['repeat']}`" in section


def test_the_benchmarks_readme_gives_the_same_figures() -> None:
    text = (ROOT / "benchmarks" / "README.md").read_text()
    section = text[text.index("### Latest run (`results/head-start.json`"):]
    off, on = RESULT["summary"]["spark only"], RESULT["summary"]["head start"]
    ratios = RESULT["ratio_spark_only_to_head_start"]
    assert f"git {RESULT['machine']['git']['commit'][:7]}, 300k changes, " \
        f"{RESULT['repeat']} repeats" in section
    for row, key in (("300k backlog: first message", "backlog: first output"),
                     ("300k backlog: whole changelog written", "backlog: whole changelog written"),
                     ("empty backlog, one row: first message", "empty: first output")):
        assert f"| {row} | {off[key]:.2f} s | {on[key]:.2f} s | {ratios[key]:.2f}x |" in section


def test_the_latency_in_both_readmes_is_the_result_file() -> None:
    latency = json.loads((ROOT / "benchmarks" / "results" / "latency-head-start.json").read_text())
    ms = {k: latency["results"][f"latency {k}"]["median"] for k in ("p50", "p95", "p99", "max")}
    cpu = {k: latency["results"][f"latency run CPU: {k}"]["median"]
           for k in ("sink JVM", "sink python workers", "kafka", "capture")}
    commit = latency["machine"]["git"]["commit"][:7]
    readme = (ROOT / "README.md").read_text()
    assert (f"p50 {ms['p50'] / 1000:.2f} s,\np99 {ms['p99'] / 1000:.2f} s, max "
            f"{ms['max'] / 1000:.2f} s (`pipeline.py --only latency`, "
            f"`benchmarks/results/latency-head-start.json`,\ngit {commit};") in readme
    bench = (ROOT / "benchmarks" / "README.md").read_text()
    assert (f"`results/latency-head-start.json`, git {commit}, a fast day): p50 {ms['p50']:.0f} ms, "
            f"p95 {ms['p95']:.0f}, p99 {ms['p99']:.0f},\n  max {ms['max']:.0f}. During the run: "
            f"JVM {cpu['sink JVM']:.0f}% of a CPU, Python workers {cpu['sink python workers']:.0f}%, "
            f"Kafka {cpu['kafka']:.0f}%, capture {cpu['capture']:.0f}%.") in bench
    assert latency["results"]["latency p99"]["unit"] == "ms"
