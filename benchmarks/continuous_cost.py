"""What ``verify --continuous`` costs the pipeline: end-to-end throughput with and without it.

    python benchmarks/continuous_cost.py [--rows 1000000] [--pairs 2] [--rate 10000]

Writes pipeline.py's workload into ``bench.orders`` once, then runs pipeline.py's end-to-end
exactly-once measure over that binlog range (capture and the sink from process start until
the sink group has committed every change) ``1 + 2 * pairs`` times. The first run makes a
sink topic equal to ``bench.orders``; in every pair one run has ``cdc-ingest verify
--continuous --pause 0 --rate RATE`` checking that first pipeline's topic against
``bench.orders`` the whole time (pass after pass, the worst case of the default pause), the
other not; which goes first alternates. Reported: each arm's rows/s (median) and their ratio;
the issue's target is a ratio of at least 0.9 at the default rate.
"""

from __future__ import annotations

import argparse
import json
import logging
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
    git_state,
    machine_info,
    product_env,
    ratios,
    services_from_args,
    setup_logging,
    stop_process,
    table,
    write_json,
)
from capture import make_workload
from pipeline import Settings, run_throughput

log = logging.getLogger("benchmarks.continuous_cost")


def start_verify(config: Path, workdir: Path, rate: float, report: Path) -> subprocess.Popen[Any]:
    out = (workdir / "verify-continuous.log").open("ab")
    return subprocess.Popen(
        [sys.executable, "-m", "cdc_ingest.cli", "verify", "--config", str(config),
         "--continuous", "--pause", "0", "--rate", str(rate), "--report", str(report)],
        stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=workdir,
        env=product_env())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--pairs", type=int, default=2)
    p.add_argument("--rate", type=float, default=10_000.0,
                   help="verify --continuous --rate (default: the command's default)")
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--out", type=Path,
                   default=REPO / "benchmarks" / "results" / "continuous-cost.json")
    add_service_args(p, "keep the run's folder (servers' data, logs)")
    args = p.parse_args()
    setup_logging()
    st = Settings(max_offsets=500_000, trigger="0", latency_trigger="0",
                  latency_capture_interval="100ms", latency_rate=0, latency_seconds=0,
                  latency_warmup_s=0, latency_rows_per_tx=1)
    started = time.time()
    runs: dict[str, list[dict[str, Any]]] = {"plain": [], "with_verify": []}
    passes: list[dict[str, Any]] = []
    with services_from_args(args) as svc:
        workdir = svc.home / "continuous-cost"
        workdir.mkdir(parents=True, exist_ok=True)
        wl = make_workload(svc, args.rows)
        first = "cc-0"
        run_throughput(svc, wl, first, 6300, workdir, st, "exactly-once", args.timeout)
        target = workdir / f"{first}.yaml"
        for n in range(args.pairs):
            arms = ["plain", "with_verify"][:: 1 if n % 2 == 0 else -1]
            for i, arm in enumerate(arms):
                name = f"cc-{n + 1}-{arm.replace('_', '-')}"
                verify = None
                report = workdir / f"{name}.report.json"
                log_file = workdir / "verify-continuous.log"
                log_from = log_file.stat().st_size if log_file.exists() else 0
                if arm == "with_verify":
                    verify = start_verify(target, workdir, args.rate, report)
                    time.sleep(5)  # its first pass under way
                try:
                    run = run_throughput(svc, wl, name, 6310 + 10 * n + i, workdir, st,
                                         "exactly-once", args.timeout)
                finally:
                    if verify is not None:
                        stop_process(verify, timeout=120.0)
                if verify is not None:
                    body = json.loads(report.read_text()) if report.exists() else {}
                    text = log_file.read_bytes()[log_from:].decode(errors="replace")
                    progress = [ln for ln in text.splitlines() if "rows compared" in ln]
                    passes.append({"run": name, "passes": body.get("passes", []),
                                   "exit_code": verify.returncode,
                                   "last_progress": progress[-1] if progress else None})
                    log.info("  verify during %s: %s", name,
                             progress[-1] if progress else "no progress line")
                log.info("%s: %.0f rows/s", name, run["rows_per_s"])
                runs[arm].append(run)
    measures = [
        Measure("e2e exactly-once, plain", "rows/s", [r["rows_per_s"] for r in runs["plain"]],
                "e2e exactly-once, plain", 0),
        Measure("e2e exactly-once, verify --continuous running", "rows/s",
                [r["rows_per_s"] for r in runs["with_verify"]], "e2e exactly-once, plain", 0,
                f"verify --continuous --pause 0 --rate {args.rate:g} on a {args.rows:,}-row "
                "table the whole run"),
    ]
    print(table(measures, "x plain"))
    ratio_of = ratios(measures)
    write_json(args.out, {
        "benchmark": "continuous_cost", "created_at": datetime.now(UTC).isoformat(),
        "config": {"rows": args.rows, "pairs": args.pairs, "rate": args.rate},
        "machine": machine_info(), "git": git_state(),
        "results": {m.name: m.as_json(ratio_of[m.name]) for m in measures},
        "verify_passes": passes, "runs": runs, "total_wall_s": time.time() - started})
    return 0


if __name__ == "__main__":
    sys.exit(main())
