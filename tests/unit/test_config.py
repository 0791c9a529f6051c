"""Parsing the pipeline YAML: every option, the defaults, derived names, secret masking."""

from __future__ import annotations

import os
import pickle
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from cdc_ingest.config import (
    DeliveryGuarantee,
    MySqlSourceDef,
    PipelineDef,
    PipelineOptions,
    RouteDef,
    RouteMode,
    ServerIdRange,
    StartupMode,
    UpsertKafkaSinkDef,
    ValueFieldsInclude,
    load_pipeline,
    parse_pipeline,
)
from cdc_ingest.config.pipeline import state_home

ROUTES_DIR = Path(__file__).resolve().parents[2] / "routes"
ENV = {"MYSQL_HOST": "db.internal", "MYSQL_PASSWORD": "pw-from-env-123"}

DESIGN_EXAMPLE = r"""
source:
  type: mysql
  hostname: ${MYSQL_HOST}
  port: 3306
  username: cdc
  password: ${MYSQL_PASSWORD}
  tables: shop.\.*, app.order_[0-9]+
  server-id: 5400
  scan.startup.mode: initial
sink:
  type: upsert-kafka
  properties.bootstrap.servers: localhost:9092
  properties.compression.type: lz4
  sink.delivery-guarantee: exactly-once
  sink.add-tableId-to-header-enabled: true
route:
  - source-table: app.order_[0-9]+
    sink-table: orders
    description: merge the sharded order tables into one topic
pipeline:
  name: shop-to-kafka
  parallelism: 2
"""


def minimal(**sections: dict[str, Any]) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "source": {"type": "mysql", "hostname": "h", "username": "u", "password": "p",
                   "tables": r"shop.\.*", "server-id": 5400},
        "sink": {"type": "upsert-kafka", "properties.bootstrap.servers": "k:9092"},
    }
    for name, options in sections.items():
        if name == "route":
            doc["route"] = options
        else:
            doc.setdefault(name, {}).update(options)
    return doc


def parse(doc: dict[str, Any], environ: dict[str, str] | None = None) -> PipelineDef:
    return parse_pipeline(yaml.safe_dump(doc, sort_keys=False), environ or {})


def test_design_example_parses() -> None:
    defn = parse_pipeline(DESIGN_EXAMPLE, ENV)
    assert defn.source.hostname == "db.internal"
    assert defn.source.password.get_secret_value() == "pw-from-env-123"
    assert defn.source.tables.text == r"shop.\.*, app.order_[0-9]+"
    assert defn.source.server_id == ServerIdRange(5400, 5400)
    assert defn.source.server_id_first == 5400
    assert defn.sink.properties == {"bootstrap.servers": "localhost:9092",
                                    "compression.type": "lz4"}
    assert defn.sink.sink_delivery_guarantee is DeliveryGuarantee.EXACTLY_ONCE
    assert defn.sink.sink_add_table_id_to_header_enabled is True
    assert defn.routes == (RouteDef(source_table="app.order_[0-9]+", sink_table="orders",
                                    description="merge the sharded order tables into one topic"),)
    assert defn.pipeline.name == "shop-to-kafka"
    assert defn.pipeline.parallelism == 2


def test_defaults() -> None:
    defn = parse(minimal())
    src, sink, pipe = defn.source, defn.sink, defn.pipeline
    assert (src.port, src.server_time_zone, src.scan_startup_mode) == (
        3306, "UTC", StartupMode.INITIAL)
    assert src.tables_exclude is None and src.tables_key_columns == {}
    assert src.heartbeat_interval == timedelta(seconds=30)
    assert src.connect_timeout == timedelta(seconds=30)
    assert src.connect_max_retries == 3
    assert src.scan_incremental_snapshot_chunk_size == 8096
    assert src.scan_snapshot_fetch_size == 1024
    assert src.scan_incremental_snapshot_parallelism is None
    assert src.treat_tinyint1_as_boolean_enabled is True
    assert src.capture_transaction_max_rows == 50_000
    assert src.capture_transaction_max_interval == timedelta(seconds=1)
    assert sink.sink_delivery_guarantee is DeliveryGuarantee.AT_LEAST_ONCE
    assert sink.sink_add_table_id_to_header_enabled is False
    assert (sink.sink_buffer_flush_max_rows, sink.sink_buffer_flush_interval) == (0, timedelta(0))
    assert not sink.buffer_flush_enabled
    assert sink.value_fields_include is ValueFieldsInclude.ALL
    assert (sink.key_format, sink.value_format) == ("json", "json")
    assert sink.topic_partitions is None and sink.topic_replication_factor is None
    assert defn.routes == ()
    assert pipe.name == "cdc-ingest" and pipe.parallelism == 1
    assert pipe.route_mode is RouteMode.ALL_MATCH
    home = Path.home() / ".local" / "state" / "cdc-ingest"
    if os.environ.get("CDC_INGEST_STATE") or os.environ.get("XDG_STATE_HOME"):
        home = state_home()
    assert pipe.state_dir == home / "cdc-ingest"  # the same from any working directory
    assert pipe.checkpoint_dir == str(home / "cdc-ingest" / "checkpoint")
    assert pipe.metrics_port == 9249 and pipe.max_offsets_per_trigger is None
    assert pipe.trigger_interval == timedelta(seconds=1)
    assert pipe.changelog_topic == "cdc-ingest.cdc-ingest.changelog"
    assert pipe.offsets_topic == "cdc-ingest.cdc-ingest.offsets"


def test_every_source_option() -> None:
    src = parse(minimal(source={
        "name": "MySQL Source", "port": "3307", "tables.exclude": r"shop.tmp_\.*",
        "tables.key-columns": {"shop.audit": "id, ts", r"shop.log_[0-9]+": ["seq"]},
        "server-id": "5400-5405", "server-time-zone": "Asia/Shanghai",
        "scan.startup.mode": "specific-offset",
        "scan.startup.specific-offset.file": "mysql-bin.000003",
        "scan.startup.specific-offset.pos": 4,
        "scan.startup.specific-offset.gtid-set": "uuid:1-10",
        "scan.startup.specific-offset.skip-events": 2,
        "scan.startup.specific-offset.skip-rows": 7,
        "heartbeat.interval": "10s", "connect.timeout": "1 min", "connect.max-retries": 0,
        "scan.incremental.snapshot.chunk.size": 100, "scan.snapshot.fetch.size": 50,
        "scan.incremental.snapshot.parallelism": 5,
        "treat-tinyint1-as-boolean.enabled": False,
        "capture.transaction.max-rows": 10, "capture.transaction.max-interval": "250ms",
    })).source
    assert src.name == "MySQL Source" and src.port == 3307
    assert src.tables_exclude is not None and src.tables_exclude.matches("shop", "tmp_1")
    assert src.captures("shop", "orders") and not src.captures("shop", "tmp_1")
    assert src.key_columns_for("shop", "audit") == ("id", "ts")
    assert src.key_columns_for("shop", "log_12") == ("seq",)
    assert src.key_columns_for("shop", "orders") is None
    assert (src.server_id_first, src.server_id_last, src.server_id.size) == (5400, 5405, 6)
    assert str(src.server_id) == "5400-5405"
    assert src.server_time_zone == "Asia/Shanghai"
    assert src.scan_startup_mode is StartupMode.SPECIFIC_OFFSET
    assert src.scan_startup_specific_offset_file == "mysql-bin.000003"
    assert src.scan_startup_specific_offset_pos == 4
    assert src.scan_startup_specific_offset_gtid_set == "uuid:1-10"
    assert src.scan_startup_specific_offset_skip_events == 2
    assert src.scan_startup_specific_offset_skip_rows == 7
    assert src.heartbeat_interval == timedelta(seconds=10)
    assert src.connect_timeout == timedelta(minutes=1)
    assert src.connect_max_retries == 0
    assert src.scan_incremental_snapshot_chunk_size == 100
    assert src.scan_snapshot_fetch_size == 50
    assert src.scan_incremental_snapshot_parallelism == 5
    assert src.treat_tinyint1_as_boolean_enabled is False
    assert src.capture_transaction_max_rows == 10
    assert src.capture_transaction_max_interval == timedelta(milliseconds=250)


def test_timestamp_startup() -> None:
    src = parse(minimal(source={"scan.startup.mode": "timestamp",
                                "scan.startup.timestamp-millis": 1700000000000})).source
    assert src.scan_startup_mode is StartupMode.TIMESTAMP
    assert src.scan_startup_timestamp_millis == 1700000000000


@pytest.mark.parametrize("mode", ["initial", "snapshot", "latest-offset", "earliest-offset",
                                  "LATEST_OFFSET", "Earliest-Offset"])
def test_startup_modes_any_case(mode: str) -> None:
    src = parse(minimal(source={"scan.startup.mode": mode})).source
    assert src.scan_startup_mode.value == mode.lower().replace("_", "-")


def test_every_sink_option() -> None:
    sink = parse(minimal(sink={
        "name": "Upsert Kafka Sink", "properties.security.protocol": "SASL_SSL",
        "properties.sasl.password": "kafka-secret", "properties.linger.ms": 5,
        "properties.enable.idempotence": True,
        "sink.delivery-guarantee": "none", "sink.add-tableId-to-header-enabled": "true",
        "sink.buffer-flush.max-rows": 1000, "sink.buffer-flush.interval": "1 s",
        "value.fields-include": "EXCEPT_KEY", "key.format": "json", "value.format": "JSON",
        "topic.partitions": 6, "topic.replication-factor": 3,
        "sink.transactional-id-prefix": "team-a.shop",
    })).sink
    assert sink.name == "Upsert Kafka Sink"
    assert sink.properties == {
        "bootstrap.servers": "k:9092", "security.protocol": "SASL_SSL",
        "sasl.password": "kafka-secret", "linger.ms": "5", "enable.idempotence": "true",
    }
    assert sink.sink_delivery_guarantee is DeliveryGuarantee.NONE
    assert sink.sink_add_table_id_to_header_enabled is True
    assert sink.sink_buffer_flush_max_rows == 1000
    assert sink.sink_buffer_flush_interval == timedelta(seconds=1)
    assert sink.buffer_flush_enabled
    assert sink.value_fields_include is ValueFieldsInclude.EXCEPT_KEY
    assert (sink.key_format, sink.value_format) == ("json", "json")
    assert (sink.topic_partitions, sink.topic_replication_factor) == (6, 3)
    assert sink.sink_transactional_id_prefix == "team-a.shop"


def test_every_pipeline_option_and_route_option() -> None:
    defn = parse(minimal(
        pipeline={"name": "orders.v2", "parallelism": 4, "route-mode": "first_match",
                  "state.dir": "/var/lib/cdc", "checkpoint.dir": "s3a://bucket/ckpt",
                  "metrics.port": 9404, "trigger.interval": "500ms",
                  "max-offsets-per-trigger": 100000, "changelog.topic": "my.changelog",
                  "offsets.topic": "my.offsets"},
        route=[{"source-table": r"shop.\.*", "sink-table": "ods.<>", "replace-symbol": "<>",
                "description": "prefix"}],
    ))
    pipe = defn.pipeline
    assert pipe.name == "orders.v2" and pipe.parallelism == 4
    assert pipe.route_mode is RouteMode.FIRST_MATCH
    assert pipe.state_dir == Path("/var/lib/cdc")
    assert pipe.checkpoint_dir == "s3a://bucket/ckpt"
    assert pipe.metrics_port == 9404
    assert pipe.trigger_interval == timedelta(milliseconds=500)
    assert pipe.max_offsets_per_trigger == 100000
    assert (pipe.changelog_topic, pipe.offsets_topic) == ("my.changelog", "my.offsets")
    assert defn.routes[0].replace_symbol == "<>"
    assert defn.routes[0].description == "prefix"
    assert defn.router().sink_topics("shop", "orders") == ("ods.orders",)


def test_derived_names_follow_pipeline_name() -> None:
    defn = parse(minimal(pipeline={"name": "shop", "state.dir": "/data/shop"}))
    assert defn.pipeline.checkpoint_dir == str(Path("/data/shop/checkpoint"))
    assert defn.pipeline.changelog_topic == "cdc-ingest.shop.changelog"
    assert defn.transactional_id_prefix == "cdc-ingest.shop"
    assert defn.capture_transactional_id == "cdc-ingest.shop.capture"
    assert defn.sink_transactional_id(3) == "cdc-ingest.shop.sink.3"
    assert defn.sink_group_id == "cdc-ingest.shop.sink"
    custom = parse(minimal(sink={"sink.transactional-id-prefix": "team"}))
    assert custom.capture_transactional_id == "team.capture"


def test_numbers_where_text_is_expected() -> None:
    # Flink CDC examples write `password: 123456`; YAML reads it as an integer.
    defn = parse(minimal(source={"password": 123456, "username": 42},
                         route=[{"source-table": r"shop.\.*", "sink-table": 2024}]))
    assert defn.source.password.get_secret_value() == "123456"
    assert defn.source.username == "42"
    assert defn.routes[0].sink_table == "2024"


def test_repr_and_str_never_show_secrets() -> None:
    doc = minimal(sink={"properties.sasl.password": "kafka-pw-xyz",
                        "properties.ssl.key.password": "key-pw-xyz",
                        "properties.ssl.keystore.password": "store-pw-xyz",
                        "properties.sasl.jaas.config":
                            "org.apache.kafka.common.security.plain.PlainLoginModule required "
                            'username="u" password="jaas-secret-xyz";'})
    doc["source"]["password"] = "${MYSQL_PASSWORD}"
    defn = parse(doc, ENV)
    shown = repr(defn) + str(defn) + repr(defn.sink.properties) + f"{defn.sink.properties}"
    for secret in ("pw-from-env-123", "kafka-pw-xyz", "key-pw-xyz", "store-pw-xyz",
                   "jaas-secret-xyz"):
        assert secret not in shown
    assert "k:9092" in shown  # non-secret settings stay visible
    assert defn.sink.properties["sasl.password"] == "kafka-pw-xyz"


def test_definitions_are_frozen_hashable_and_picklable() -> None:
    defn = parse(minimal(source={"tables.key-columns": {"shop.a": "id"}},
                         sink={"properties.sasl.password": "x"}))
    with pytest.raises(Exception, match="frozen"):
        defn.pipeline.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        defn.sink.properties["acks"] = "0"
    assert hash(defn) == hash(parse(minimal(source={"tables.key-columns": {"shop.a": "id"}},
                                            sink={"properties.sasl.password": "x"})))
    copy = pickle.loads(pickle.dumps(defn))
    assert copy == defn
    assert copy.sink.properties["sasl.password"] == "x"


def test_models_can_be_built_in_python() -> None:
    source = MySqlSourceDef(type="mysql", hostname="h", username="u", password="p",
                            tables="shop.orders", server_id="7")  # type: ignore[arg-type]
    sink = UpsertKafkaSinkDef.model_validate({"type": "upsert-kafka",
                                              "properties.bootstrap.servers": "k:9092"})
    defn = PipelineDef(source=source, sink=sink)
    assert defn.pipeline == PipelineOptions.model_validate({})
    assert defn.source.server_id_first == 7


def _mechanical(alias: str) -> str:
    return re.sub(r"[.-]", "_", alias).replace("tableId", "table_id").lower()


@pytest.mark.parametrize("model", [MySqlSourceDef, UpsertKafkaSinkDef, PipelineOptions, RouteDef])
def test_attribute_names_are_the_option_names_in_snake_case(model: Any) -> None:
    for name, info in model.model_fields.items():
        assert name == _mechanical(info.alias or name)


@pytest.mark.parametrize("example", sorted(ROUTES_DIR.glob("*.yaml")), ids=lambda p: p.name)
def test_example_pipelines_parse(example: Path) -> None:
    defn = load_pipeline(example, ENV)
    assert defn.pipeline.name == example.stem
    assert "pw-from-env-123" not in repr(defn)


def test_shop_example_routes_like_design() -> None:
    router = load_pipeline(ROUTES_DIR / "shop-to-kafka.yaml", ENV).router()
    assert router.sink_topics("app", "order_17") == ("orders",)
    assert router.sink_topics("shop", "customers") == ("shop.customers",)


def test_json_dump_reads_back_and_masks_secrets() -> None:
    defn = load_pipeline(ROUTES_DIR / "mirror-with-prefix.yaml", ENV)
    doc = minimal(sink={"properties.sasl.password": "dump-secret-1"})
    doc["source"]["password"] = "dump-secret-2"
    with_secrets = parse(doc)
    for original in (defn, with_secrets):
        text = original.model_dump_json(by_alias=True)
        assert "dump-secret" not in text and "pw-from-env-123" not in text
        again = PipelineDef.model_validate_json(text)
        assert again.model_dump(exclude={"source": {"password"}, "sink": {"properties"}}) == (
            original.model_dump(exclude={"source": {"password"}, "sink": {"properties"}}))
    assert '"heartbeat.interval":"30s"' in defn.model_dump_json(by_alias=True)
