"""`cdc-ingest acls`: the ACLs a pipeline needs, from its definition and its tables. The
secured-Kafka test (tests/integration/test_secured_kafka.py) runs a pipeline holding exactly
these; here, what each kind of name comes out as."""

from __future__ import annotations

from pathlib import Path

from cdc_ingest.commands.acls import pipeline_acls, principal_of, render
from tests.unit.test_config import minimal, parse

TABLES = [("shop", "orders"), ("shop", "items"), ("app", "order_1"), ("app", "order_2")]


def _by_name(acls: list) -> dict[tuple[str, str], tuple[str, ...]]:
    return {(a.resource, a.name): (a.pattern, *a.operations) for a in acls}


def test_every_name_of_the_pipeline_sink_topics_and_routes() -> None:
    defn = parse(minimal(
        source={"tables": r"shop.\.*, app.order_[0-9]+"},
        sink={"properties.sasl.jaas.config":
              'org.apache.kafka.common.security.scram.ScramLoginModule required '
              'username="svc-cdc" password="x";',
              "sink.transaction-metadata.topic": "tx.meta",
              "sink.delivery-guarantee": "exactly-once"},
        pipeline={"name": "Shop Sync", "changelog.topic": "ops.changelog"},
        route=[{"source-table": r"app.order_[0-9]+", "sink-table": "app_orders"}]))
    got = _by_name(pipeline_acls(defn, TABLES))
    prefix = "cdc-ingest.shop-sync."
    assert defn.transactional_id_prefix + "." == prefix
    ops = ("Create", "Describe", "DescribeConfigs", "Read", "Write")
    assert got == {
        ("topic", prefix): ("prefixed", *ops),
        ("transactional-id", prefix): ("prefixed", "Describe", "Write"),
        ("group", prefix): ("prefixed", "Describe", "Read"),
        ("topic", "ops.changelog"): ("literal", *ops),  # not under the prefix: by name
        ("topic", "tx.meta"): ("literal", *ops),
        ("topic", "shop."): ("prefixed", *ops),  # <db>.<table> topics: new tables too
        ("topic", "app_orders"): ("literal", *ops),  # a route's topic
    }
    assert principal_of(defn) == "User:svc-cdc"
    text = render(pipeline_acls(defn, TABLES), principal_of(defn), "cdc-ingest.shop-sync")
    assert ("kafka-acls.sh --bootstrap-server \"$BOOTSTRAP\" --add --allow-principal "
            "'User:svc-cdc' --operation Describe --operation Write --transactional-id "
            "'cdc-ingest.shop-sync.' --resource-pattern-type prefixed") in text
    assert "x\";" not in text and "password" not in text


def test_a_certificate_login_names_no_principal() -> None:
    defn = parse(minimal(sink={"properties.security.protocol": "SSL"}))
    assert principal_of(defn) == "User:<principal>"


def test_the_example_in_operations_md_is_what_the_command_prints() -> None:
    text = (Path(__file__).parents[2] / "docs" / "operations.md").read_text()
    shown = text.split("<!-- acls example -->\n```sh\n", 1)[1].split("```\n", 1)[0]
    defn = parse(minimal(
        source={"tables": r"shop.\.*"},
        sink={"properties.bootstrap.servers": "kafka-1:9093",
              "properties.security.protocol": "SASL_SSL",
              "properties.sasl.mechanism": "SCRAM-SHA-512",
              "properties.sasl.jaas.config":
                  "org.apache.kafka.common.security.scram.ScramLoginModule required "
                  'username="cdc-shop" password="x";',
              "sink.delivery-guarantee": "exactly-once"},
        pipeline={"name": "shop"}))
    printed = render(pipeline_acls(defn, [("shop", "orders"), ("shop", "items")]),
                     principal_of(defn), defn.transactional_id_prefix)
    assert shown == printed.rstrip("\n") + "\n"
    assert "username=\"cdc-shop\"" in text  # the sink settings it says it is for
