"""The commands that signal a running pipeline: ``snapshot``, ``stop-snapshot``,
``pause-snapshot``, ``resume-snapshot``, ``set-position``, ``add-table``."""

from __future__ import annotations

from pathlib import Path

import click

from cdc_ingest.commands.options import config_option

# every signal's command waits for capture's answer (commands/snapshot.py signal_and_wait)
wait_option = click.option(
    "--wait", "wait_s", type=click.FloatRange(min=0), default=60.0, show_default=True,
    metavar="SECONDS", help="seconds to wait for capture to take or refuse it (0: do not wait)")


@click.command()
@config_option
@click.argument("tables", nargs=-1, required=True)
@wait_option
@click.option("--where", default=None, metavar="CONDITION",
              help="only the rows this SQL condition selects in each table are read and "
              "written again (at most 10,000; no key tombstoned first)")
def snapshot(config_path: Path, tables: tuple[str, ...], wait_s: float,
             where: str | None) -> None:
    """Snapshot TABLES (db.table ...) again while the pipeline runs: keys tombstoned in the sink
    topics, rows written again (docs/operations.md)."""
    from cdc_ingest.commands.snapshot import request_snapshot  # noqa: PLC0415 - lazy
    from cdc_ingest.config import load_pipeline  # noqa: PLC0415 - lazy

    request_snapshot(load_pipeline(config_path), list(tables), click.echo, wait_s, where)


@click.command("stop-snapshot")
@config_option
@click.argument("tables", nargs=-1)
@wait_option
def stop_snapshot(config_path: Path, tables: tuple[str, ...], wait_s: float) -> None:
    """Stop the running snapshot reading TABLES (db.table ...; none: every table it has left);
    capture goes on with the binlog (docs/operations.md)."""
    from cdc_ingest.commands.snapshot import request_stop  # noqa: PLC0415 - lazy
    from cdc_ingest.config import load_pipeline  # noqa: PLC0415 - lazy

    request_stop(load_pipeline(config_path), list(tables), click.echo, wait_s)


@click.command("pause-snapshot")
@config_option
@wait_option
def pause_snapshot(config_path: Path, wait_s: float) -> None:
    """Pause the running snapshot after its current chunk; the binlog goes on meanwhile
    (docs/operations.md)."""
    _control(config_path, "pause-snapshot", wait_s)


@click.command("resume-snapshot")
@config_option
@wait_option
def resume_snapshot(config_path: Path, wait_s: float) -> None:
    """Resume the paused snapshot at its next chunk (docs/operations.md)."""
    _control(config_path, "resume-snapshot", wait_s)


def _control(config_path: Path, kind: str, wait_s: float) -> None:
    from cdc_ingest.commands.snapshot import send_control  # noqa: PLC0415 - lazy
    from cdc_ingest.config import load_pipeline  # noqa: PLC0415 - lazy

    then = ("capture pauses its snapshot after the chunk it reads and goes on with the "
            "binlog" if kind == "pause-snapshot" else "capture reads on from the next chunk")
    send_control(load_pipeline(config_path), kind, {}, kind, then,
                 "paused" if kind == "pause-snapshot" else "resumed", click.echo, wait_s)


@click.command("set-position")
@config_option
@click.option("--gtid", "gtid_set", default=None, metavar="SET",
              help="a GTID set (MySQL uuid:1-100, MariaDB 0-1-100): capture goes on after it")
@click.option("--binlog", default=None, metavar="FILE:POS",
              help="a binlog file and the position of a transaction's start in it")
@wait_option
def set_position(config_path: Path, gtid_set: str | None, binlog: str | None,
                 wait_s: float) -> None:
    """Capture goes on from this binlog position, back (the changes from there are written
    again) or forward (the changes in between are skipped) (docs/operations.md)."""
    from cdc_ingest.commands.set_position import request_set_position  # noqa: PLC0415 - lazy
    from cdc_ingest.config import load_pipeline  # noqa: PLC0415 - lazy

    request_set_position(load_pipeline(config_path), gtid_set, binlog, click.echo, wait_s)


@click.command("add-table")
@config_option
@click.argument("tables", nargs=-1, required=True)
@click.option("--no-snapshot", is_flag=True,
              help="capture their changes from now on only, not their existing rows")
@wait_option
def add_table(config_path: Path, tables: tuple[str, ...], no_snapshot: bool,
              wait_s: float) -> None:
    """Take TABLES (db.table ...), newly selected by source.tables in the edited pipeline
    file, into the running pipeline: their rows snapshotted while the binlog goes on, or
    from now on (docs/operations.md)."""
    from cdc_ingest.commands.add_table import request_add_table  # noqa: PLC0415 - lazy

    request_add_table(config_path, list(tables), click.echo, wait_s, not no_snapshot)


SIGNAL_COMMANDS = (snapshot, stop_snapshot, pause_snapshot, resume_snapshot, set_position,
                   add_table)
