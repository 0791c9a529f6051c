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
