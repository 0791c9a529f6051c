#!/usr/bin/env python3
"""The sink's head start, issue 36 / decision 0017: the first output of `cdc-ingest start` with
the driver writing until Spark's first batch (``head-start: true``, the default) against Spark
alone (``head-start: false``), in the same run, on the same services.

One workload (``--changes``, default 300k: inserts, then 20% updated and 10% deleted). Per
repeat and arm, alternating which arm goes first: compare.py's ``first`` runs (_first.py) -
``start`` over the workload's backlog (spawn -> first sink message read_committed, and ->
the whole changelog written; the sink topic must hold exactly the workload's changes), then
``start`` on an empty backlog with one row inserted right after the spawn (``trigger.interval``
0; the topic must hold exactly 1 message). Reported: medians per arm, and the ratios.

    python benchmarks/head_start.py --repeat 3
"""

from __future__ import annotations

import argparse
import logging
import secrets
import statistics
import sys
import time
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
from _first import ensure_group_coordinator, run_first_backlog, run_first_empty
from capture import make_workload
from compare import MAX_OFFSETS, TRIGGER, rows_for
from pipeline import PARALLELISM, _topics, delete_topics

log = logging.getLogger("benchmarks.head_start")
ARMS = {"spark only": {"head-start": False}, "head start": {}}
MEASURES = {
    "backlog: first output": ("backlog", "first_output_s"),
    "backlog: whole changelog written": ("backlog", "seconds"),
    "backlog: sink query started": ("backlog", "sink query started"),
    "empty: first output": ("empty", "first_output_s"),
    "empty: sink query started": ("empty", "sink query started"),
}


def _value(run: dict[str, Any], where: str, key: str) -> float | None:
    found = run.get(where) or {}
    value = found.get(key, (found.get("timeline_s") or {}).get(key))
    return None if value is None else float(value)


def summary(runs: list[dict[str, Any]]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for label, (where, key) in MEASURES.items():
        values = [v for run in runs if (v := _value(run, where, key)) is not None]
        out[label] = round(statistics.median(values), 3) if values else None
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--changes", type=int, default=300_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "head-start.json")
    add_service_args(p, "keep the temp folder (logs, pipeline YAMLs)")
    args = p.parse_args(argv)
    setup_logging()
    machine = machine_info()
    tag = f"hs-{secrets.token_hex(3)}"
    runs: dict[str, list[dict[str, Any]]] = {arm: [] for arm in ARMS}
    errors: list[str] = []
    wall = time.perf_counter()
    with services_from_args(args) as svc:
        workdir = svc.home / "head-start"
        workdir.mkdir()
        topics: list[str] = []
        try:
            ensure_group_coordinator(svc.bootstrap)
            wl = make_workload(svc, rows_for(args.changes))
            log.info("workload: %d row changes", wl.changes)
            arms = list(ARMS)
            for n in range(args.repeat):
                for k, arm in enumerate(arms if n % 2 == 0 else arms[::-1]):
                    name = f"{tag}-{n + 1}-{k}"
                    run: dict[str, Any] = {"repeat": n + 1, "order": k}
                    topics += [t for p in (name, f"{name}-e")
                               for key, t in _topics(p).items() if key != "group"]
                    log.info("repeat %d/%d: %s", n + 1, args.repeat, arm)
                    try:
                        run["backlog"] = run_first_backlog(
                            svc, wl, name, 5900 + 10 * n + 2 * k, workdir, TRIGGER, MAX_OFFSETS,
                            args.timeout, options=ARMS[arm])
                        run["empty"] = run_first_empty(
                            svc, f"{name}-e", 5901 + 10 * n + 2 * k, workdir, TRIGGER,
                            options=ARMS[arm])
                        log.info("  backlog: first output %.2f s, whole changelog %.1f s; "
                                 "empty: first output %.2f s", run["backlog"]["first_output_s"],
                                 run["backlog"]["seconds"], run["empty"]["first_output_s"])
                    except Exception as exc:  # reported; the exit code says so
                        log.exception("%s failed", name)
                        errors.append(f"{name} ({arm}): {exc}")
                        run["error"] = str(exc)
                    runs[arm].append(run)
        finally:
            if args.kafka_bootstrap and not args.keep_topics:
                delete_topics(svc.bootstrap, topics)
    result = {arm: summary(runs[arm]) for arm in ARMS}
    ratios = {label: round(a / b, 2) if (a := result["spark only"][label]) and
              (b := result["head start"][label]) else None for label in MEASURES}
    doc = {
        "benchmark": "head_start", "changes": wl.changes, "repeat": args.repeat,
        "parallelism": PARALLELISM, "trigger_interval": TRIGGER,
        "max_offsets_per_trigger": MAX_OFFSETS, "arms": ARMS,
        "machine": machine, "seconds_total": time.perf_counter() - wall,
        "summary": result, "ratio_spark_only_to_head_start": ratios,
        "runs": runs, "errors": errors,
    }
    write_json(args.out, doc)
    print(f"\nfirst output of `cdc-ingest start`, {wl.changes:,} changes, {args.repeat} "
          "repeats, medians (s)")
    print(f"  {'measure':34} {'spark only':>10} {'head start':>10} {'ratio':>6}")
    for label in MEASURES:
        print(f"  {label:34} {result['spark only'][label] or 0:10.2f} "
              f"{result['head start'][label] or 0:10.2f} {ratios[label] or 0:6.2f}")
    print(f"results: {args.out}")
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
