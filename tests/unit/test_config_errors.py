"""Every kind of configuration problem: its YAML path, what is wrong, and the fix."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from cdc_ingest.config import parse_pipeline
from cdc_ingest.errors import ConfigError, ConfigProblem
from cdc_ingest.kafka.logs import GROUP_BASE
from tests.unit.test_config import minimal


def problems_of(doc: dict[str, Any] | str, environ: dict[str, str] | None = None
                ) -> dict[str, ConfigProblem]:
    text = doc if isinstance(doc, str) else yaml.safe_dump(doc, sort_keys=False)
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(text, environ or {})
    found = {p.path: p for p in caught.value.problems}
    assert len(found) == len(caught.value.problems), "one problem per path"
    _assert_no_pydantic_wording(str(caught.value))
    return found


def _assert_no_pydantic_wording(text: str) -> None:
    for raw in ("Input should", "pydantic", "type=", "Field required", "validation error"):
        assert raw not in text


def only(doc: dict[str, Any] | str, path: str) -> ConfigProblem:
    found = problems_of(doc)
    assert list(found) == [path]
    return found[path]


def test_unknown_option_with_did_you_mean_and_sorted_list() -> None:
    doc = minimal(source={"hostnme": "x"})
    problem = only(doc, "source.hostnme")
    assert problem.message == "unknown option 'hostnme'"
    assert problem.fix.startswith("did you mean 'hostname'? supported options: ")
    listed = problem.fix.split("supported options: ")[1].split(", ")
    assert listed == sorted(listed)
    assert "scan.startup.mode" in listed and "server-id" in listed


def test_unknown_option_far_from_any_lists_options_only() -> None:
    problem = only(minimal(pipeline={"zzzz": 1}), "pipeline.zzzz")
    assert problem.fix.startswith("supported options: changelog.topic, checkpoint.dir, ")


def test_unknown_sink_option_lists_properties_pass_through() -> None:
    problem = only(minimal(sink={"sink.delivery-guarantees": "none"}),
                   "sink.sink.delivery-guarantees")
    assert "did you mean 'sink.delivery-guarantee'?" in problem.fix
    assert "properties.*" in problem.fix


def test_options_of_related_connectors_explain_themselves() -> None:
    found = problems_of(minimal(sink={"topic": "t", "aliyun.kafka.accessKeyId": "a"}))
    assert "route sink-table" in found["sink.topic"].fix
    assert "properties.sasl" in found["sink.aliyun.kafka.accessKeyId"].fix


def test_unknown_section() -> None:
    doc = minimal()
    doc["transfrom"] = [{"source-table": "a.b"}]
    doc["piepline"] = {}
    found = problems_of(doc)
    assert found["transfrom"].message == "unknown section 'transfrom'"
    assert found["transfrom"].fix.startswith("did you mean 'transform'?")
    assert found["piepline"].fix.startswith("did you mean 'pipeline'?")


def test_transform_problems_are_all_reported_with_their_paths() -> None:
    doc = minimal()
    doc["transform"] = [
        {"source-table": "shop.orders", "projection": "id, UPPER(name AS n",
         "filter": "id >"},
        {"source-table": "shop.a", "projection": "id, NOW() AS t"},
        {"source-table": "shop.b", "projection": "id, name AS title, price * 2 AS p",
         "primary-keys": "title, p, missing"},
        {"source-table": "shop.c", "projection": "id, FOO(id) AS f",
         "converter-after-transform": "HARD_DELETE", "table-options": "x"},
        {"source-table": "shop.d", "projection": "id, __table_name__ AS __schema_name__"},
    ]
    found = problems_of(doc)
    assert "expected ')'" in found["transform[0].projection"].message
    assert "expected a value" in found["transform[0].filter"].message
    assert "replay after a failure" in found["transform[1].projection"].message
    assert found["transform[2].primary-keys"].message == (
        "names title, which the projection writes renamed from name; "
        "names p, which the projection writes computed; "
        "names missing, which the projection does not write")
    assert "unknown function FOO()" in found["transform[3].projection"].message
    assert found["transform[3].converter-after-transform"].fix == "use SOFT_DELETE"
    assert "key=value" in found["transform[3].table-options"].message
    assert "metadata column" in found["transform[4].projection"].message


@pytest.mark.parametrize("section", ["source", "sink"])
def test_missing_section(section: str) -> None:
    doc = minimal()
    del doc[section]
    problem = only(doc, section)
    assert problem.message == "required section is missing"
    assert "type:" in problem.fix


@pytest.mark.parametrize(("option", "fix"), [
    ("hostname", "add 'hostname: db.example.com'"),
    ("username", "add 'username: cdc'"),
    ("password", "add 'password: ${MYSQL_PASSWORD}'"),
    ("tables", "add 'tables: shop.\\.*'"),
    ("server-id", "add 'server-id: 5400'"),
    ("type", "add 'type: mysql'"),
])
def test_missing_required_source_option(option: str, fix: str) -> None:
    doc = minimal()
    del doc["source"][option]
    problem = only(doc, f"source.{option}")
    assert (problem.message, problem.fix) == ("required option is missing", fix)


def test_missing_bootstrap_servers() -> None:
    doc = minimal()
    del doc["sink"]["properties.bootstrap.servers"]
    problem = only(doc, "sink.properties.bootstrap.servers")
    assert problem.message == "required option is missing"
    assert "properties.bootstrap.servers:" in problem.fix


@pytest.mark.parametrize(("section", "option", "value", "message"), [
    ("source", "port", "abc", "must be a whole number"),
    ("source", "port", 70000, "must be at most 65535"),
    ("source", "port", 0, "must be at least 1"),
    ("source", "connect.max-retries", -1, "must be at least 0"),
    ("source", "treat-tinyint1-as-boolean.enabled", "maybe", "must be true or false"),
    ("source", "hostname", True, "must be a text value"),
    ("source", "server-id", "54a0", "is not a server id or range"),
    ("source", "server-id", "5404-5400", "must be between 1 and 4294967295, low end first"),
    ("source", "server-time-zone", "Mars/Olympus", "is not a known time zone"),
    ("source", "scan.startup.mode", "inital", "is not a supported value"),
    ("source", "heartbeat.interval", "soon", "is not a duration"),
    ("source", "heartbeat.interval", "3 fortnights", "has an unknown time unit"),
    ("source", "connect.timeout", 0, "must be longer than zero"),
    ("source", "tables", "shop.*", "'shop.*' is not a valid regular expression "
                                   "(nothing to repeat)"),
    ("source", "tables", "shop", "'shop' is not of the form <database>.<table>"),
    ("source", "tables.key-columns", {"shop.a": ""}, "entry 'shop.a' names no column"),
    ("source", "tables.key-columns", "id", "must be a mapping of table to key columns"),
    ("sink", "type", "kafka-upsert", "is not a supported sink type"),
    ("sink", "sink.delivery-guarantee", "twice", "is not a supported value"),
    ("sink", "value.fields-include", "SOME", "is not a supported value"),
    ("sink", "key.format", "avro", "names a format cdc-ingest does not write"),
    ("sink", "value.format", "debezium-json", "is a change-event format, not an upsert one"),
    ("sink", "value.format", "xml", "is not a known format"),
    ("sink", "topic.partitions", 0, "must be at least 1"),
    ("sink", "sink.transactional-id-prefix", "a b", "is not a valid name"),
    ("pipeline", "name", "", "is not a valid value"),
    ("pipeline", "parallelism", 0, "must be at least 1"),
    ("pipeline", "route-mode", "SOME_MATCH", "is not a supported value"),
    ("pipeline", "metrics.port", 99999, "must be at most 65535"),
    ("pipeline", "changelog.topic", "bad topic!", "is not a valid Kafka topic name"),
])
def test_bad_values(section: str, option: str, value: Any, message: str) -> None:
    problem = only(minimal(**{section: {option: value}}), f"{section}.{option}")
    assert problem.message == message
    assert problem.fix


def test_enum_fix_suggests_and_lists_values() -> None:
    problem = only(minimal(source={"scan.startup.mode": "inital"}), "source.scan.startup.mode")
    assert problem.fix == ("did you mean 'initial'? supported: initial, snapshot, latest-offset,"
                           " earliest-offset, specific-offset, timestamp")


def test_format_fix_names_the_formats_upsert_kafka_writes() -> None:
    problem = only(minimal(sink={"key.format": "avro"}), "sink.key.format")
    assert "upsert-kafka writes json or avro-confluent" in problem.fix


def test_avro_confluent_needs_its_registry_and_reports_every_problem_at_once() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(yaml.safe_dump(minimal(sink={
            "key.format": "avro-confluent", "value.format": "AVRO-CONFLUENT",
            "value.avro-confluent.url": "registry:8081",
            "value.avro-confluent.basic-auth.user-info": "s3cret-without-colon",
            "value.avro-confluent.schema": "{}",
            "key.json.encoding": "jackson"})), {})
    found = {p.path: p for p in caught.value.problems}
    assert found["sink.key.avro-confluent.url"].message == "required option is missing"
    assert "not an http(s) URL" in found["sink.value.avro-confluent.url"].message
    assert "must be user:password" in found[
        "sink.value.avro-confluent.basic-auth.user-info"].message
    assert "derives the schema" in found["sink.value.avro-confluent.schema"].message
    assert "key.format json only" in found["sink.key.json.encoding"].message
    assert "s3cret" not in str(caught.value)


def test_avro_confluent_options_without_prefix_set_key_and_value() -> None:
    defn = parse_pipeline(yaml.safe_dump(minimal(sink={
        "key.format": "avro-confluent", "value.format": "avro-confluent",
        "avro-confluent.url": "http://a:8081", "value.avro-confluent.url": "http://b:8081",
        "avro-confluent.basic-auth.user-info": "u:s3cret-Registry-pw",
        "value.avro-confluent.subject": "orders-v"})), {})
    key, value = defn.sink.key_avro_confluent, defn.sink.value_avro_confluent
    assert (key.url, key.subject) == ("http://a:8081", None)
    assert (value.url, value.subject) == ("http://b:8081", "orders-v")
    assert value.registry_config().user_info == "u:s3cret-Registry-pw"
    # a secret that cannot turn up by chance (a temporary folder's random name held "pw")
    secret = "s3cret-Registry-pw"
    assert secret not in repr(value.registry_config()) and secret not in repr(defn)


def test_avro_confluent_client_properties_are_masked_and_read_as_options() -> None:
    defn = parse_pipeline(yaml.safe_dump(minimal(sink={
        "key.format": "avro-confluent", "value.format": "avro-confluent",
        "avro-confluent.url": "http://a:8081",
        "avro-confluent.properties.basic.auth.user.info": "u:sekrit",
        "avro-confluent.properties.bearer.auth.token": "tok3n"})), {})
    shown = repr(defn) + defn.model_dump_json()
    assert "sekrit" not in shown and "tok3n" not in shown
    config = defn.sink.key_avro_confluent.registry_config()
    assert (config.user_info, config.bearer_token) == ("u:sekrit", "tok3n")


def test_a_pipeline_name_is_free_text_and_its_id_a_safe_spelling_of_it() -> None:
    defn = parse_pipeline(yaml.safe_dump(minimal(pipeline={"name": "MySQL to Kafka Pipeline"})),
                          {})
    assert defn.name == "MySQL to Kafka Pipeline"
    assert defn.pipeline.id == "mysql-to-kafka-pipeline"
    assert defn.transactional_id_prefix == "cdc-ingest.mysql-to-kafka-pipeline"
    assert defn.pipeline.changelog_topic == "cdc-ingest.mysql-to-kafka-pipeline.changelog"
    assert defn.old_transactional_id_prefix is None


def test_every_kafka_name_spells_the_name_one_way() -> None:
    """``Shop_1`` and ``shop_1`` are one pipeline: the same topics, ids, groups and state
    directory, so one fences the other; what earlier releases spelled ``cdc-ingest.Shop_1``
    is named for the carry-over (sink/driver/old_names.py)."""
    shop, lower = (parse_pipeline(yaml.safe_dump(minimal(pipeline={"name": n})), {})
                   for n in ("Shop_1", "shop_1"))

    def names(defn: Any) -> tuple[Any, ...]:
        return (defn.pipeline.changelog_topic, defn.pipeline.offsets_topic,
                defn.pipeline.schema_topic, defn.pipeline.state_dir,
                defn.capture_transactional_id, defn.sink_transactional_id(3),
                defn.sink_group_id, defn.signal_topic, defn.verify_topic,
                defn.kafka_config()[GROUP_BASE])

    assert names(shop) == names(lower)
    assert shop.capture_transactional_id == "cdc-ingest.shop_1.capture"
    assert shop.sink_group_id == "cdc-ingest.shop_1.sink"
    assert shop.old_transactional_id_prefix == "cdc-ingest.Shop_1"
    assert lower.old_transactional_id_prefix is None
    given = parse_pipeline(yaml.safe_dump(minimal(
        pipeline={"name": "Shop_1"}, sink={"sink.transactional-id-prefix": "Mine"})), {})
    assert (given.transactional_id_prefix, given.old_transactional_id_prefix) == ("Mine", None)


def test_specific_offset_needs_a_position() -> None:
    problem = only(minimal(source={"scan.startup.mode": "specific-offset"}),
                   "source.scan.startup.mode")
    assert problem.message == "specific-offset needs a position to start from"
    assert "gtid-set" in problem.fix and "file" in problem.fix and "pos" in problem.fix


def test_specific_offset_file_without_pos() -> None:
    doc = minimal(source={"scan.startup.mode": "specific-offset",
                          "scan.startup.specific-offset.file": "mysql-bin.000001"})
    problem = only(doc, "source.scan.startup.specific-offset.pos")
    assert problem.message == "is required with the other binlog coordinate"


def test_specific_offset_gtid_alone_is_enough() -> None:
    doc = minimal(source={"scan.startup.mode": "specific-offset",
                          "scan.startup.specific-offset.gtid-set": "u:1-5"})
    parse_pipeline(yaml.safe_dump(doc), {})


def test_offset_options_without_their_mode_are_reported_each() -> None:
    doc = minimal(source={"scan.startup.specific-offset.pos": 4,
                          "scan.startup.specific-offset.gtid-set": "u:1",
                          "scan.startup.timestamp-millis": 5})
    found = problems_of(doc)
    assert set(found) == {"source.scan.startup.specific-offset.pos",
                          "source.scan.startup.specific-offset.gtid-set",
                          "source.scan.startup.timestamp-millis"}
    assert found["source.scan.startup.specific-offset.pos"].message == (
        "is only used with scan.startup.mode: specific-offset")
    assert "scan.startup.mode: timestamp" in found["source.scan.startup.timestamp-millis"].fix


def test_timestamp_mode_needs_millis() -> None:
    problem = only(minimal(source={"scan.startup.mode": "timestamp"}),
                   "source.scan.startup.timestamp-millis")
    assert problem.message == "is required by scan.startup.mode: timestamp"


def test_snapshot_parallelism_needs_enough_server_ids() -> None:
    doc = minimal(source={"server-id": "5400-5401", "scan.incremental.snapshot.parallelism": 4})
    problem = only(doc, "source.server-id")
    assert "5400-5404" in problem.fix  # 1 binlog reader + 4 snapshot readers


def test_managed_kafka_properties_are_refused() -> None:
    doc = minimal(sink={"properties.transactional.id": "x", "properties.key.serializer": "y"})
    found = problems_of(doc)
    assert found["sink.properties.transactional.id"].message == "is managed by cdc-ingest"
    assert "sink.transactional-id-prefix" in found["sink.properties.transactional.id"].fix
    assert "sink.properties.key.serializer" in found


def test_nested_property_value_is_refused() -> None:
    problem = only(minimal(sink={"properties.acks": ["all"]}), "sink.properties")
    assert problem.message == "'properties.acks' must be a single value"


def test_exactly_once_needs_idempotence() -> None:
    doc = minimal(sink={"sink.delivery-guarantee": "exactly-once",
                        "properties.enable.idempotence": False})
    only(doc, "sink.properties.enable.idempotence")


def test_buffer_flush_needs_both_limits() -> None:
    problem = only(minimal(sink={"sink.buffer-flush.max-rows": 100}),
                   "sink.sink.buffer-flush.max-rows")
    assert "sink.buffer-flush.interval" in problem.message


@pytest.mark.parametrize(("route", "path", "message"), [
    ({"sink-table": "t"}, "route[0].source-table", "required option is missing"),
    ({"source-table": "a.b"}, "route[0].sink-table", "required option is missing"),
    ({"source-table": "a.(b", "sink-table": "t"}, "route[0].source-table",
     "'a.(b' is not a valid regular expression (missing ), unterminated subpattern)"),
    ({"source-table": "a.b", "sink-table": "t_$1"}, "route[0].sink-table",
     "refers to group $1 but the source-table regex has 0 capturing group(s)"),
    ({"source-table": "a.(b)", "sink-table": "t_$2"}, "route[0].sink-table",
     "refers to group $2 but the source-table regex has 1 capturing group(s)"),
    ({"source-table": "a.(b)", "sink-table": "t_$${x}"}, "route[0].sink-table",
     "has a '$' that is not a group reference"),
    ({"source-table": "a.b", "sink-table": "cost$"}, "route[0].sink-table",
     "has a '$' that is not a group reference"),
    ({"source-table": "a.b", "sink-table": "t", "replace-symbol": ""}, "route[0].replace-symbol",
     "is empty"),
    ({"source-table": "a.b", "sink-table": " "}, "route[0].sink-table", "is empty"),
    ({"source-table": "a.b", "sink-table": "my topic"}, "route[0].sink-table",
     "is not a valid Kafka topic name"),
    ({"source-table": "a.b", "sink-table": "t", "sink": "x"}, "route[0].sink",
     "unknown option 'sink'"),
])
def test_route_problems(route: dict[str, Any], path: str, message: str) -> None:
    problem = only(minimal(route=[route]), path)
    assert problem.message == message
    assert problem.fix


def test_route_must_be_a_list_of_mappings() -> None:
    assert only(minimal(route={"source-table": "a.b"}), "route").message == (  # type: ignore[arg-type]
        "must be a list of route rules")
    assert only(minimal(route=["a.b"]), "route[0]").message == "must be a mapping of options"


def test_route_into_an_internal_topic() -> None:
    doc = minimal(pipeline={"name": "p"},
                  route=[{"source-table": "a.b", "sink-table": "ok"},
                         {"source-table": "a.c", "sink-table": "cdc-ingest.p.changelog"}])
    problem = only(doc, "route[1].sink-table")
    assert problem.message == "is the pipeline's changelog.topic; rows would corrupt it"


def test_internal_topics_must_differ() -> None:
    doc = minimal(pipeline={"changelog.topic": "x", "offsets.topic": "x"})
    only(doc, "pipeline.offsets.topic")


def test_section_that_is_not_a_mapping() -> None:
    doc = minimal()
    doc["sink"] = "upsert-kafka"
    assert only(doc, "sink").message == "must be a mapping of options"


@pytest.mark.parametrize("text", ["", "just text", "- a\n- b\n"])
def test_document_that_is_not_a_mapping(text: str) -> None:
    problem = only(text, "<string>")
    assert problem.message == "is not a pipeline definition (a mapping of sections)"


def test_yaml_syntax_error_has_line_and_column() -> None:
    text = "source:\n  type: mysql\n  password: 'hunter2\nsink: {}\n"
    problem = only(text, "<string>")
    assert problem.message.startswith("YAML syntax error at line ")
    assert ", column " in problem.message
    assert "hunter2" not in problem.message


def test_yaml_bad_indentation_reports_the_line() -> None:
    text = "source:\n  type: mysql\n hostname: x\n"
    problem = only(text, "<string>")
    assert "line 3" in problem.message


def test_duplicate_options_are_refused() -> None:
    text = "source:\n  port: 1\n  port: 2\nsink: {}\n"
    problem = only(text, "line 3")
    assert problem.message == "the option 'port' appears twice (first at line 2)"


def test_many_problems_reported_at_once() -> None:
    doc = minimal(
        source={"hostnme": "x", "port": "abc", "scan.startup.mode": "nope"},
        sink={"value.format": "avro"},
        pipeline={"parallelism": 0, "name": ""},
        route=[{"source-table": "a.b", "sink-table": "ok"}, {"source-table": "a.(b"}],
    )
    doc["extra"] = 1
    found = problems_of(doc)
    assert set(found) == {
        "extra", "source.hostnme", "source.port", "source.scan.startup.mode",
        "sink.value.format", "pipeline.parallelism", "pipeline.name",
        "route[1].source-table", "route[1].sink-table",
    }


def test_config_error_text_lists_every_problem_with_fix() -> None:
    doc = minimal(source={"port": "abc", "hostnme": "x"})
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(yaml.safe_dump(doc), {})
    text = str(caught.value)
    assert text.startswith("the pipeline definition has 2 problems:")
    assert "  - source.port: must be a whole number (fix: " in text
    assert caught.value.exit_code == 2


def test_errors_never_echo_values() -> None:
    doc = minimal(source={"port": "secret-port-value", "password": ["secret-list-value"],
                          "server-id": "secret-id-value"},
                  sink={"sink.buffer-flush.interval": "secret-duration-value"})
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(yaml.safe_dump(doc), {})
    assert "secret" not in str(caught.value)


def test_every_schema_change_behavior_is_taken() -> None:
    for value in ("EXCEPTION", "evolve", "try_evolve", "ignore", "Lenient"):
        parse_pipeline(yaml.safe_dump(minimal(pipeline={"schema.change.behavior": value})),
                       {})
    problem = only(minimal(pipeline={"schema.change.behavior": "skip"}),
                   "pipeline.schema.change.behavior")
    assert "try_evolve" in problem.fix


def test_the_schema_topic_differs_from_the_other_internal_topics() -> None:
    doc = minimal(pipeline={"name": "p", "schema.topic": "cdc-ingest.p.offsets"})
    problem = only(doc, "pipeline.schema.topic")
    assert "offsets.topic" in problem.message


def test_flink_options_without_effect_here_are_accepted_each_with_why() -> None:
    doc = minimal(source={"debezium.snapshot.mode": "never", "connection.pool.size": 20,
                          "schema-change.enabled": True, "server-time-zone": "UTC",
                          "scan.incremental.snapshot.chunk.key-column": "id",
                          "scan.incremental.snapshot.backfill.skip": True},
                  pipeline={"local-time-zone": "Asia/Shanghai"})
    defn = parse_pipeline(yaml.safe_dump(doc), {})
    assert sorted(w.split(":")[0] for w in defn.warnings) == [
        "pipeline.local-time-zone", "source.connection.pool.size",
        "source.debezium.snapshot.mode", "source.scan.incremental.snapshot.backfill.skip",
        "source.scan.incremental.snapshot.chunk.key-column", "source.schema-change.enabled",
        "source.server-time-zone"]
    assert all(("ignored, " in w or "accepted, but" in w) and len(w) > 60
               for w in defn.warnings)
    # Connector/J properties: those without effect warn, a misspelt TLS one is refused
    defn = parse_pipeline(yaml.safe_dump(minimal(source={
        "jdbc.properties.serverTimezone": "UTC", "jdbc.properties.useSSL": True})), {})
    assert [w.split(":")[0] for w in defn.warnings] == ["source.jdbc.properties.serverTimezone"]
    found = problems_of(minimal(source={"jdbc.properties.sslmode": "REQUIRED",
                                        "jdbc.properties.tlsVersions": "TLSv1.1",
                                        "jdbc.properties.trustCertificateKeyStoreUrl": "http://a"}))
    assert found["source.jdbc.properties.sslmode"].fix.startswith("did you mean 'sslMode'?")
    assert "trustCertificateKeyStoreUrl" in found["source.jdbc.properties.sslmode"].fix
    assert "TLSv1.1" in found["source.jdbc.properties.tlsVersions"].message
    assert "local file" in found["source.jdbc.properties.trustCertificateKeyStoreUrl"].message


def test_kafka_sink_problems_come_all_at_once() -> None:
    found = problems_of(minimal(sink={
        "type": "kafka", "value.format": "avro", "partition.strategy": "round-robin",
        "sink.tableId-to-topic.mapping": "shop.a:t1;shop.b",
        "debezium-json.include-schema.enabled": "maybe", "sink.dead-letter.topic": "dlq",
        "debezium-json.timestamp-format.standard": "RFC-3339"}))
    assert set(found) == {
        "sink.value.format", "sink.partition.strategy", "sink.sink.tableId-to-topic.mapping",
        "sink.debezium-json.include-schema.enabled", "sink.sink.dead-letter.topic",
        "sink.debezium-json.timestamp-format.standard"}
    assert "debezium-json, canal-json" in found["sink.value.format"].fix
    assert "'shop.b'" in found["sink.sink.tableId-to-topic.mapping"].message
    assert "'ISO-8601'" in found["sink.debezium-json.timestamp-format.standard"].fix


def test_typed_event_options_are_checked_against_the_format_and_transforms() -> None:
    found = problems_of(minimal(sink={
        "type": "kafka", "value.format": "canal-json",
        "debezium-json.include-schema.enabled": True,
        "debezium-json.timestamp-format.standard": "ISO-8601"}))
    assert set(found) == {"sink.debezium-json.include-schema.enabled",
                          "sink.debezium-json.timestamp-format.standard"}
    assert "value.format debezium-json only" in found[
        "sink.debezium-json.include-schema.enabled"].message
    doc = minimal(sink={"type": "kafka", "debezium-json.include-schema.enabled": True})
    doc["transform"] = [{"source-table": "shop.a", "projection": "id, UPPER(name) AS n"},
                        {"source-table": "shop.b", "filter": "id > 1"}]
    found = problems_of(doc)
    assert list(found) == ["transform[0].projection"], found
    assert "remove the projection" in found["transform[0].projection"].fix
    doc["transform"] = doc["transform"][1:]
    defn = parse_pipeline(yaml.safe_dump(doc), {})
    assert defn.sink.typed  # type: ignore[union-attr]


def test_transaction_metadata_needs_exactly_once_and_no_buffering() -> None:
    problem = only(minimal(sink={"sink.transaction-metadata.topic": "tx"}),
                   "sink.sink.transaction-metadata.topic")
    assert "needs sink.delivery-guarantee: exactly-once" in problem.message
    assert problem.fix.startswith("set sink.delivery-guarantee: exactly-once")
    buffered = only(minimal(sink={"sink.transaction-metadata.topic": "tx",
                                  "sink.delivery-guarantee": "exactly-once",
                                  "sink.buffer-flush.max-rows": 10,
                                  "sink.buffer-flush.interval": "1s"}),
                    "sink.sink.transaction-metadata.topic")
    assert "sink.buffer-flush" in buffered.message
    for sink_type in ("upsert-kafka", "kafka"):
        doc = minimal(sink={"type": sink_type, "sink.transaction-metadata.topic": "tx",
                            "sink.delivery-guarantee": "exactly-once"})
        assert parse_pipeline(yaml.safe_dump(doc), {}).sink.sink_transaction_metadata_topic \
            == "tx"
