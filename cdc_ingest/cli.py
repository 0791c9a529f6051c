"""The command line: the only place that configures logging and turns errors into exit codes."""

from __future__ import annotations

import logging
import signal
import sys
from pathlib import Path
from types import FrameType

import click

from cdc_ingest import __version__, exit_codes, logs
from cdc_ingest.commands.migration_cli import cutover, verify
from cdc_ingest.commands.options import config_option
from cdc_ingest.commands.signal_cli import SIGNAL_COMMANDS
from cdc_ingest.errors import CdcIngestError

log = logging.getLogger("cdc_ingest")


def hold_stop_signals() -> list[int]:
    """Remember SIGTERM and Ctrl-C from here until a long-running command has its own
    handlers: a stop asked for while it starts (imports, config, connections) then ends it
    at once and cleanly, exit 0, instead of the signal killing it. The command looks at the
    returned list after installing its handlers, so no signal falls between the two."""
    received: list[int] = []

    def remember(signum: int, frame: FrameType | None) -> None:
        received.append(signum)

    signal.signal(signal.SIGTERM, remember)
    signal.signal(signal.SIGINT, remember)
    return received


def restore_ctrl_c() -> None:
    """Let Ctrl-C (SIGINT) stop a command even when it was started with SIGINT ignored: a
    shell runs a script's background job (`cdc-ingest watch ... &`) so, an ignored signal
    stays ignored across exec, and Python then installs no KeyboardInterrupt handler. The
    long-running commands replace the disposition with their own handlers anyway
    (:func:`hold_stop_signals`); this gives every other command the same answer to SIGINT."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _stopped_while_starting(received: list[int], what: str) -> bool:
    if received:
        log.info("stop requested (signal %d) while %s was starting: stopping before it did "
                 "anything", received[0], what)
    return bool(received)


@click.group()
@click.version_option(__version__, prog_name="cdc-ingest")
@click.option("--log-level", default="INFO", show_default=True, envvar=logs.LEVEL_ENV,
              type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False))
@click.option("--log-format", default="text", show_default=True, envvar=logs.FORMAT_ENV,
              type=click.Choice(["text", "json"]),
              help="json: one JSON object per line (ts, level, logger, message), errors too")
@click.option("--debug", is_flag=True, help="show tracebacks of errors")
@click.pass_context
def cli(ctx: click.Context, log_level: str, log_format: str, debug: bool) -> None:
    """Stream MySQL/MariaDB row changes into Kafka as keyed upserts, exactly once."""
    logs.setup("DEBUG" if debug else log_level, log_format)
    ctx.obj = {"debug": debug}


@cli.command()
@config_option
def validate(config_path: Path) -> None:
    """Check the pipeline definition, then MySQL and Kafka, and say how to fix each problem."""
    from cdc_ingest.commands.validate import run_validate

    ok = run_validate(config_path, click.echo)
    if not ok:
        raise SystemExit(exit_codes.VALIDATE_FAILED)


@cli.command()
@config_option
def capture(config_path: Path) -> None:
    """Read the binlog into the pipeline's changelog topic until stopped (SIGTERM / Ctrl-C)."""
    received = hold_stop_signals()
    from cdc_ingest.capture.options import capture_options
    from cdc_ingest.capture.runner import Capture, install_signal_handlers
    from cdc_ingest.config import load_pipeline

    defn = load_pipeline(config_path)
    for warning in defn.warnings:
        log.warning("%s", warning)
    options = capture_options(defn, config_path)
    runner = Capture(options)
    install_signal_handlers(runner)
    if not _stopped_while_starting(received, "capture"):
        runner.run()


@cli.command()
@config_option
@click.option("--master", default=None,
              help="Spark master URL [default: local[*]; under spark-submit, its own]")
def sink(config_path: Path, master: str | None) -> None:
    """Write the changelog topic to the sink topics with Spark until stopped (SIGTERM / Ctrl-C)."""
    received = hold_stop_signals()
    import threading

    from cdc_ingest.sink.runtime.session import SessionLaunch, is_local

    # Spark's JVM first, in a thread: it starts while the pipeline file is read and Kafka is
    # asked (sink/driver/startup.py). If this process exits first, the JVM sees its input end and
    # exits too (pyspark's gateway). A cluster's application gets the pipeline's name, so
    # its session starts once the file is read.
    launch = SessionLaunch("cdc-ingest-sink", master) if is_local(master) else None

    from cdc_ingest import metrics
    from cdc_ingest.config import load_pipeline
    from cdc_ingest.sink.driver.query import install_signal_handlers, run_sink

    defn = load_pipeline(config_path)
    stop_event = threading.Event()
    install_signal_handlers(stop_event)
    if _stopped_while_starting(received, "the sink"):
        return
    metrics.serve(defn.pipeline.metrics_port)
    run_sink(defn, master=master, stop_event=stop_event, launch=launch)


@cli.command()
@config_option
@click.option("--master", default=None, help="Spark master URL for the sink [default: local[*]]")
def start(config_path: Path, master: str | None) -> None:
    """Run capture and the sink together until stopped; if either fails, stop both."""
    received = hold_stop_signals()
    from cdc_ingest.commands.supervisor import discard, run_start, start_sink_first

    sink_args = ["--master", master] if master else []
    # the sink first: it takes longest to start (Spark's JVM), and starts while the file is
    # checked here; capture once it is found good
    sink = None if received else start_sink_first(config_path, sink_args)
    try:
        from cdc_ingest.capture.options import capture_options
        from cdc_ingest.config import load_pipeline

        capture_options(load_pipeline(config_path))  # config errors now, said once, here
    except BaseException:
        if sink is not None:
            discard(sink)
        raise
    run_start(config_path, sink_args, received, sink)


@cli.command()
@config_option
@click.option("--principal", default=None,
              help="the principal to grant [default: User:<the SASL login's username>]")
def acls(config_path: Path, principal: str | None) -> None:
    """Print every Kafka ACL the pipeline needs, as kafka-acls.sh commands: its topics
    (sink topics of the tables it captures now, by database prefix or route), transactional
    ids and consumer groups (all under its prefix). Connects to MySQL for the tables."""
    from cdc_ingest.commands.acls import pipeline_acls, principal_of, render
    from cdc_ingest.config import load_pipeline
    from cdc_ingest.mysql import connection_settings
    from cdc_ingest.verify.mysql import MySqlSide

    defn = load_pipeline(config_path)
    mysql = MySqlSide(connection_settings(defn.source), defn.source.connect_max_retries)
    try:
        tables = mysql.tables(defn.source.captures)
    finally:
        mysql.close()
    click.echo(render(pipeline_acls(defn, tables), principal or principal_of(defn),
                      defn.transactional_id_prefix), nl=False)


@cli.command()
@config_option
@click.argument("topics", nargs=-1)
@click.option("--from-beginning", is_flag=True, help="every message, not only new ones")
@click.option("--transactions", is_flag=True,
              help="whole MySQL transactions in commit order, one block each (needs "
              "sink.transaction-metadata.topic)")
@click.option("--notifications", is_flag=True,
              help="capture's notifications (snapshots started, their progress, done)")
def watch(config_path: Path, topics: tuple[str, ...], from_beginning: bool,
          transactions: bool, notifications: bool) -> None:
    """Print the sink topics' messages as they are committed (key, value, headers) until
    Ctrl-C; TOPICS default to every sink topic of the pipeline. --transactions: one block per
    whole MySQL transaction (a header line, then its messages), in commit order;
    --notifications: capture's notifications, one line each."""
    from cdc_ingest.commands.watch import watch_notifications, watch_topics, watch_transactions
    from cdc_ingest.config import load_pipeline

    if transactions and notifications:
        raise click.UsageError("--transactions and --notifications: choose one")
    follow = (watch_transactions if transactions
              else watch_notifications if notifications else watch_topics)
    follow(load_pipeline(config_path), list(topics), from_beginning, click.echo)


@cli.command(help=f"""Show capture's position against the binlog head and the sink's lag per
partition.

Exits {exit_codes.POSITION_PURGED} when the committed position is gone from the binlog,
{exit_codes.SOURCE} when MySQL refuses the login, {exit_codes.TRANSIENT} when it is
unreachable, {exit_codes.KAFKA_OR_SINK} when Kafka fails, {exit_codes.NOT_CAUGHT_UP} when
--wait-caught-up ran out; {exit_codes.OK} otherwise.""")
@config_option
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
@click.option("--wait-caught-up", "wait_s", default=None, type=click.FloatRange(min=0),
              metavar="SECONDS", help="wait (up to SECONDS) until capture is at the binlog "
              "head and the sink has written all it committed; exit "
              f"{exit_codes.NOT_CAUGHT_UP} if not by then")
@click.option("--tables", is_flag=True, help="also per table: inserts, updates, deletes, "
              "DDLs and snapshot rows capture committed, and per sink topic the last pass of "
              "verify --continuous")
def status(config_path: Path, as_json: bool, wait_s: float | None, tables: bool) -> None:
    import json
    import time

    from cdc_ingest.commands.status import caught_up, exit_code, pipeline_status, render_text
    from cdc_ingest.commands.table_status import render_tables, table_status
    from cdc_ingest.config import load_pipeline

    defn = load_pipeline(config_path)
    report = pipeline_status(defn)
    deadline = time.monotonic() + (wait_s or 0.0)
    while wait_s is not None and not caught_up(report) and time.monotonic() < deadline:
        time.sleep(1.0)
        report = pipeline_status(defn)
    per_table = (table_status(defn, defn.kafka_config(),
                              report.capture.table_totals) if tables else None)
    if as_json:
        body = report.as_dict()
        if per_table is not None:
            body.update(per_table.as_dict())
        click.echo(json.dumps(body, indent=2))
    else:
        for line in [*render_text(report), *(render_tables(per_table) if per_table else [])]:
            click.echo(line)
    code = exit_code(report)
    if not code and wait_s is not None and not caught_up(report):
        click.echo(f"not caught up after {wait_s:.0f} s (see the lag above)", err=True)
        code = exit_codes.NOT_CAUGHT_UP
    if code:
        sys.exit(code)


@cli.command()
@click.option("--no-wait", is_flag=True, help="stop after showing the results")
@click.option("--format", "fmt", type=click.Choice(["json", "avro-confluent"]), default="json",
              show_default=True, help="key and value format; avro-confluent also starts a "
              "local Schema Registry")
def demo(no_wait: bool, fmt: str) -> None:
    """The quick start: local MariaDB and Kafka, a sample shop, the pipeline, live changes."""
    from cdc_ingest.commands.demo import main as demo_main

    demo_main(["--no-wait"] * no_wait + ["--format", fmt])


cli.add_command(verify)
cli.add_command(cutover)
for _command in SIGNAL_COMMANDS:
    cli.add_command(_command)


def main(argv: list[str] | None = None) -> None:
    restore_ctrl_c()
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        cli.main(args=argv, prog_name="cdc-ingest", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        raise SystemExit(exit_codes.INTERRUPTED) from None
    except click.ClickException as exc:
        exc.show()
        raise SystemExit(exc.exit_code) from None
    except CdcIngestError as exc:
        if debug:
            log.exception("failed")
        if logs.json_logs():
            log.error("%s", exc, extra={"exit_code": exc.exit_code})
        else:
            click.echo(f"error: {exc}", err=True)
        raise SystemExit(exc.exit_code) from None
    except KeyboardInterrupt:
        raise SystemExit(exit_codes.INTERRUPTED) from None


if __name__ == "__main__":
    main()
