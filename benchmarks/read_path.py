#!/usr/bin/env python3
"""The sink's read path, issue 36 / decisions 0010 and 0016: the sink alone with its tasks
reading their changelog ranges with librdkafka (this tree) against the same sink with Spark's
Kafka source handing the records over as Arrow batches (``--baseline``, default the last commit
before decision 0016, run from a git worktree with ``PYTHONPATH``).

One workload (``--changes``, default 1M: inserts, then 20% updated and 10% deleted), one
exactly-once end-to-end run (this tree) to write its changelog (pipeline.py's
``run_throughput``), then the sink alone over that changelog, alternately the baseline and this
tree, ``--repeat`` times each. Both are exactly-once and must write exactly the workload's
changes. Reported: medians of the wall time (process start -> every offset committed), of
foreachBatch rows/s and of CPU seconds per million changes by role; the ratio this tree /
baseline.

    python benchmarks/read_path.py --repeat 3

The prototype that decided 0016 (``benchmarks/_read_path_sink.py`` at commit b68d9ac, result
``results/read-path-prototype.json``) ran the same comparison with the reading done by a
patched ``foreachBatch``.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import secrets
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _common import (
    REPO,
    add_service_args,
    machine_info,
    services_from_args,
    setup_logging,
    write_json,
)
from capture import make_workload
from compare import rows_for
from pipeline import PARALLELISM, Settings, run_throughput

from cdc_ingest.download_cache import cache_dir

log = logging.getLogger("benchmarks.read_path")
ARMS = ("spark source", "librdkafka")
BASELINE = "b68d9ac"  # the last commit whose sink read the changelog with Spark's Kafka source
ROLES = ("sink driver (python)", "sink JVM", "sink python workers", "kafka")


@contextlib.contextmanager
def baseline_tree(commit: str, home: Path) -> Iterator[Path]:
    """``commit`` checked out in a git worktree under ``home``, removed afterwards."""
    tree = home / f"baseline-{commit}"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", str(tree),
                    commit], check=True)
    try:
        yield tree
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)],
                       check=False)


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def summary(runs: list[dict[str, Any]], changes: int) -> dict[str, Any]:
    ok = [r for r in runs if "error" not in r]
    out: dict[str, Any] = {
        "runs": len(ok),
        "wall_s": _median([r["seconds"] for r in ok]),
        "rows_per_s": _median([r["rows_per_s"] for r in ok]),
        "foreach_batch_rows_per_s": _median(
            [r["sink_batches"]["foreach_batch_rows_per_s"] for r in ok
             if r["sink_batches"]["foreach_batch_rows_per_s"]]),
        "first_batch_start_s": _median([r["sink_batches"].get("first_batch_start_s") for r in ok
                                        if r["sink_batches"].get("first_batch_start_s")]),
    }
    out["cpu_s_per_million_changes"] = {
        role: round(m, 2) for role in ROLES
        if (m := _median([r["cpu_s"][role] / (changes / 1e6) for r in ok
                          if role in r["cpu_s"]])) is not None}
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--changes", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--max-offsets-per-trigger", type=int, default=500_000)
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--baseline", default=BASELINE,
                   help="commit whose sink is the baseline (default %(default)s)")
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "read-path.json")
    add_service_args(p, "keep the temp folder (logs, pipeline YAMLs)")
    args = p.parse_args(argv)
    setup_logging()
    st = Settings(max_offsets=args.max_offsets_per_trigger, trigger="0", latency_trigger="0",
                  latency_capture_interval="100ms", latency_rate=0, latency_seconds=0,
                  latency_warmup_s=0, latency_rows_per_tx=0)
    machine = machine_info()
    tag = f"rp-{secrets.token_hex(3)}"
    runs: dict[str, list[dict[str, Any]]] = {arm: [] for arm in ARMS}
    errors: list[str] = []
    wall = time.perf_counter()
    with services_from_args(args) as svc, baseline_tree(args.baseline, svc.home) as tree:
        # the baseline uses this checkout's cache (its Spark class-data archive and jars):
        # its own, in a fresh worktree, would be empty, and the archive it then builds in the
        # background would run during the measures
        programs = {"spark source": ["env", f"PYTHONPATH={tree}",
                                     f"CDC_INGEST_CACHE={cache_dir()}", sys.executable, "-m",
                                     "cdc_ingest.cli"], "librdkafka": None}
        workdir = svc.home / "read-path"
        workdir.mkdir()
        wl = make_workload(svc, rows_for(args.changes))
        log.info("workload: %d row changes", wl.changes)
        eo = f"{tag}-eo"
        writer_run = run_throughput(svc, wl, eo, 5700, workdir, st, "exactly-once",
                                    args.timeout)
        for n in range(args.repeat):
            order = ARMS if n % 2 == 0 else ARMS[::-1]
            for arm in order:
                name = f"{tag}-{arm.split()[0]}-{n + 1}"
                log.info("repeat %d/%d: sink alone, %s", n + 1, args.repeat, arm)
                try:
                    runs[arm].append(run_throughput(
                        svc, wl, name, 5710 + n, workdir, st, "exactly-once", args.timeout,
                        changelog_of=eo, sink_program=programs[arm],
                        # Spark's read path alone: no driver head start (decision 0017),
                        # which the baseline has not and would write part of the changelog
                        pipeline_options={"head-start": False} if arm == "librdkafka"
                        else None))
                except Exception as exc:  # reported; the exit code says so
                    log.exception("%s failed", name)
                    errors.append(f"{name}: {exc}")
                    runs[arm].append({"error": str(exc)})
    result = {arm: summary(runs[arm], wl.changes) for arm in ARMS}
    base, proto = result["spark source"], result["librdkafka"]
    ratio = (proto["rows_per_s"] / base["rows_per_s"]
             if proto["rows_per_s"] and base["rows_per_s"] else None)
    fb_ratio = (proto["foreach_batch_rows_per_s"] / base["foreach_batch_rows_per_s"]
                if proto["foreach_batch_rows_per_s"] and base["foreach_batch_rows_per_s"]
                else None)
    doc = {
        "benchmark": "read_path", "baseline": args.baseline, "changes": wl.changes,
        "repeat": args.repeat,
        "parallelism": PARALLELISM, "max_offsets_per_trigger": args.max_offsets_per_trigger,
        "machine": machine, "seconds_total": time.perf_counter() - wall,
        "summary": result, "ratio_sink_alone_wall": ratio,
        "ratio_foreach_batch": fb_ratio,
        "changelog_run": {k: writer_run[k] for k in ("seconds", "rows_per_s", "cpu_s")},
        "runs": runs, "errors": errors,
    }
    write_json(args.out, doc)
    print(f"\nsink alone over {wl.changes:,} changes, {args.repeat} repeats, medians")
    for arm in ARMS:
        s = result[arm]
        print(f"  {arm:12}: wall {s['wall_s']:.1f} s = {s['rows_per_s']:,.0f} rows/s, "
              f"foreachBatch {s['foreach_batch_rows_per_s'] or 0:,.0f} rows/s, first batch at "
              f"{s['first_batch_start_s'] or 0:.1f} s, CPU s per M changes "
              f"{s['cpu_s_per_million_changes']}")
    print(f"  librdkafka / spark source: wall {ratio or 0:.2f}x, foreachBatch {fb_ratio or 0:.2f}x "
          f"(baseline {args.baseline})")
    print(f"results: {args.out}")
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
