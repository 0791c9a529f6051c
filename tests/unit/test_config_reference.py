"""docs/configuration.md is generated from the models and lists every option with a meaning."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from cdc_ingest.config import MySqlSourceDef, PipelineOptions, RouteDef, UpsertKafkaSinkDef
from cdc_ingest.config.reference import (
    _DEFAULTS,
    COMMAND,
    default_text,
    option_name,
    render_reference,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
MODELS = (MySqlSourceDef, UpsertKafkaSinkDef, RouteDef, PipelineOptions)


def _rows(text: str) -> dict[str, list[str]]:
    """Option (without backticks) -> the cells of every table row that lists it."""
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        match = re.fullmatch(r"\| `([^`]+)` \| (.*) \| (.*) \|", line)
        if match:
            rows.setdefault(match.group(1), []).append(match.group(3))
    return rows


def test_docs_are_generated_from_the_models() -> None:
    expected = render_reference()
    actual = DOC.read_text(encoding="utf-8")
    assert actual == expected, f"docs/configuration.md is stale: run {COMMAND}"


def test_command_in_the_stale_message() -> None:
    assert COMMAND == "python -m cdc_ingest.config.reference > docs/configuration.md"


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_option_has_a_row_with_a_meaning(model: type[BaseModel]) -> None:
    rows = _rows(render_reference())
    for name, info in model.model_fields.items():
        option = option_name(name, info)
        assert option in rows, f"{model.__name__}: option {option} missing from the reference"
        assert all(meaning.strip() for meaning in rows[option]), f"{option} has no meaning"
        assert info.description, f"{model.__name__}.{name} has no description"
        assert default_text(model, name, info).strip()


def test_properties_pass_through_row() -> None:
    rows = _rows(render_reference())
    assert "properties.*" in rows
    assert "bootstrap.servers" in rows["properties.*"][0]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_computed_defaults_name_real_options(model: type[BaseModel]) -> None:
    options = {option_name(n, i) for n, i in model.model_fields.items()}
    assert set(_DEFAULTS[model]) <= options


def test_defaults_in_words() -> None:
    text = render_reference()
    for row in (
        "| `port` | `3306` |",
        "| `hostname` | required |",
        "| `heartbeat.interval` | `30s` |",
        "| `sink.delivery-guarantee` | `at-least-once` |",
        "| `changelog.topic` | `cdc-ingest.<name>.changelog`, from `name` |",
        "| `source-table` | required |",
    ):
        assert row in text


def test_intro_covers_interpolation_durations_and_secrets() -> None:
    text = render_reference()
    for phrase in ("${VAR}", "${VAR:-default}", "${file:", "500ms", "Secrets",
                   "librdkafka", "ssl.truststore.location", "sasl.jaas.config"):
        assert phrase in text


def test_no_raw_html_or_broken_cells() -> None:
    # `<name>` outside backticks would vanish as an HTML tag; a bare '|' would split a cell.
    for line in render_reference().splitlines():
        if line.startswith("| `"):
            outside = re.sub(r"`[^`]*`", "", line)
            assert "<" not in outside, line
            assert outside.count("|") == 4, line


def test_defaults_in_words_only_where_the_model_has_none() -> None:
    # A default in words beside a concrete model default contradicts the code: the metrics
    # port was documented "off" while a pipeline without it serves metrics on 9249.
    for model, given in _DEFAULTS.items():
        for name, info in model.model_fields.items():
            if option_name(name, info) not in given or info.is_required():
                continue
            default = info.get_default(call_default_factory=True)
            assert default is None or default == {} or isinstance(default, BaseModel), (
                f"{model.__name__}.{option_name(name, info)}: the reference says "
                f"{given[option_name(name, info)]!r}, the model's default is {default!r}")


def test_metrics_are_on_by_default_on_the_port_the_docs_name() -> None:
    from cdc_ingest.config.pipeline import DEFAULT_METRICS_PORT  # noqa: PLC0415
    from cdc_ingest.healthcheck import DEFAULT_PORT  # noqa: PLC0415

    options = PipelineOptions.model_validate({"name": "p"})
    assert options.metrics_port == DEFAULT_METRICS_PORT == DEFAULT_PORT == 9249
    assert "| `metrics.port` | `9249` |" in render_reference()
    assert "| `metrics.port` | `9249` |" in DOC.read_text(encoding="utf-8")
    ops = (DOC.parent / "operations.md").read_text(encoding="utf-8")
    assert "on by default: the sink on `http://127.0.0.1:9249/metrics`, capture\n  on port 9250" \
        in ops
