"""``pipeline:`` and ``route:`` - the job's own settings and the table -> topic rules."""

from __future__ import annotations

import os
import re
from datetime import timedelta
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, field_validator, model_validator

from cdc_ingest.config.durations import Duration
from cdc_ingest.config.problems import raise_problems
from cdc_ingest.config.source_types import checked_selector
from cdc_ingest.config.types import ConfigModel, KafkaTopic, choice, slug
from cdc_ingest.errors import ConfigError
from cdc_ingest.routing.routes import GROUP_REFERENCE, RouteMode, RouteRule

DEFAULT_NAME = "cdc-ingest"
DEFAULT_METRICS_PORT = 9249  # Flink's Prometheus reporter's
_TOPIC_CHARS = re.compile(r"[A-Za-z0-9._-]*")

Mode = Annotated[RouteMode, choice(RouteMode)]


class SchemaChangeBehavior(StrEnum):
    """Flink CDC's ``pipeline.schema.change.behavior`` values (docs/output-contract.md,
    "Schema changes")."""

    LENIENT = "lenient"
    EXCEPTION = "exception"
    EVOLVE = "evolve"
    TRY_EVOLVE = "try_evolve"
    IGNORE = "ignore"


def state_home() -> Path:
    """Where a pipeline's state lives when ``state.dir`` is not set: the same place whatever
    the working directory. ``$CDC_INGEST_STATE`` if set, else ``$XDG_STATE_HOME/cdc-ingest``,
    else ``~/.local/state/cdc-ingest``."""
    override = os.environ.get("CDC_INGEST_STATE")
    if override:
        return Path(override).expanduser().absolute()
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base).expanduser().absolute() / "cdc-ingest"


def _given(data: dict[str, Any], name: str, alias: str) -> bool:
    return data.get(name) is not None or data.get(alias) is not None


class PipelineOptions(ConfigModel):
    """Settings of the pipeline as a whole. Names derived from ``name`` keep pipelines apart."""

    name: str = Field(DEFAULT_NAME, min_length=1, max_length=200,
                      description="the pipeline's name, free text as in Flink CDC (`MySQL to "
                      "Kafka Pipeline`). Its id, `<name>` below, spells it in every topic, "
                      "transactional id, group and state path: in lower case, every run of "
                      "characters other than letters, digits, '.', '_' and '-' as '-' "
                      "(`mysql-to-kafka-pipeline`), so `Shop` and `shop` are one pipeline "
                      "and fence each other")
    parallelism: int = Field(1, ge=1, description="partitions of the changelog topic "
                             "(= Spark sink tasks)")
    route_mode: Mode = Field(RouteMode.ALL_MATCH, alias="route-mode",
                             description="`ALL_MATCH` (a table goes to every route it matches) "
                             "or `FIRST_MATCH` (only to the first)")
    state_dir: Path = Field(alias="state.dir",
                            description="local state directory of the pipeline")
    checkpoint_dir: str = Field(alias="checkpoint.dir",
                                description="Spark checkpoint (path or URI); losing it "
                                "costs time, not duplicates")
    metrics_port: int = Field(DEFAULT_METRICS_PORT, alias="metrics.port", ge=0, le=65535,
                              description="port of the sink's Prometheus `/metrics` (on "
                              "127.0.0.1, or CDC_INGEST_METRICS_ADDR); capture serves on "
                              "port + 1; `0`: none. A port in use is logged and skipped")
    trigger_interval: Duration = Field(timedelta(seconds=1), alias="trigger.interval",
                                       description="Spark micro-batch interval; 0 = back to back")
    head_start: bool = Field(True, alias="head-start",
                             description="until Spark's first micro-batch, the sink's driver "
                             "writes the changelog itself (the same writer and transactional "
                             "ids, exactly-once unchanged), so the first changes are visible "
                             "while Spark starts (docs/decisions/0017); `false`: only Spark's "
                             "tasks write")
    max_offsets_per_trigger: int | None = Field(
        None, alias="max-offsets-per-trigger", ge=1,
        description="most changelog records per micro-batch")
    changelog_topic: KafkaTopic = Field(alias="changelog.topic",
                                        description="internal topic: captured changes, "
                                        "capture -> sink")
    offsets_topic: KafkaTopic = Field(alias="offsets.topic",
                                      description="internal topic: the binlog position "
                                      "capture committed")
    schema_topic: KafkaTopic = Field(alias="schema.topic",
                                     description="each captured table's key, columns and "
                                     "last DDL (compacted; docs/changelog-format.md)")
    schema_change_behavior: Annotated[SchemaChangeBehavior, choice(SchemaChangeBehavior)] = (
        Field(SchemaChangeBehavior.LENIENT, alias="schema.change.behavior",
              description="`lenient`: DDL is followed, a primary-key change stops capture "
              "with the fix; `evolve` (and `try_evolve`, the same here): DDL is followed, a "
              "table whose primary key changed is re-keyed in place (old keys tombstoned, the "
              "table written again under the new key, in one sink transaction); `ignore`: "
              "each table's rows keep the columns it had when first captured (a column added "
              "later is left out, a dropped one is null), a primary-key change stops capture "
              "as with `lenient`, and TRUNCATE/DROP still empty the table's topics; "
              "`exception`: any DDL on a captured table stops capture"))

    @property
    def id(self) -> str:
        """The one spelling of the name in every Kafka name and path the pipeline derives
        (topics, transactional ids, groups, ``state.dir``): ``Shop`` and ``shop`` are one
        pipeline, and fence each other."""
        return slug(self.name)

    @model_validator(mode="before")
    @classmethod
    def _derived_defaults(cls, data: Any) -> Any:
        """Fill the names derived from ``name`` that the YAML leaves out."""
        if not isinstance(data, dict):
            return data
        raw = data.get("name", DEFAULT_NAME)
        name = slug(str(raw))
        filled = dict(data)
        if not _given(data, "state_dir", "state.dir"):
            filled["state.dir"] = state_home() / name
        state_dir = filled.get("state_dir") or filled["state.dir"]
        if not _given(data, "checkpoint_dir", "checkpoint.dir"):
            filled["checkpoint.dir"] = str(Path(str(state_dir)) / "checkpoint")
        for option in ("changelog", "offsets", "schema"):
            if not _given(data, f"{option}_topic", f"{option}.topic"):
                filled[f"{option}.topic"] = f"cdc-ingest.{name}.{option}"
        return filled


class RouteDef(ConfigModel):
    """One route rule (Flink CDC ``route:`` entry): tables matching source-table go to a topic."""

    source_table: str = Field(alias="source-table", examples=["app.order_[0-9]+"],
                              description="table selector of the tables this rule "
                              "routes, same syntax as source.tables")
    sink_table: str = Field(alias="sink-table", examples=["orders"],
                            description="topic name; may use `$1` groups of the "
                            "source-table regex or the replace-symbol")
    replace_symbol: str | None = Field(None, alias="replace-symbol",
                                       description="placeholder in sink-table that "
                                       "becomes the source table name (e.g. `<>`)")
    description: str | None = Field(None, description="free text for people")

    @field_validator("source_table")
    @classmethod
    def _selector(cls, value: str) -> str:
        return checked_selector(value, "source-table")

    @model_validator(mode="after")
    def _sink_table(self) -> RouteDef:
        try:
            RouteRule.compile(self.source_table, self.sink_table, self.replace_symbol)
        except ConfigError as exc:
            raise_problems("route", [((p.path,), p.message, p.fix) for p in exc.problems])
        if self.replace_symbol is not None:
            literal = self.sink_table.replace(self.replace_symbol, "")
        else:
            literal = GROUP_REFERENCE.sub("", self.sink_table)
        if not _TOPIC_CHARS.fullmatch(literal):
            raise_problems("route", [(("sink-table",), "is not a valid Kafka topic name",
                                      "use letters, digits, '.', '_' or '-'")])
        return self

    @property
    def static_topic(self) -> str | None:
        """The topic when sink-table has no placeholder, else None."""
        dynamic = "$" in self.sink_table or (
            self.replace_symbol is not None and self.replace_symbol in self.sink_table)
        return None if dynamic else self.sink_table
