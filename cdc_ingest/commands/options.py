"""Options more than one command module shares."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def config_option(func: F) -> F:
    return click.option(
        "--config", "config_path", required=True,
        type=click.Path(dir_okay=False, path_type=Path),
        help="the pipeline YAML (source, sink, route, pipeline blocks)",
    )(func)
