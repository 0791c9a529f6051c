"""Every measured figure the README, docs/exactly-once.md, docs/operations.md and
benchmarks/README.md quote is the value of a result file in benchmarks/results/, after the
rounding the doc uses; each doc names the file beside the figure, and every file it names
exists.

FIGURES is the table: a doc, a phrase of it with a ``{}`` per figure, and where each figure
comes from (``file:json/path``, its format, a scale). A rerun of a benchmark that moves a
figure fails here until the doc says the new value (or the phrase moves to the new file).
Matching ignores line breaks and runs of spaces, so rewrapping a paragraph changes nothing.
tests/unit/test_readme.py, test_head_start_figures.py and test_read_path_figures.py check
the tables they name in the same way.
"""

from __future__ import annotations

import glob
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
DOCS = ("README.md", "docs/exactly-once.md", "docs/operations.md", "benchmarks/README.md")


@cache
def _result(name: str) -> Any:
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def at(ref: str) -> Any:
    """``file.json:key/key/0/key`` -> that value of benchmarks/results/file.json. A key may
    hold a ``/`` itself (``capture end-to-end: rows/s``): the longest one that exists wins."""
    name, _, path = ref.partition(":")
    value = _result(name)
    parts = path.split("/")
    while parts:
        if isinstance(value, list):
            value, parts = value[int(parts[0])], parts[1:]
            continue
        n = next((n for n in range(len(parts), 0, -1) if "/".join(parts[:n]) in value), 1)
        value, parts = value["/".join(parts[:n])], parts[n:]
    return value


@dataclass(frozen=True)
class Fig:
    """One figure as the doc writes it: ``fmt`` of ``value() * scale``; a list of values is
    written as their span, ``low-high`` (or one value when both round alike)."""

    value: Callable[[], float | list[float]]
    fmt: str = "{:.1f}"
    scale: float = 1.0

    def text(self) -> str:
        got = self.value()
        values = got if isinstance(got, list) else [got]
        low, high = (self.fmt.format(x * self.scale)
                     for x in (min(values), max(values)))
        return low if low == high else f"{low}-{high}"


def v(ref: str, fmt: str = "{:.1f}", scale: float = 1.0) -> Fig:
    return Fig(lambda: float(at(ref)), fmt, scale)


def span(refs: list[str], fmt: str = "{:.1f}", scale: float = 1.0) -> Fig:
    return Fig(lambda: [float(at(r)) for r in refs], fmt, scale)


def ratio(top: str, bottom: str, fmt: str = "{:.2f}") -> Fig:
    return Fig(lambda: float(at(top)) / float(at(bottom)), fmt)


def k(ref: str, digits: int = 1) -> Fig:
    """rows/s as ``179k`` (digits 0) or ``114.0k``."""
    return v(ref, f"{{:.{digits}f}}k", 1e-3)


def median(file: str, measure: str) -> str:
    return f"{file}:results/{measure}/median"


SIZES = "compare-sizes.json:sizes"
SIZE = {"300k": 0, "1M": 1, "5M": 2}
CAPTURE = "capture.json"
MYSQL_JSON, MARIADB_300K = "capture-mysql-json.json", "capture-mariadb-300k.json"
PARTIAL, BEFORE_PARTIAL = "capture-mysql-partial-json.json", "capture vs code of 63dc50e"
CTX, TLS48 = "snapshot-issue48-mysql-ctx.json", "snapshot-issue48-mysql-tls.json"
BEFORE_CTX = "snapshot p1 end-to-end, code of 63dc50e"
BEFORE_JSON = "capture vs code of cd19c95d3188504c31a24c211472207a385dec99"
LATENCY = "latency-head-start.json"
AVRO, SERDE = "avro-sink.json", "avro-sink-serde.json"


MARIADB_CMP, MYSQL_CMP = "compare.json", "compare-mysql.json"
EO, EO_NOHS = "cdc-ingest e2e exactly-once", "cdc-ingest e2e exactly-once, head-start false"
START, ALO = "cdc-ingest start exactly-once", "cdc-ingest e2e at-least-once"
DBZ = "debezium (Connect standalone)"


def _cmp(file: str, measure: str) -> tuple[Fig, ...]:
    """A compare.py measure as the README writes it: the median in k rows/s, its ratio to
    Debezium, and the lowest and highest of the repeats' own ratios."""
    result = f"{file}:results/{measure}"
    return (k(f"{result}/median"), v(f"{result}/ratio", "{:.2f}"),
            v(f"{result}/ratio_min", "{:.2f}"), v(f"{result}/ratio_max", "{:.2f}"))


def _spread(file: str, measure: str) -> tuple[Fig, ...]:
    """benchmarks/README.md's compare.py row: median, min and max in k rows/s (no unit),
    the ratio to Debezium and the lowest and highest of the repeats' own ratios."""
    result = f"{file}:results/{measure}"
    return (*(v(f"{result}/{key}", "{:.1f}", 1e-3) for key in ("median", "min", "max")),
            *(v(f"{result}/{key}", "{:.2f}") for key in ("ratio", "ratio_min", "ratio_max")))


def _same_commit(*files: str) -> str:
    """The short commit the files' runs measured, one for all and clean."""
    states = [at(f"{f}:machine/git") for f in files]
    assert all(not s["dirty"] or not [m for m in s.get("modified", [])
                                      if "cdc_ingest/" in m] for s in states), states
    commits = {s["commit"][:7] for s in states}
    assert len(commits) == 1, commits
    return commits.pop()


def size(name: str, key: str) -> str:
    return f"{SIZES}/{SIZE[name]}/{key}"


def timeline(name: str, run: str, event: str) -> str:
    """``compare-sizes-<name>.json``: an event of ``first``'s timeline (s after the spawn);
    run: ``backlog``, ``empty_trigger_0`` or ``empty_default_trigger``."""
    first = "runs/0/first" + ("" if run == "backlog" else f"/{run}")
    return f"compare-sizes-{name}.json:{first}/timeline_s/{event}"


def latency(p: str) -> str:
    return median(LATENCY, f"latency {p}")


FIRST_BACKLOG = [size(s, "first_first_output_s") for s in SIZE]
FIRST_EMPTY = [size(s, f"first_empty_{t}_s") for s in SIZE for t in ("trigger_0", "default_trigger")]
EMPTY_RUNS = ("empty_trigger_0", "empty_default_trigger")
QUERY_UP = [timeline(s, r, "sink query started") for s in SIZE for r in ("backlog", *EMPTY_RUNS)]
EO_1M = (k(size("1M", "eo_rows_per_s")), v(size("1M", "eo_vs_debezium"), "{:.2f}"))
ALO_1M = (k(size("1M", "alo_rows_per_s")), v(size("1M", "alo_vs_debezium"), "{:.2f}"))


def _avro_row(measure: str, fmt: str, file: str = AVRO) -> tuple[Fig, ...]:
    json_, avro = (median(file, measure.format(f)) for f in ("json", "avro"))
    return (v(json_, fmt), v(avro, fmt), v(f"{file}:results/{measure.format('avro')}/ratio",
                                           "{:.2f}"))


def _pairs(file: str, measure: str) -> tuple[Fig, ...]:
    return tuple(v(f"{file}:avro_vs_json/{measure}/per_repeat/{i}", "{:.2f}") for i in range(3))


def _profile_share(function: str, cumulative: bool) -> Fig:
    def share() -> float:
        profile = at(f"{SERDE}:profile")
        rows = profile["top_by_cumulative" if cumulative else "top_by_own"]
        row = next(r for r in rows if r["function"].endswith(function))
        return float(row["cumulative_s"] / profile["profiled_total_s"] if cumulative
                     else row["own_share"])
    return Fig(share, "{:.0f}%", 100)


def _bytes_per_change(file: str) -> Fig:
    return ratio(f"{file}:workload/binlog_bytes", f"{file}:workload/changes", "{:.0f}")


TX = "tx-metadata.json:results"
CPU_1M = [f"{SIZES}/{i}/cpu_s_per_million_changes" for i in range(3)]

FIGURES: list[tuple[str, str, tuple[Fig, ...]]] = [
    # README.md, "Performance"
    ("README.md", "| capture alone: binlog -> committed changelog records, 1.3M row changes | "
     "{} ({}x python-mysql-replication's own decoding, {}x `mariadb-binlog -vv` in the same "
     "run) | `capture.json` |",
     (k(median(CAPTURE, "capture end-to-end"), 0),
      v(f"{CAPTURE}:results/capture end-to-end/ratio"),
      v(median(CAPTURE, "capture vs mariadb-binlog"), "{:.2f}"))),
    ("README.md", "| end to end, exactly-once: MySQL -> upsert topics (capture + sink, the sink's "
     "head start) | {} rows/s, {}x Debezium ({}-{}x) | {} rows/s, {}x ({}-{}x) |",
     (*_cmp(MARIADB_CMP, EO), *_cmp(MYSQL_CMP, EO))),
    ("README.md", "| the same with `pipeline.head-start: false` (Spark's own path, the one a "
     "cluster uses) | {}, {}x ({}-{}x) | {}, {}x ({}-{}x) |",
     (*_cmp(MARIADB_CMP, EO_NOHS), *_cmp(MYSQL_CMP, EO_NOHS))),
    ("README.md", "| `cdc-ingest start`, exactly-once | {}, {}x ({}-{}x) | {}, {}x ({}-{}x) |",
     (*_cmp(MARIADB_CMP, START), *_cmp(MYSQL_CMP, START))),
    ("README.md", "| end to end, at-least-once | {}, {}x ({}-{}x) | {}, {}x ({}-{}x) |",
     (*_cmp(MARIADB_CMP, ALO), *_cmp(MYSQL_CMP, ALO))),
    ("README.md", "| Debezium | {} | {} |",
     (k(median(MARIADB_CMP, DBZ)), k(median(MYSQL_CMP, DBZ)))),
    ("README.md", "| first output of `cdc-ingest start`: with the backlog / with none (Debezium) "
     "| {} s / {} s ({} s) | {} s / {} s ({} s) |",
     tuple(v(median(f, m)) for f in (MARIADB_CMP, MYSQL_CMP)
           for m in (f"{START}: first output",
                     f"{START}: empty backlog, first output (trigger.interval 0)",
                     f"{DBZ}: first output"))),
    ("README.md", "| CPU per row change, exactly-once | {}x Debezium's | {}x Debezium's |",
     tuple(v(f"{f}:results/{EO}: CPU per 1k rows/ratio", "{:.2f}")
           for f in (MARIADB_CMP, MYSQL_CMP))),
    ("README.md", "3 repeats of the two exactly-once measures and Debezium): {} rows/s, {}x "
     "({}-{}x), and with `head-start: false` {} rows/s, {}x ({}-{}x), against Debezium's {}.",
     (*_cmp("compare-5m.json", EO), *_cmp("compare-5m.json", EO_NOHS),
      k(median("compare-5m.json", DBZ)))),
    ("README.md", "3 repeats): {} rows/s, {}x ({}-{}x), and with `head-start: false` {} rows/s, "
     "{}x ({}-{}x), against Debezium's {}. At 300k",
     (*_cmp("compare-mysql-5m.json", EO), *_cmp("compare-mysql-5m.json", EO_NOHS),
      k(median("compare-mysql-5m.json", DBZ)))),
    ("README.md", "on MariaDB {} rows/s, {}x ({}-{}x), with `head-start: false` {}, {}x ({}-{}x), "
     "against Debezium's {}; on MySQL {}, {}x ({}-{}x), with `head-start: false` {}, {}x "
     "({}-{}x), against Debezium's {}.",
     tuple(fig for f in ("compare-300k.json", "compare-mysql-300k.json")
           for fig in (*_cmp(f, EO), *_cmp(f, EO_NOHS), k(median(f, DBZ))))),
    ("README.md", "Earlier READMEs quoted {} rows/s, {}x Debezium, at 1M changes.", EO_1M),
    ("README.md", "(`capture.json`: 1M rows, 1.3M row changes, process start to the last "
     "commit): {} rows/s, `mariadb-binlog -vv` {} rows/s in the same run. The same 300k-row "
     "workload on each server, back to back: MySQL 9.7 {} rows/s (`capture-mysql-json.json`, "
     "{}x the code before its binary JSON reader was compiled, in the same run), MariaDB 10.11 "
     "{} (`capture-mariadb-300k.json`).",
     (k(median(CAPTURE, "capture end-to-end"), 0), k(median(CAPTURE, "mariadb-binlog -vv"), 0),
      k(median(MYSQL_JSON, "capture end-to-end"), 0), v(median(MYSQL_JSON, BEFORE_JSON), "{:.2f}"),
      k(median(MARIADB_300K, "capture end-to-end"), 0))),
    ("README.md", "The snapshot of 1M rows: {} rows/s on MariaDB ({}x a plain PyMySQL scan of "
     "the table, `snapshot.json`), {} on MySQL ({}x, `snapshot-mysql.json`)",
     (k(median("snapshot.json", "snapshot p1 end-to-end"), 0),
      v("snapshot.json:results/snapshot p1 end-to-end/ratio", "{:.2f}"),
      k(median("snapshot-mysql.json", "snapshot p1 end-to-end"), 0),
      v("snapshot-mysql.json:results/snapshot p1 end-to-end/ratio", "{:.2f}"))),
    ("README.md", "One session, 5 repeats each (`snapshot-issue48-*.json`): MariaDB {}k rows/s, "
     "{}x the plain scan; MySQL {}k, {}x, with TLS, which MySQL 9.7 offers and both clients "
     "take; {}k, {}x, with TLS off for both.",
     tuple(fig for f in ("mariadb", "mysql-tls", "mysql-no-tls")
           for fig in (v(median(f"snapshot-issue48-{f}.json", "snapshot p1 end-to-end"),
                         "{:.0f}", 1e-3),
                       v(f"snapshot-issue48-{f}.json:results/snapshot p1 end-to-end/ratio",
                         "{:.2f}")))),
    ("README.md", "Capture's peak RSS: {} MiB, and {} MiB for a single 1M-row MySQL transaction "
     "(`capture.json`)",
     (v(median(CAPTURE, "capture peak RSS"), "{:.0f}"),
      v(median(CAPTURE, "one 1,000,000-row transaction: peak RSS"), "{:.0f}"))),
    ("README.md", "a read_committed consumer sees (`compare-sizes.json`): {} s with a backlog "
     "of 300k to 5M changes and {} s for one change on an idle pipeline (Debezium: {} s)",
     (span(FIRST_BACKLOG), span(FIRST_EMPTY),
      span([size(s, "debezium_first_output_s") for s in SIZE]))),
    ("README.md", "Spark's query is up {} s after the spawn, `compare-sizes-*.json`)",
     (span(QUERY_UP),)),
    ("README.md", "git 7a37f14; Debezium ran at {} / {} / {} rows/s in it",
     tuple(k(size(s, "debezium_rows_per_s")) for s in SIZE)),
    ("README.md", "p50 {} s, p99 {} s, max {} s (`pipeline.py --only latency`, "
     "`benchmarks/results/latency-head-start.json`",
     (v(latency("p50"), "{:.2f}", 1e-3), v(latency("p99"), "{:.2f}", 1e-3),
      v(latency("max"), "{:.2f}", 1e-3))),
    # docs/exactly-once.md
    ("docs/exactly-once.md", "(2 cores, MariaDB, 1.3M row changes, medians of 3; "
     "`benchmarks/results/compare.json`): exactly-once end to end {} rows/s, at-least-once {} "
     "(Debezium 3.5 on the same machine, binlog and broker: {}); on MySQL 9.7 {} and {} against "
     "Debezium's {} (`benchmarks/results/compare-mysql.json`); commit-to-visible latency at "
     "2,000 rows/s p50 {} s, p99 {} s (`benchmarks/results/latency-head-start.json`;",
     (*(k(median(f, m)) for f in (MARIADB_CMP, MYSQL_CMP) for m in (EO, ALO, DBZ)),
      v(latency("p50"), "{:.2f}", 1e-3), v(latency("p99"), "{:.2f}", 1e-3))),
    # docs/operations.md
    ("docs/operations.md", "(peak RSS {} MiB for a single 1M-row MySQL transaction at the "
     "default, `benchmarks/results/capture.json`)",
     (v(median(CAPTURE, "one 1,000,000-row transaction: peak RSS"), "{:.0f}"),)),
    ("docs/operations.md", "{}x on the sink alone at 1M changes, "
     "`benchmarks/results/read-path.json`)", (v("read-path.json:ratio_sink_alone_wall", "{:.2f}"),)),
    ("docs/operations.md", "At 2,000 rows/s, exactly-once, commit to visible: p50 {} s, p99 {} s "
     "(`benchmarks/results/latency-head-start.json`)",
     (v(latency("p50"), "{:.2f}", 1e-3), v(latency("p99"), "{:.2f}", 1e-3))),
    # benchmarks/README.md: compare.py, median of 3 per server
    *(("benchmarks/README.md", f"| {row} | {{}}k ({{}}-{{}}k) | {{}}x ({{}}-{{}}x) | "
       "{}k ({}-{}k) | {}x ({}-{}x) |",
       (*_spread(MARIADB_CMP, measure), *_spread(MYSQL_CMP, measure)))
      for row, measure in (("(b) exactly-once", EO),
                           ("(b') exactly-once, head-start false", EO_NOHS),
                           ("(e) `cdc-ingest start`", START), ("(a) at-least-once", ALO))),
    ("benchmarks/README.md", "| (c) Debezium | {}k ({}-{}k) | 1.00x | {}k ({}-{}k) | 1.00x |",
     (*_spread(MARIADB_CMP, DBZ)[:3], *_spread(MYSQL_CMP, DBZ)[:3])),
    ("benchmarks/README.md", "its 1M ratio ({}x) did not come back as a median of 3 at 1.3M "
     "changes ({}x, below)", (EO_1M[1], v(f"{MARIADB_CMP}:results/{EO}/ratio", "{:.2f}"))),
    # benchmarks/README.md: snapshot.py, issue 48's runs
    *(("benchmarks/README.md", f"| {label} | {{}}k | {{}}k ({{}}x) | {{}}k ({{}}x) |",
       (v(median(file, "plain scan + orjson"), "{:.1f}", 1e-3),
        *(fig for measure in ("snapshot p1 end-to-end", "snapshot p1 first chunk -> done")
          for fig in (v(median(file, measure), "{:.1f}", 1e-3),
                      v(f"{file}:results/{measure}/ratio", "{:.2f}")))))
      for label, file in (("MariaDB 10.11", "snapshot-issue48-mariadb.json"),
                          ("MySQL 9.7, TLS (the default)", "snapshot-issue48-mysql-tls.json"),
                          ("MySQL 9.7, TLS off", "snapshot-issue48-mysql-no-tls.json"))),
    # benchmarks/README.md: issue 48's later runs, partial JSON and the TLS context
    ("benchmarks/README.md", "`results/capture-mysql-partial-json.json`: capture {} rows/s, {}x "
     "the code of 63dc50e in the same run ({}, {}, {}), which read a diff's row images with the "
     "Python decoder and applied the diff in Python; our decoder alone {} rows/s.",
     (k(median(PARTIAL, "capture end-to-end"), 1), v(median(PARTIAL, BEFORE_PARTIAL), "{:.2f}"),
      *(v(f"{PARTIAL}:results/{BEFORE_PARTIAL}/samples/{i}", "{:.2f}") for i in range(3)),
      k(median(PARTIAL, "our decoder alone"), 0))),
    ("benchmarks/README.md", "the snapshot's plain scan below ran at {} rows/s against {}",
     (k(median(CTX, "plain scan + orjson")), k(median(TLS48, "plain scan + orjson")))),
    ("benchmarks/README.md", "a p1 run opens {} connections. Snapshot p1 {} rows/s, {}x the "
     "plain scan ({}); the code of 63dc50e {} ({}x): the same, within these runs' spread (p1 {})",
     (v(median(CTX, "snapshot p1 MySQL connections"), "{:.0f}"),
      k(median(CTX, "snapshot p1 end-to-end")),
      v(f"{CTX}:results/snapshot p1 end-to-end/ratio", "{:.2f}"),
      k(median(CTX, "plain scan + orjson")), k(median(CTX, BEFORE_CTX)),
      v(f"{CTX}:results/{BEFORE_CTX}/ratio", "{:.2f}"),
      Fig(lambda: [float(x) for x in at(f"{CTX}:results/snapshot p1 end-to-end/samples")],
          "{:.1f}k", 1e-3))),
    ("benchmarks/README.md", "(the scan {} against {} rows/s)",
     (k(median(CTX, "plain scan + orjson")), k(median(TLS48, "plain scan + orjson")))),
    # benchmarks/README.md: compare.py at 5M on MySQL and at 300k on both servers
    ("benchmarks/README.md", "(MySQL at 5M: {}k rows/s exactly-once, then {}k and {}k)",
     tuple(v(f"compare-mysql-5m.json:results/{EO}/samples/{i}", "{:.1f}", 1e-3)
           for i in range(3))),
    ("benchmarks/README.md", "slower at 300k on both servers ({}x and {}x against {}x and {}x "
     "with it)",
     tuple(v(f"{f}:results/{m}/ratio", "{:.2f}") for m in (EO_NOHS, EO)
           for f in ("compare-300k.json", "compare-mysql-300k.json"))),
    # benchmarks/README.md: capture.py
    ("benchmarks/README.md", "alone did {} rows/s on MySQL's workload "
     "(`results/capture-mysql.json`) against {} on MariaDB's (`results/capture.json`); with the "
     "compiled reader {} on MySQL's (`results/capture-mysql-json.json`) against {} on MariaDB's "
     "in the same 300k-row workload",
     (k(median("capture-mysql.json", "our decoder alone"), 0),
      k(median(CAPTURE, "our decoder alone"), 0), k(median(MYSQL_JSON, "our decoder alone"), 0),
      k(median(MARIADB_300K, "our decoder alone"), 0))),
    ("benchmarks/README.md", "`results/capture-mysql-json.json` (MySQL: capture {} rows/s, {}x the "
     "code of cd19c95, before the compiled JSON reader, in the same run: {}, {}, {}) and "
     "`results/capture-mariadb-300k.json` (MariaDB: {} rows/s). MySQL is {}x MariaDB here.",
     (k(median(MYSQL_JSON, "capture end-to-end"), 0), v(median(MYSQL_JSON, BEFORE_JSON), "{:.2f}"),
      *(v(f"{MYSQL_JSON}:results/{BEFORE_JSON}/samples/{i}", "{:.2f}") for i in range(3)),
      k(median(MARIADB_300K, "capture end-to-end"), 0),
      Fig(lambda: float(at(median(MYSQL_JSON, "capture end-to-end")))
          / float(at(median(MARIADB_300K, "capture end-to-end"))), "{:.2f}", 1.0))),
    ("benchmarks/README.md", "The MySQL binlog of the workload is larger: {} against {} bytes "
     "per row change", (_bytes_per_change("capture-mysql.json"), _bytes_per_change(CAPTURE))),
    ("benchmarks/README.md", "transaction, issue 16: capture {} rows/s, {}x `mariadb-binlog -vv` "
     "({}, {}, {}); {}x the code of 88d59b2",
     (k(median(CAPTURE, "capture end-to-end"), 0),
      v(median(CAPTURE, "capture vs mariadb-binlog"), "{:.2f}"),
      *(v(f"{CAPTURE}:results/capture vs mariadb-binlog/samples/{i}", "{:.2f}")
        for i in range(3)),
      v(median(CAPTURE, "capture vs code of 88d59b2"), "{:.2f}"))),
    ("benchmarks/README.md", "(MySQL: an older 300,000-row run, {} rows/s, its binary JSON "
     "decoded in Python)", (k(median("capture-mysql.json", "capture end-to-end"), 0),)),
    # benchmarks/README.md: pipeline.py
    ("benchmarks/README.md", "| end-to-end, exactly-once, 1M row changes | {} rows/s | "
     "`results/compare-sizes.json`", (EO_1M[0],)),
    ("benchmarks/README.md", "| end-to-end, at-least-once, 1M row changes | {} rows/s | "
     "`results/compare-sizes.json` |", (ALO_1M[0],)),
    ("benchmarks/README.md", "| sink alone, wall / foreachBatch, 1M row changes | {} / {} rows/s "
     "| `results/read-path.json`",
     (k("read-path.json:summary/librdkafka/rows_per_s"),
      k("read-path.json:summary/librdkafka/foreach_batch_rows_per_s"))),
    ("benchmarks/README.md", "| latency at 2,000 rows/s | p50 {} ms, p95 {}, p99 {}, max {} | "
     "`results/latency-head-start.json`",
     tuple(v(latency(p), "{:.0f}") for p in ("p50", "p95", "p99", "max"))),
    ("benchmarks/README.md", "(`results/compare-sizes-1M.json`, `first`'s timeline) capture "
     "was done {} s after the spawn and the whole changelog written at {} s, while Spark's "
     "query came up at {} s",
     (v(timeline("1M", "backlog", "capture done")),
      v(timeline("1M", "backlog", "whole changelog written")),
      v(timeline("1M", "backlog", "sink query started")))),
    ("benchmarks/README.md", "**The sink alone** (`results/read-path.json`): {} rows/s through "
     "`foreachBatch` (2 tasks reading their ranges with librdkafka); per 1M changes the JVM "
     "used {} CPU-s, the Python workers {}, the broker {}.",
     (k("read-path.json:summary/librdkafka/foreach_batch_rows_per_s"),
      *(v(f"read-path.json:summary/librdkafka/cpu_s_per_million_changes/{role}")
        for role in ("sink JVM", "sink python workers", "kafka")))),
    # benchmarks/README.md: snapshot.py
    *(("benchmarks/README.md", f"| {row} | {{}}{lead} ({{}}x) | {{}}{tail} ({{}}x) |",
       (k(median("snapshot.json", measure)),
        v(f"snapshot.json:results/{measure}/ratio", "{:.2f}"),
        k(median("snapshot-mysql.json", measure)),
        v(f"snapshot-mysql.json:results/{measure}/ratio", "{:.2f}")))
      for row, measure, lead, tail in (
          ("plain scan + orjson", "plain scan + orjson", " rows/s", ""),
          ("snapshot p2 end-to-end", "snapshot p2 end-to-end", "", ""),
          ("snapshot p1, code of 88d59b2 (PyMySQL's rows)",
           "snapshot p1 end-to-end, code of 88d59b2", "", ""))),
    ("benchmarks/README.md", "| snapshot p1 end-to-end | **{} ({}x)** | **{} ({}x)** |",
     (k(median("snapshot.json", "snapshot p1 end-to-end")),
      v("snapshot.json:results/snapshot p1 end-to-end/ratio", "{:.2f}"),
      k(median("snapshot-mysql.json", "snapshot p1 end-to-end")),
      v("snapshot-mysql.json:results/snapshot p1 end-to-end/ratio", "{:.2f}"))),
    ("benchmarks/README.md", "| capture CPU, p1 | {} s | {} s |",
     (v(median("snapshot.json", "snapshot p1 CPU")),
      v(median("snapshot-mysql.json", "snapshot p1 CPU")))),
    ("benchmarks/README.md", "snapshot p1 ran at {}x the rate of the code of 88d59b2 on MariaDB",
     (v("snapshot.json:p1_vs_baseline", "{:.2f}"),)),
    ("benchmarks/README.md", "{} MB of InnoDB data for 1M rows (`table.data_bytes` of "
     "`results/snapshot.json`)", (v("snapshot.json:table/data_bytes", "{:.0f}", 1e-6),)),
    # benchmarks/README.md: compare.py
    ("benchmarks/README.md", "Debezium ran at {} / {} / {} rows/s; its rate moves",
     tuple(k(size(s, "debezium_rows_per_s")) for s in SIZE)),
    *(("benchmarks/README.md", f"| {s} | {{}} rows/s | {{}}x | {{}} s / {{}} s | {{}} s / {{}} s |",
       (k(size(s, "eo_rows_per_s")), v(size(s, "eo_vs_debezium"), "{:.2f}"),
        v(size(s, "first_first_output_s")), v(size(s, "debezium_first_output_s")),
        v(size(s, "first_empty_trigger_0_s")), v(size(s, "first_empty_default_trigger_s"))))
      for s in SIZE),
    *(("benchmarks/README.md", f"| {s} | {{}} | {{}} | {{}} | {{}} | {{}} | {{}} | {{}} | {{}} |",
       (*(v(f"{CPU_1M[i]}/eo/{role}") for role in (
           "capture", "sink driver (python)", "sink JVM", "sink python workers", "kafka")),
        v(f"{CPU_1M[i]}/debezium/Connect JVM"), v(f"{CPU_1M[i]}/debezium/kafka"),
        v(f"compare-sizes-{s}.json:runs/0/eo/head_start/rows_in", "{:,.0f}")))
      for i, s in enumerate(SIZE)),
    ("benchmarks/README.md", "and {}M of the 5M; Spark's tasks wrote the rest",
     (v("compare-sizes-5M.json:runs/0/eo/head_start/rows_in", "{:.1f}", 1e-6),)),
    ("benchmarks/README.md", "query up at {} / {} / {} s with the backlog, {} s on an empty one",
     (*(v(timeline(s, "backlog", "sink query started")) for s in SIZE),
      span([timeline(s, r, "sink query started") for s in SIZE for r in EMPTY_RUNS]))),
    ("benchmarks/README.md", "capture starts at {} s, the sink topic is in the broker's metadata "
     "at {} s (the head start created it), its first transaction is visible at {} s, the whole "
     "backlog at {} s; Spark's first batch starts at {} s",
     tuple(v(timeline("300k", "backlog", event), "{:.2f}") for event in (
         "capture starts", "sink topic in metadata", "first message read_committed",
         "whole changelog written", "first batch: start"))),
    # benchmarks/README.md: avro_sink.py
    ("benchmarks/README.md", "| end-to-end exactly-once, rows/s (median) | {} | {} | {}x (pairs: "
     "{} {} {}) |", (*_avro_row("end-to-end exactly-once, {}: rows/s", "{:,.0f}"),
                     *_pairs(AVRO, "end-to-end exactly-once: rows_per_s"))),
    ("benchmarks/README.md", "| end-to-end, `foreachBatch` rows/s | {} | {} | {}x |",
     _avro_row("end-to-end exactly-once, {}: foreachBatch rows/s", "{:,.0f}")),
    ("benchmarks/README.md", "| end-to-end, CPU s per 1k rows | {} | {} | {}x |",
     _avro_row("end-to-end exactly-once, {}: CPU per 1k rows", "{:.3f}")),
    ("benchmarks/README.md", "| sink alone, rows/s | {} | {} | {}x (pairs: {} {} {}) |",
     (*_avro_row("sink alone, {}: rows/s", "{:,.0f}"), *_pairs(AVRO, "sink alone: rows_per_s"))),
    ("benchmarks/README.md", "| sink alone, `foreachBatch` rows/s | {} | {} | {}x (pairs: {} {} "
     "{}) |", (*_avro_row("sink alone, {}: foreachBatch rows/s", "{:,.0f}"),
               *_pairs(AVRO, "sink alone: foreach_batch_rows_per_s"))),
    ("benchmarks/README.md", "| sink alone, CPU s per 1k rows (sink) | {} | {} | {}x |",
     _avro_row("sink alone, {}: sink CPU per 1k rows", "{:.3f}")),
    ("benchmarks/README.md", "| sink alone, Python workers CPU s per 1k rows | {} | {} | {}x |",
     _avro_row("sink alone, {}: python workers CPU per 1k rows", "{:.3f}")),
    ("benchmarks/README.md", "| serde alone, records/s (`avro-sink-serde.json`) | {} | {} | "
     "**{}x** (pairs: {} {} {}) |",
     (*_avro_row("serde alone, {}: records/s", "{:,.0f}", SERDE)[:2],
      v(f"{SERDE}:results/serde alone, avro: records/s/ratio", "{:.2f}"),
      *_pairs(SERDE, "serde alone: records_per_s"))),
    ("benchmarks/README.md", "| serde alone, CPU s per 1k records (`avro-sink-serde.json`) | {} "
     "| {} | {}x |", (*_avro_row("serde alone, {}: CPU per 1k records", "{:.4f}", SERDE)[:2],
                      v(f"{SERDE}:results/serde alone, avro: CPU per 1k records/ratio"))),
    ("benchmarks/README.md", "| bytes per message (key + value) | {} | {} | {}x |",
     _avro_row("end-to-end exactly-once, {}: bytes per message", "{:.1f}")),
    ("benchmarks/README.md", "and has fastavro write it: {} CPU-s per 1k records against {}. In "
     "the sink that shows in the Python workers ({} against {} CPU-s per 1k rows)",
     (v(median(SERDE, "serde alone, avro: CPU per 1k records"), "{:.4f}"),
      v(median(SERDE, "serde alone, json: CPU per 1k records"), "{:.4f}"),
      v(median(AVRO, "sink alone, avro: python workers CPU per 1k rows"), "{:.3f}"),
      v(median(AVRO, "sink alone, json: python workers CPU per 1k rows"), "{:.3f}"))),
    ("benchmarks/README.md", "the medians give {}x.",
     (v(f"{AVRO}:results/end-to-end exactly-once, avro: rows/s/ratio", "{:.2f}"),)),
    ("benchmarks/README.md", "`RowCodec.encode` own time {} (fastavro's", (
        _profile_share("avro.py:196(encode)", cumulative=False),)),
    ("benchmarks/README.md", "`RowCodec.datum` {} cumulative (of which the decimal's unscaled "
     "bytes {} and the two timestamps {}), `AvroSinkSerde.add` itself {}, msgspec's decoding of "
     "the record, key and row {}, the framing {}.",
     (_profile_share("avro.py:175(datum)", cumulative=True),
      _profile_share("avro_values.py:44(unscaled)", cumulative=True),
      _profile_share("avro_values.py:37(_timestamp_us)", cumulative=True),
      _profile_share("avro_serde.py:80(add)", cumulative=False),
      _profile_share("(<method 'decode' of 'msgspec.json.Decoder' objects>)", cumulative=False),
      _profile_share("avro.py:65(frame)", cumulative=True))),
    ("benchmarks/README.md", "Avro messages are a third smaller ({} against {} bytes",
     (v(median(AVRO, "end-to-end exactly-once, avro: bytes per message"), "{:.0f}"),
      v(median(AVRO, "end-to-end exactly-once, json: bytes per message"), "{:.0f}"))),
    # benchmarks/README.md: tx_metadata.py, its first table's throughput rows
    ("benchmarks/README.md", "| e2e rows/s without / with (medians) | {} / {} ({}x) | {} / {} "
     "({}x) |", tuple(fig for shape in ("small", "multi") for fig in (
         v(f"{TX}/{shape}/measures/{shape}: e2e rows/s, without metadata/median", "{:,.0f}"),
         v(f"{TX}/{shape}/measures/{shape}: e2e rows/s, with metadata/median", "{:,.0f}"),
         ratio(f"{TX}/{shape}/measures/{shape}: e2e rows/s, with metadata/median",
               f"{TX}/{shape}/measures/{shape}: e2e rows/s, without metadata/median")))),
    ("benchmarks/README.md", "| capture done (s) without / with | {} / {} | {} / {} |",
     tuple(v(f"{TX}/{shape}/measures/{shape}: capture done, {w}/median")
           for shape in ("small", "multi") for w in ("without", "with"))),
    ("benchmarks/README.md", "far above the {} ms p50 of a quiet machine "
     "(`results/latency-head-start.json`)", (v(latency("p50"), "{:.0f}"),)),
    # benchmarks/README.md: read_path.py, the prototype decision 0016 was taken on
    ("benchmarks/README.md", "`benchmarks/_read_path_sink.py` at b68d9ac): {}x on the wall at 1M "
     "changes, {}x in foreachBatch.",
     (v("read-path-prototype.json:ratio_sink_alone_wall", "{:.2f}"),
      v("read-path-prototype.json:ratio_foreach_batch", "{:.2f}"))),
    # benchmarks/README.md: record_walk.py
    ("benchmarks/README.md", "| json | 8090cf7 (before) | {} | {} | {} |",
     (v("record-walk.json:walks/0/modules_crossed", "{:.0f}"),
      v("record-walk.json:walks/0/steps", "{:.0f}"),
      v("record-walk.json:walks/0/returns", "{:.0f}"))),
    ("benchmarks/README.md", "| json | 1153a32 and later | {} | {} | {} |",
     (v("record-walk.json:walks/1/modules_crossed", "{:.0f}"),
      v("record-walk.json:walks/1/steps", "{:.0f}"),
      v("record-walk.json:walks/1/returns", "{:.0f}"))),
    ("benchmarks/README.md", "| avro | 8090cf7 (before) | {} | {} | {} |",
     (v("record-walk.json:walks/2/modules_crossed", "{:.0f}"),
      v("record-walk.json:walks/2/steps", "{:.0f}"),
      v("record-walk.json:walks/2/returns", "{:.0f}"))),
    ("benchmarks/README.md", "| avro | 1153a32 and later | {} | {} | {} |",
     (v("record-walk.json:walks/3/modules_crossed", "{:.0f}"),
      v("record-walk.json:walks/3/steps", "{:.0f}"),
      v("record-walk.json:walks/3/returns", "{:.0f}"))),
    ("benchmarks/README.md", "| debezium | 8090cf7 (before) | {} | {} | {} |",
     (v("record-walk.json:walks/4/modules_crossed", "{:.0f}"),
      v("record-walk.json:walks/4/steps", "{:.0f}"),
      v("record-walk.json:walks/4/returns", "{:.0f}"))),
    ("benchmarks/README.md", "| debezium | 1153a32 and later | {} | {} | {} |",
     (v("record-walk.json:walks/5/modules_crossed", "{:.0f}"),
      v("record-walk.json:walks/5/steps", "{:.0f}"),
      v("record-walk.json:walks/5/returns", "{:.0f}"))),
    ("benchmarks/README.md", "8090cf7 = {}x for json (pairs {}-{}), {}x for avro ({}-{}), {}x for "
     "debezium ({}-{})",
     tuple(v(f"record-walk.json:cpu_per_record/{i}/ratio_{k}", "{:.2f}")
           for i in range(3) for k in ("median", "min", "max"))),
    ("README.md", "verify compares faster than the snapshot reads the same table ({}x at 1M "
     "rows, {}x at 10M",
     (ratio("verify-1m.json:results/1,000,000 rows: verify/median",
            "verify-1m.json:results/1,000,000 rows: snapshot/median"),
      ratio("verify-10m-fast.json:results/10,000,000 rows: verify/median",
            "verify-10m-fast.json:results/10,000,000 rows: snapshot/median"))),
    # benchmarks/README.md: verify.py
    ("benchmarks/README.md", "| 1,000,000 | {} | {} | {} MB | {} | {} MB |",
     tuple(v(f"verify-1m.json:results/1,000,000 rows: {k}/median", "{:,.0f}")
           for k in ("snapshot", "verify", "verify peak RSS", "verify, code of c3eacb9",
                     "verify peak RSS, code of c3eacb9"))),
    ("benchmarks/README.md", "verify is {}x of the snapshot's rate on the same table "
     "(c3eacb9's code: {}x), {}x the rows/s of before.",
     (ratio("verify-1m.json:results/1,000,000 rows: verify/median",
            "verify-1m.json:results/1,000,000 rows: snapshot/median"),
      ratio("verify-1m.json:results/1,000,000 rows: verify, code of c3eacb9/median",
            "verify-1m.json:results/1,000,000 rows: snapshot/median"),
      ratio("verify-1m.json:results/1,000,000 rows: verify/median",
            "verify-1m.json:results/1,000,000 rows: verify, code of c3eacb9/median"))),
    ("benchmarks/README.md", "| 10,000,000 | {} | {} | {} MB | {} MB |",
     tuple(v(f"verify-10m-fast.json:results/10,000,000 rows: {k}/median", "{:,.0f}")
           for k in ("snapshot", "verify", "verify peak RSS",
                     "verify peak RSS, all its processes"))),
    ("benchmarks/README.md", "{}x of the snapshot's rate; memory stays bounded at 10M rows",
     (ratio("verify-10m-fast.json:results/10,000,000 rows: verify/median",
            "verify-10m-fast.json:results/10,000,000 rows: snapshot/median"),)),
    ("benchmarks/README.md", "topic's reader process and verify together peaked at {} MB",
     (v("verify-10m-fast.json:results/10,000,000 rows: verify peak RSS, all its processes"
        "/median", "{:,.0f}"),)),
    # benchmarks/README.md: continuous_cost.py
    ("benchmarks/README.md", "| 5,000 (the default) | {} | {} | {}x | "
     "`results/continuous-cost-5k.json` |",
     (v("continuous-cost-5k.json:results/e2e exactly-once, plain/median", "{:,.0f}"),
      v("continuous-cost-5k.json:results/e2e exactly-once, verify --continuous running/median",
        "{:,.0f}"),
      v("continuous-cost-5k.json:results/e2e exactly-once, verify --continuous running/ratio",
        "{:.2f}"))),
    ("benchmarks/README.md", "| 10,000 | {} | {} | {}x | `results/continuous-cost.json` |",
     (v("continuous-cost.json:results/e2e exactly-once, plain/median", "{:,.0f}"),
      v("continuous-cost.json:results/e2e exactly-once, verify --continuous running/median",
        "{:,.0f}"),
      v("continuous-cost.json:results/e2e exactly-once, verify --continuous running/ratio",
        "{:.2f}"))),
    ("docs/operations.md", "the pipeline kept {}x of its throughput at 5,000 rows/s and {}x "
     "at 10,000.",
     (v("continuous-cost-5k.json:results/e2e exactly-once, verify --continuous running/ratio",
        "{:.2f}"),
      v("continuous-cost.json:results/e2e exactly-once, verify --continuous running/ratio",
        "{:.2f}"))),
    ("benchmarks/README.md", "| 10,000,000 | {} | {} | {} MB | {} | {} MB |",
     tuple(v(f"verify-10m.json:results/10,000,000 rows: {k}/median", "{:,.0f}")
           for k in ("snapshot", "verify", "verify peak RSS", "verify, code of 8090cf7",
                     "verify peak RSS, code of 8090cf7"))),
    ("benchmarks/README.md", "temporary folder, verify/store.py): {} MB at 10M rows, where the "
     "dict of 8090cf7 took {} MB.",
     (v("verify-10m.json:results/10,000,000 rows: verify peak RSS/median", "{:,.0f}"),
      v("verify-10m.json:results/10,000,000 rows: verify peak RSS, code of 8090cf7/median",
        "{:,.0f}"))),
    ("benchmarks/README.md", "The price was speed: {}x of the dict's rows/s, and {}x of the "
     "snapshot's rate",
     (ratio("verify-10m.json:results/10,000,000 rows: verify/median",
            "verify-10m.json:results/10,000,000 rows: verify, code of 8090cf7/median"),
      ratio("verify-10m.json:results/10,000,000 rows: verify/median",
            "verify-10m.json:results/10,000,000 rows: snapshot/median"))),
]


def _flat(text: str) -> str:
    return " ".join(text.split())


@cache
def _doc(name: str) -> str:
    return _flat((ROOT / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize(("doc", "phrase", "figures"), FIGURES,
                         ids=[f"{d}: {p[:50]}" for d, p, _ in FIGURES])
def test_the_doc_quotes_the_result_file(doc: str, phrase: str, figures: tuple[Fig, ...]) -> None:
    assert phrase.count("{}") == len(figures), phrase
    expected = _flat(phrase.format(*(f.text() for f in figures)))
    assert expected in _doc(doc), f"{doc} should say: {expected}"


@pytest.mark.parametrize("doc", DOCS)
def test_every_result_file_a_doc_names_exists(doc: str) -> None:
    text = _doc(doc)
    names = {m.group(1) for pattern in (r"`(?:benchmarks/)?(?:results/)?([\w*./-]+\.json)`",
                                        r"results/([\w*./-]+\.json)")
             for m in re.finditer(pattern, text)
             if "default" not in text[max(m.start() - 12, 0):m.start()]}  # an --out default
    missing = [n for n in sorted(names)
               if not glob.glob(str(RESULTS / n)) and not glob.glob(str(ROOT / n))]
    assert not missing, f"{doc} names result files that do not exist: {missing}"


def test_the_benchmarks_readme_has_one_latest_run_of_compare() -> None:
    text = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    section = text.split("## `compare.py`", 1)[1].split("\n## ", 1)[0]
    assert len(re.findall(r"^### Latest run", section, flags=re.M)) == 1


def test_the_readme_names_the_commit_both_compare_runs_measured() -> None:
    commit = _same_commit(MARIADB_CMP, MYSQL_CMP)
    expected = (f"own ratios (`compare.json` and `compare-mysql.json`, git {commit}, one run "
                "per server)")
    assert _flat(expected) in _doc("README.md")
    assert _flat(f"back to back on a quiet machine (git {commit})") in _doc("benchmarks/README.md")
    five = _same_commit("compare-5m.json")
    assert _flat(f"(`compare-5m.json`, git {five}, 3 repeats") in _doc("README.md")
    mysql_five = _same_commit("compare-mysql-5m.json")
    assert _flat(f"(`compare-mysql-5m.json`, git {mysql_five}, the same") in _doc("README.md")
    small = _same_commit("compare-300k.json", "compare-mysql-300k.json")
    assert _flat(f"`compare-mysql-300k.json`, git {small}, the same") in _doc("README.md")
