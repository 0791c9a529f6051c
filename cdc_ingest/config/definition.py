"""The whole pipeline definition, and the names every process derives from it."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from cdc_ingest.config.kafka_sink import KafkaSinkDef
from cdc_ingest.config.pipeline import PipelineOptions, RouteDef
from cdc_ingest.config.problems import Found, raise_problems
from cdc_ingest.config.sink import UpsertKafkaSinkDef
from cdc_ingest.config.source import MySqlSourceDef
from cdc_ingest.config.transform import TransformDef
from cdc_ingest.config.types import ConfigModel, is_safe_id
from cdc_ingest.errors import ConfigError, ConfigProblem
from cdc_ingest.kafka.config import client_config
from cdc_ingest.kafka.logs import GROUP_BASE
from cdc_ingest.model import names
from cdc_ingest.routing.routes import Router


class PipelineDef(ConfigModel):
    """A parsed, validated pipeline: plain data, no I/O. ``repr`` never shows a secret."""

    source: MySqlSourceDef
    sink: UpsertKafkaSinkDef | KafkaSinkDef
    routes: tuple[RouteDef, ...] = Field((), alias="route")
    transforms: tuple[TransformDef, ...] = Field((), alias="transform")
    pipeline: PipelineOptions = Field(default_factory=lambda: PipelineOptions.model_validate({}))
    # Flink CDC options accepted but without effect here, each with why (config/ignored.py)
    warnings: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.pipeline.name

    @property
    def transactional_id_prefix(self) -> str:
        """``sink.transactional-id-prefix``, by default ``cdc-ingest.<pipeline id>``."""
        return self.sink.sink_transactional_id_prefix or f"cdc-ingest.{self.pipeline.id}"

    @property
    def old_transactional_id_prefix(self) -> str | None:
        """The prefix earlier releases derived from a name with capitals
        (``cdc-ingest.Shop``, the topics being ``cdc-ingest.shop.*``); its sink group and
        transaction metadata state are carried over once (sink/driver/old_names.py). None
        when the prefix is given or the name never spelled it differently."""
        if self.sink.sink_transactional_id_prefix or not is_safe_id(self.name):
            return None
        old = f"cdc-ingest.{self.name}"
        return None if old == self.transactional_id_prefix else old

    def kafka_config(self, **overrides: Any) -> dict[str, Any]:
        """Every Kafka client's settings: ``properties.*`` as librdkafka takes them
        (kafka/config.py), with the base of the pipeline's reader groups."""
        return client_config(self.sink.properties, **{
            GROUP_BASE: names.tools_group(self.transactional_id_prefix), **overrides})

    @property
    def capture_transactional_id(self) -> str:
        return names.capture_transactional_id(self.transactional_id_prefix)

    def sink_transactional_id(self, partition: int) -> str:
        return names.sink_transactional_id(self.transactional_id_prefix, partition)

    @property
    def signal_topic(self) -> str:
        return names.signal_topic(self.transactional_id_prefix)

    @property
    def notification_topic(self) -> str:
        return names.notification_topic(self.transactional_id_prefix)

    @property
    def verify_topic(self) -> str:
        return names.verify_topic(self.transactional_id_prefix)

    @property
    def sink_group_id(self) -> str:
        return names.sink_group_id(self.transactional_id_prefix)

    @property
    def snapshot_readers(self) -> int:
        """Snapshot readers at once: ``scan.incremental.snapshot.parallelism``, else
        ``pipeline.parallelism``."""
        return self.source.snapshot_readers(self.pipeline.parallelism)

    @property
    def capture_server_ids(self) -> range:
        """Every server-id capture replicates as: the binlog reader's first, then the
        snapshot readers' (ServerIdRange.capture_ids)."""
        return self.source.server_id.capture_ids(self.snapshot_readers)

    def router(self) -> Router:
        """The compiled route rules with ``pipeline.route-mode``."""
        return Router.from_defs(self.routes, self.pipeline.route_mode)

    def transform_for(self, db: str, table: str) -> TransformDef | None:
        """The transform rule of a table: the first whose source-table matches."""
        return next((t for t in self.transforms if t.matches(db, table)), None)

    def key_columns_for(self, db: str, table: str) -> tuple[str, ...] | None:
        """A table's configured key: its transform's ``primary-keys``, else
        ``source.tables.key-columns``; None: the primary key."""
        rule = self.transform_for(db, table)
        configured = self.source.key_columns_for(db, table)
        if rule is None or not rule.keys:
            return configured
        if configured is not None and configured != rule.keys:
            raise ConfigError([ConfigProblem(
                "transform.primary-keys",
                f"keys {db}.{table} by ({', '.join(rule.keys)}) but source.tables.key-columns "
                f"by ({', '.join(configured)})", "name the table's key in one of them")])
        return rule.keys

    @model_validator(mode="after")
    def _internal_topics_stay_internal(self) -> PipelineDef:
        options = (("changelog.topic", self.pipeline.changelog_topic),
                   ("offsets.topic", self.pipeline.offsets_topic),
                   ("schema.topic", self.pipeline.schema_topic))
        internal: dict[str, str] = {}
        found: Found = []
        for option, topic in options:
            if topic in internal:
                found.append((("pipeline", option), f"is the same topic as {internal[topic]}",
                              "give the internal topics different names"))
            internal.setdefault(topic, option)
        for index, route in enumerate(self.routes):
            used = internal.get(route.static_topic or "")
            if used is not None:
                found.append((("route", index, "sink-table"),
                              f"is the pipeline's {used}; rows would corrupt it",
                              "route to another topic"))
        found += [(("source", *loc), message, fix) for loc, message, fix
                  in self.source.implied_server_id_problems(self.pipeline.parallelism)]
        raise_problems("pipeline", found)
        self._typed_events_need_plain_columns()
        return self

    def _typed_events_need_plain_columns(self) -> None:
        """Column types (include-schema, ISO-8601 timestamps) are the source table's: a
        transform that projects computed columns would need types cdc-ingest does not infer."""
        if not self.sink.typed:
            return
        found: Found = [
            (("transform", index, "projection"),
             "cannot be combined with sink key/value.format avro-confluent, "
             "debezium-json.include-schema.enabled or timestamp-format.standard: ISO-8601 "
             "(the column types written are the source table's; those of a projection are "
             "not inferred)",
             "remove the projection (filters are fine), or those sink options")
            for index, rule in enumerate(self.transforms) if rule.projection]
        raise_problems("pipeline", found)
