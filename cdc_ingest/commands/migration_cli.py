"""The commands of a migration: ``verify`` (once, or ``--continuous``) and ``cutover``."""

from __future__ import annotations

from pathlib import Path

import click

from cdc_ingest import exit_codes
from cdc_ingest.commands.options import config_option


@click.command(help="Compare every sink topic with the MySQL tables routed to it; exit "
             f"{exit_codes.VERIFY_DIFFERENT} if they differ.")
@config_option
@click.option("--max-diffs", default=10, show_default=True, type=click.IntRange(min=0),
              help="differences shown per kind (missing, extra, differing, conflicts) and topic")
@click.option("--wait", "wait_s", default=0.0, show_default=True, type=click.FloatRange(min=0),
              metavar="SECONDS", help="check again until equal, for up to SECONDS (changes "
              "still on their way, a sink still starting)")
@click.option("--continuous", is_flag=True, help="verify again and again while the pipeline "
              "runs, until SIGTERM or Ctrl-C; state per topic in `status --tables`, metrics "
              "and --report")
@click.option("--rate", default=5_000.0, show_default=True, type=click.FloatRange(min=1),
              metavar="ROWS/S", help="--continuous: MySQL rows read per second at most")
@click.option("--pause", "pause_s", default=60.0, show_default=True,
              type=click.FloatRange(min=0), metavar="SECONDS",
              help="--continuous: between two passes")
@click.option("--passes", default=0, show_default=True, type=click.IntRange(min=0),
              help="--continuous: stop after this many passes (0: until stopped), with the "
              "last one's exit code")
@click.option("--report", "report_path", default=None, metavar="FILE",
              type=click.Path(dir_okay=False, path_type=Path),
              help="--continuous: a JSON report of every topic's state and the passes, "
              "written after each topic")
@click.option("--metrics-port", default=None, type=click.IntRange(min=0), metavar="PORT",
              help="--continuous: serve Prometheus metrics of the state on PORT")
@click.option("--repair", is_flag=True, help="have capture write the keys that differ again "
              "(their rows, or tombstones for keys MySQL has not), exactly once while writes "
              "go on, then verify again; waits up to 600 s (or --wait, if longer)")
def verify(config_path: Path, max_diffs: int, wait_s: float, continuous: bool, rate: float,
           pause_s: float, passes: int, report_path: Path | None,
           metrics_port: int | None, repair: bool) -> None:
    from cdc_ingest.config import load_pipeline

    defn = load_pipeline(config_path)
    if repair:
        from cdc_ingest.commands.repair import run_repair

        run_repair(defn, click.echo, max_diffs, max(wait_s, 600.0))
        return
    if continuous:
        from cdc_ingest import metrics
        from cdc_ingest.verify.continuous import run_continuous

        metrics.serve(metrics_port)
        run_continuous(defn, click.echo, rate, pause_s, passes, report_path, max_diffs)
        return
    from cdc_ingest.verify.run import run_verify

    run_verify(defn, click.echo, max_diffs, wait_s)


@click.command(help="The gate to switch a migration over through: with MySQL read-only (or "
             "the last write named by --last-write), wait until the pipeline has written "
             "everything up to the final binlog position, verify every table there, and exit "
             "0 printing that position only when all are equal (docs/operations.md).")
@config_option
@click.option("--last-write", metavar="FILE:POS|GTID", default=None,
              help="the last write to wait for, when MySQL is not made read-only: the "
              "binlog position after it, or its GTID")
@click.option("--timeout", "timeout_s", default=600.0, show_default=True,
              type=click.FloatRange(min=0), metavar="SECONDS",
              help="how long to wait for the pipeline to reach the final position")
@click.option("--max-diffs", default=10, show_default=True, type=click.IntRange(min=0),
              help="differences shown per kind (missing, extra, differing, conflicts) and topic")
def cutover(config_path: Path, last_write: str | None, timeout_s: float,
            max_diffs: int) -> None:
    from cdc_ingest.config import load_pipeline
    from cdc_ingest.verify.cutover import run_cutover

    run_cutover(load_pipeline(config_path), click.echo, last_write, timeout_s, max_diffs)
