"""YAML text -> :class:`PipelineDef`, reporting every problem of the file in one error."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from cdc_ingest.config.definition import PipelineDef
from cdc_ingest.config.ignored import take_ignored
from cdc_ingest.config.interpolate import Interpolator
from cdc_ingest.config.kafka_sink import KafkaSinkDef
from cdc_ingest.config.pipeline import PipelineOptions, RouteDef
from cdc_ingest.config.problems import render_path, translate, unknown_option
from cdc_ingest.config.sink import UpsertKafkaSinkDef
from cdc_ingest.config.source import MySqlSourceDef
from cdc_ingest.config.transform import TransformDef
from cdc_ingest.config.yaml_text import load_yaml
from cdc_ingest.errors import ConfigError, ConfigProblem

M = TypeVar("M", bound=BaseModel)

SECTIONS = ("pipeline", "route", "sink", "source", "transform")
_REQUIRED_HINT = {
    "source": "add a 'source:' section with type: mysql, hostname, username, password, "
    "tables and server-id",
    "sink": "add a 'sink:' section with type: upsert-kafka (or kafka) and "
    "properties.bootstrap.servers",
}


def load_pipeline(path: str | Path, environ: Mapping[str, str] | None = None) -> PipelineDef:
    """Read and validate a pipeline file; relative ``${file:...}`` paths start at its folder."""
    return read_pipeline(path, environ)[1]


def read_pipeline(path: str | Path, environ: Mapping[str, str] | None = None
                  ) -> tuple[bytes, PipelineDef]:
    """:func:`load_pipeline`, with the bytes it read (``add-table`` sends their digest):
    one reading, so the digest is of the definition returned."""
    file = Path(path)
    try:
        data = file.read_bytes()
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or "not UTF-8 text"
        raise ConfigError([ConfigProblem(
            str(file), f"cannot read the pipeline file ({reason})",
            "check the path and that this user may read it",
        )]) from None
    return data, parse_pipeline(text, environ, source_name=str(file), base_dir=file.parent)


def parse_pipeline(
    text: str,
    environ: Mapping[str, str] | None = None,
    source_name: str = "<string>",
    base_dir: Path | None = None,
) -> PipelineDef:
    """Validate pipeline YAML text; ``environ`` defaults to ``os.environ``."""
    data = load_yaml(text, source_name)
    if not isinstance(data, dict):
        raise ConfigError([ConfigProblem(
            source_name, "is not a pipeline definition (a mapping of sections)",
            "start from routes/shop-to-kafka.yaml: source:, sink:, route:, pipeline:",
        )])
    resolver = Interpolator(os.environ if environ is None else environ, base_dir or Path.cwd())
    data = resolver.resolve(data)
    problems: list[ConfigProblem] = []
    definition = _build(data, problems)
    # An option whose reference failed is already reported; its raw text may fail again.
    problems = resolver.problems + [p for p in problems if p.path not in resolver.failed_paths]
    if problems or definition is None:
        raise ConfigError(problems)
    return definition


def _build(data: dict[Any, Any], problems: list[ConfigProblem]) -> PipelineDef | None:
    for key in data:
        if key not in SECTIONS:
            problems.append(unknown_option(str(key), str(key), SECTIONS, kind="section"))
    warnings: list[str] = []
    source = _section(data, "source", MySqlSourceDef, problems, warnings)
    sink_raw = data.get("sink")
    kafka = isinstance(sink_raw, dict) and str(sink_raw.get("type", "")).strip().lower() == "kafka"
    sink_model: type[UpsertKafkaSinkDef | KafkaSinkDef] = (
        KafkaSinkDef if kafka else UpsertKafkaSinkDef)
    sink = _section(data, "sink", sink_model, problems, warnings)
    pipeline = _section(data, "pipeline", PipelineOptions, problems, warnings)
    routes = _rules(data.get("route"), "route", RouteDef, problems)
    transforms = _rules(data.get("transform"), "transform", TransformDef, problems)
    if source is not None and pipeline is not None:  # listed with the other sections' problems
        problems.extend(ConfigProblem(render_path("source", loc), message, fix)
                        for loc, message, fix
                        in source.implied_server_id_problems(pipeline.parallelism))
    if (problems or source is None or sink is None or pipeline is None or routes is None
            or transforms is None):
        return None
    warnings.extend(_transform_warnings(transforms))
    try:
        return PipelineDef(source=source, sink=sink, routes=routes, transforms=transforms,
                           pipeline=pipeline, warnings=tuple(warnings))
    except ValidationError as exc:
        problems.extend(translate(exc, "", PipelineDef))
        return None


def _section(
    data: dict[Any, Any], name: str, model: type[M], problems: list[ConfigProblem],
    warnings: list[str],
) -> M | None:
    raw = data.get(name)
    if raw is None and name in _REQUIRED_HINT:
        problems.append(ConfigProblem(name, "required section is missing", _REQUIRED_HINT[name]))
        return None
    if isinstance(raw, dict):
        raw = take_ignored(name, raw, warnings)
    return _validate(model, {} if raw is None else raw, name, problems)


_RULE_HINT = {
    "route": "write each rule as '- source-table: ...' with 'sink-table: ...' under it",
    "transform": "write each rule as '- source-table: ...' with 'projection: ...' or "
    "'filter: ...' under it",
}


def _rules(raw: Any, section: str, model: type[M],
           problems: list[ConfigProblem]) -> tuple[M, ...] | None:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        problems.append(ConfigProblem(section, f"must be a list of {section} rules",
                                      _RULE_HINT[section]))
        return None
    rules = [_validate(model, item, f"{section}[{i}]", problems) for i, item in enumerate(raw)]
    valid = [rule for rule in rules if rule is not None]
    return tuple(valid) if len(valid) == len(rules) else None


def _transform_warnings(transforms: tuple[TransformDef, ...]) -> list[str]:
    out = []
    for i, rule in enumerate(transforms):
        if rule.partition_keys:
            out.append(f"transform[{i}].partition-keys: ignored, Kafka partitions follow the "
                       "message key (Flink CDC's Kafka sink ignores it too)")
        if rule.table_options:
            out.append(f"transform[{i}].table-options: ignored, Kafka topics have no table "
                       "options")
    return out


def _validate(
    model: type[M], raw: Any, path: str, problems: list[ConfigProblem]
) -> M | None:
    if not isinstance(raw, dict):
        problems.append(ConfigProblem(path, "must be a mapping of options",
                                      "indent 'option: value' lines under it"))
        return None
    try:
        return model.model_validate({str(k): v for k, v in raw.items()})
    except ValidationError as exc:
        problems.extend(translate(exc, path, model))
        return None
