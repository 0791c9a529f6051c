"""``cdc-ingest verify``: rows/s and peak memory at table sizes, against the snapshot's rate.

    python benchmarks/verify.py [--rows 1000000,10000000] [--repeat 1] [--baseline-ref REF]

Per size: inserts ``rows`` rows into ``bench.orders`` (snapshot.py's table: capture.py's rows,
about 200 bytes each), snapshots them into the changelog with ``cdc-ingest capture``
(``scan.startup.mode: snapshot``, timed from process start to its exit: the snapshot's rows/s
on this table), writes the sink topic with ``cdc-ingest sink`` until the sink group has
committed the whole changelog, then runs ``cdc-ingest verify`` (exit 0 expected: the copy is
equal), ``--repeat`` times, timing it and taking its peak RSS from the kernel (``wait4``). With
``--baseline-ref`` the same verify runs with that commit's product code too, back to back (the
order alternating), to show what the change did.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _common import (
    REPO,
    Measure,
    add_service_args,
    baseline_package,
    git_state,
    machine_info,
    process_tree,
    product_env,
    ratios,
    services_from_args,
    setup_logging,
    stop_process,
    table,
    write_json,
)
from snapshot import make_table, run_snapshot, write_config

from cdc_ingest.kafka.offsets import GroupOffsets
from cdc_ingest.mysql import connection_settings
from cdc_ingest.verify.clock import PipelineClock

log = logging.getLogger("benchmarks.verify")
PARTITIONS = 2


def write_sink_topic(svc: Any, config: Path, workdir: Path, timeout_s: float) -> float:
    """``cdc-ingest sink`` over the complete changelog until its group committed the end."""
    from cdc_ingest.config import load_pipeline  # noqa: PLC0415 - the product's own names

    defn = load_pipeline(config)
    kafka = {"bootstrap.servers": svc.bootstrap}
    topic = defn.pipeline.changelog_topic
    clock = PipelineClock(connection_settings(defn.source), kafka, defn.pipeline.offsets_topic,
                          topic, defn.sink_group_id)
    try:  # the offset after each partition's last record (transaction markers follow it)
        ends = clock.last_records(clock.changelog_ends())
    finally:
        clock.close()
    log_file = workdir / f"{config.stem}.sink.log"
    began = time.perf_counter()
    with log_file.open("ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "cdc_ingest.cli", "sink", "--config",
                                 str(config)], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, cwd=workdir, env=product_env())
    group = GroupOffsets(kafka, defn.sink_group_id)
    try:
        while True:
            done = group.committed(topic, list(ends))
            if all(done.get(p, 0) >= end for p, end in ends.items()):
                return time.perf_counter() - began
            if proc.poll() is not None:
                raise RuntimeError(f"the sink exited with {proc.returncode}: see {log_file}")
            if time.perf_counter() - began > timeout_s:
                raise RuntimeError(f"the sink did not finish in {timeout_s:.0f} s")
            time.sleep(0.5)
    finally:
        group.close()
        stop_process(proc, timeout=90.0)


def run_verify(config: Path, workdir: Path, rows: int, code: Path | None,
               timeout_s: float) -> dict[str, Any]:
    """One ``cdc-ingest verify``: wall seconds, CPU seconds and peak RSS (kernel's)."""
    env = product_env({"PYTHONPATH": str(code)} if code is not None else None)
    began = time.perf_counter()
    with (workdir / f"{config.stem}.verify.log").open("ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "cdc_ingest.cli", "verify", "--config",
                                 str(config)], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, cwd=workdir, env=env)
    deadline = time.monotonic() + timeout_s
    tree_peak = 0  # the sum over verify's processes (it reads the topic in a second one)
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"verify did not finish in {timeout_s:.0f} s")
        tree_peak = max(tree_peak, sum(p.rss_bytes or 0 for p in process_tree(proc.pid)))
        time.sleep(0.2)
    seconds = time.perf_counter() - began
    code_ = os.waitstatus_to_exitcode(status)
    if code_ != 0:
        raise RuntimeError(f"verify exited {code_} (want 0: the copy is equal); see "
                           f"{workdir / (config.stem + '.verify.log')}")
    return {"seconds": seconds, "rows_per_s": rows / seconds,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_rss_mb": usage.ru_maxrss / 1024,
            "peak_rss_sum_mb": tree_peak / 2**20}


def measures_of(sizes: list[dict[str, Any]], baseline: str | None) -> list[Measure]:
    out = []
    for size in sizes:
        n = size["rows"]
        label = f"{n:,} rows"
        runs = size["verify"]
        out += [
            Measure(f"{label}: snapshot", "rows/s", [size["snapshot"]["rows_per_s"]],
                    f"{label}: snapshot", 0, "cdc-ingest capture, snapshot mode, start to exit"),
            Measure(f"{label}: verify", "rows/s", [r["rows_per_s"] for r in runs],
                    f"{label}: snapshot", 0, "cdc-ingest verify, start to exit 0"),
            Measure(f"{label}: verify peak RSS", "MB", [r["peak_rss_mb"] for r in runs],
                    digits=0, note="the largest process (the kernel's, wait4)"),
            Measure(f"{label}: verify peak RSS, all its processes", "MB",
                    [r["peak_rss_sum_mb"] for r in runs if "peak_rss_sum_mb" in r], digits=0,
                    note="the sum over verify's process tree, sampled every 0.2 s"),
            Measure(f"{label}: verify CPU", "s", [r["cpu_s"] for r in runs]),
        ]
        if baseline and size.get("verify_baseline"):
            base = size["verify_baseline"]
            out += [
                Measure(f"{label}: verify, code of {baseline}", "rows/s",
                        [r["rows_per_s"] for r in base], f"{label}: snapshot", 0),
                Measure(f"{label}: verify peak RSS, code of {baseline}", "MB",
                        [r["peak_rss_mb"] for r in base], digits=0),
            ]
    return [m for m in out if m.samples]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", default="1000000,10000000",
                   help="table sizes, comma-separated (default %(default)s)")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--baseline-ref", default=None)
    p.add_argument("--timeout", type=float, default=3600.0)
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "verify.json")
    add_service_args(p, "keep the run's folder (servers' data, logs)")
    args = p.parse_args()
    setup_logging()
    sizes = [int(s) for s in args.rows.split(",") if s.strip()]
    started = time.time()
    with services_from_args(args) as svc:
        workdir = svc.home / "verify"
        workdir.mkdir(parents=True, exist_ok=True)
        code = (baseline_package(args.baseline_ref, workdir / "baseline")
                if args.baseline_ref else None)
        results = []
        for i, rows in enumerate(sizes):
            tb = make_table(svc, rows, 0)
            name = f"vb-{os.getpid()}-{i}"
            snap = run_snapshot(svc, rows, name, 6100 + 10 * i, 1, workdir, args.timeout)
            config, _ = write_config(svc, workdir, name, "orders", 6100 + 10 * i, 1)
            sink_s = write_sink_topic(svc, config, workdir, args.timeout)
            log.info("%d rows: snapshot %.0f rows/s, sink %.1f s", rows, snap["rows_per_s"],
                     sink_s)
            size: dict[str, Any] = {"rows": rows, "insert_s": tb.insert_s,
                                    "table_bytes": tb.data_bytes, "snapshot": snap,
                                    "sink_s": sink_s, "verify": [], "verify_baseline": []}
            for n in range(args.repeat):
                arms = [("verify", None)] + ([("verify_baseline", code)] if code else [])
                for key, where in arms[::1 if n % 2 == 0 else -1]:
                    run = run_verify(config, workdir, rows, where, args.timeout)
                    log.info("  %s: %.1f s, %.0f rows/s, peak RSS %.0f MB", key,
                             run["seconds"], run["rows_per_s"], run["peak_rss_mb"])
                    size[key].append(run)
            results.append(size)
    measures = measures_of(results, args.baseline_ref)
    ratio_of = ratios(measures)
    print(table(measures, "x snapshot"))
    write_json(args.out, {
        "benchmark": "verify", "created_at": datetime.now(UTC).isoformat(),
        "config": {"rows": sizes, "repeat": args.repeat, "baseline_ref": args.baseline_ref},
        "machine": machine_info(), "git": git_state(),
        "results": {m.name: m.as_json(ratio_of[m.name]) for m in measures},
        "sizes": results,
        "total_wall_s": time.time() - started})
    return 0


if __name__ == "__main__":
    sys.exit(main())
