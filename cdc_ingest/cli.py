"""The command line: the only place that configures logging and turns errors into exit codes."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from cdc_ingest import __version__
from cdc_ingest.errors import CdcIngestError

log = logging.getLogger("cdc_ingest")
F = TypeVar("F", bound=Callable[..., Any])


def _setup_logging(level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


def config_option(func: F) -> F:
    return click.option(
        "--config", "config_path", required=True,
        type=click.Path(dir_okay=False, path_type=Path),
        help="the pipeline YAML (source, sink, route, pipeline blocks)",
    )(func)


@click.group()
@click.version_option(__version__, prog_name="cdc-ingest")
@click.option("--log-level", default="INFO", show_default=True,
              type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False))
@click.option("--debug", is_flag=True, help="show tracebacks of errors")
@click.pass_context
def cli(ctx: click.Context, log_level: str, debug: bool) -> None:
    """Stream MySQL/MariaDB row changes into Kafka as keyed upserts, exactly once."""
    _setup_logging("DEBUG" if debug else log_level)
    ctx.obj = {"debug": debug}


@cli.command()
@config_option
def validate(config_path: Path) -> None:
    """Check the pipeline definition, then MySQL and Kafka, and say how to fix each problem."""
    from cdc_ingest.validate import run_validate

    ok = run_validate(config_path, click.echo)
    if not ok:
        raise SystemExit(4)


@cli.command()
@config_option
def capture(config_path: Path) -> None:
    """Read the binlog into the pipeline's changelog topic until stopped (SIGTERM / Ctrl-C)."""
    from cdc_ingest.capture.options import capture_options
    from cdc_ingest.capture.runner import Capture, install_signal_handlers
    from cdc_ingest.config import load_pipeline

    options = capture_options(load_pipeline(config_path))
    runner = Capture(options)
    install_signal_handlers(runner)
    runner.run()


def main(argv: list[str] | None = None) -> None:
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        cli.main(args=argv, prog_name="cdc-ingest", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        raise SystemExit(130) from None
    except click.ClickException as exc:
        exc.show()
        raise SystemExit(exc.exit_code) from None
    except CdcIngestError as exc:
        if debug:
            log.exception("failed")
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(exc.exit_code) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
