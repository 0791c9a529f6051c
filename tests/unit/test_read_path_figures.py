"""The read-path figures in benchmarks/README.md and decision 0016 are those of
benchmarks/results/read-path.json (benchmarks/read_path.py's last run)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULT = json.loads((ROOT / "benchmarks" / "results" / "read-path.json").read_text())
ARMS = ("spark source", "librdkafka")


def _cells(arm: str) -> dict[str, str]:
    s = RESULT["summary"][arm]
    cpu = s["cpu_s_per_million_changes"]
    return {
        "wall": f"{s['wall_s']:.1f} s ({s['rows_per_s'] / 1000:.1f}k rows/s)",
        "foreachBatch": f"{s['foreach_batch_rows_per_s'] / 1000:.1f}k rows/s",
        "jvm": f"{cpu['sink JVM']:.1f}",
        "workers": f"{cpu['sink python workers']:.1f}",
        "broker": f"{cpu['kafka']:.1f}",
    }


def test_the_benchmarks_readme_table_is_the_result_file() -> None:
    text = (ROOT / "benchmarks" / "README.md").read_text()
    section = text[text.index("### Latest run (`results/read-path.json`"):]
    base, new = _cells("spark source"), _cells("librdkafka")
    assert f"| wall | {base['wall']} | {new['wall']} |" in section
    assert f"| foreachBatch | {base['foreachBatch']} | {new['foreachBatch']} |" in section
    assert (f"| {base['jvm']} / {base['workers']} / {base['broker']} | {new['jvm']} / "
            f"{new['workers']} / {new['broker']} |") in section
    assert f"{RESULT['ratio_sink_alone_wall']:.2f}x on the wall" in section
    assert f"{RESULT['ratio_foreach_batch']:.2f}x in foreachBatch" in section
    assert f"git {RESULT['machine']['git']['commit'][:7]}" in section


def test_decision_0016_gives_the_same_figures() -> None:
    text = (ROOT / "docs" / "decisions" / "0016-sink-reads-its-ranges-with-librdkafka.md"
            ).read_text()
    section = text[text.index("## Measured after the change"):]
    base, new = _cells("spark source"), _cells("librdkafka")
    assert f"| wall, process start to every offset committed | {base['wall']} | {new['wall']} |" in section
    assert f"| foreachBatch | {base['foreachBatch']} | {new['foreachBatch']} |" in section
    assert f"| CPU s per 1M changes: sink JVM | {base['jvm']} | {new['jvm']} |" in section
    assert f"{RESULT['ratio_sink_alone_wall']:.2f}x on the wall" in section


def test_decision_0016_gives_the_prototype_run_that_decided_it() -> None:
    proto = json.loads((ROOT / "benchmarks" / "results" / "read-path-prototype.json").read_text())
    text = (ROOT / "docs" / "decisions" / "0016-sink-reads-its-ranges-with-librdkafka.md"
            ).read_text()
    section = text[:text.index("## Decision")]
    base, new = proto["summary"]["product"], proto["summary"]["prototype"]
    for name, key in (("sink JVM", "sink JVM"), ("Python workers", "sink python workers"),
                      ("broker", "kafka")):
        row = (f"| CPU s per 1M changes: {name} | {base['cpu_s_per_million_changes'][key]:.1f} "
               f"| {new['cpu_s_per_million_changes'][key]:.1f} |")
        assert row in section
    assert (f"| {base['wall_s']:.1f} s ({base['rows_per_s'] / 1000:.1f}k rows/s) | "
            f"{new['wall_s']:.1f} s ({new['rows_per_s'] / 1000:.1f}k rows/s) |") in section
    assert f"{proto['ratio_sink_alone_wall']:.2f}x on the wall" in section


def test_operations_gives_the_same_ratio() -> None:
    text = (ROOT / "docs" / "operations.md").read_text()
    assert (f"through Spark's JVM, {RESULT['ratio_sink_alone_wall']:.2f}x\n  on the sink alone "
            f"at 1M changes") in text


def test_decision_0010_points_at_the_same_ratio() -> None:
    text = (ROOT / "docs" / "decisions" / "0010-sink-python-workers-and-the-debezium-targets.md"
            ).read_text()
    assert f"decision 0016, {RESULT['ratio_sink_alone_wall']:.2f}x on the sink alone" in text


def test_decision_0016_gives_the_latency_runs_of_its_results() -> None:
    text = (ROOT / "docs" / "decisions" / "0016-sink-reads-its-ranges-with-librdkafka.md"
            ).read_text()
    runs = {}
    for name in ("1-librdkafka", "2-spark-source-b68d9ac", "3-librdkafka"):
        doc = json.loads((ROOT / "benchmarks" / "results" / "latency-read-path" /
                          f"{name}.json").read_text())
        runs[name] = doc["runs"][0]["latency"]
    one, base, three = runs["1-librdkafka"], runs["2-spark-source-b68d9ac"], runs["3-librdkafka"]
    flat = " ".join(text.split())
    assert (f"p50 / p99 {one['p50_ms']:.0f} / {one['p99_ms']:.0f} ms and "
            f"{three['p50_ms']:.0f} / {three['p99_ms']:.0f} ms") in flat
    assert f"{base['p50_ms']:.0f} / {base['p99_ms']:,.0f} ms with Spark's source" in flat

    def broker(run: dict) -> str:
        cpu = run["cpu_s_measured_phase"]
        return f"{100 * cpu['kafka'] / cpu['wall']:.0f}%"

    assert f"the broker used {broker(base)} of a CPU" in flat
    assert f"{broker(one)} and {broker(three)} with the tasks reading" in flat
