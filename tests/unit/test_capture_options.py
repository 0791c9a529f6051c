"""Pipeline definition -> capture options: names, startup, and no secrets in repr."""

import pytest

from cdc_ingest.capture.options import capture_options
from cdc_ingest.config import parse_pipeline

YAML = """
source:
  type: mysql
  hostname: db
  username: cdc
  password: ${PW}
  tables: shop.\\.*
  server-id: 5401
  scan.startup.mode: {mode}
sink:
  type: upsert-kafka
  properties.bootstrap.servers: k:9092
  properties.sasl.password: ${KPW}
pipeline:
  name: shop
  parallelism: 3
"""

ENV = {"PW": "s3cret-mysql", "KPW": "s3cret-kafka"}


def test_options_follow_the_definition_and_hide_secrets() -> None:
    options = capture_options(parse_pipeline(YAML.replace("{mode}", "latest-offset"), ENV))
    assert options.transactional_id == "cdc-ingest.shop.capture"
    assert (options.changelog_topic, options.offsets_topic) == (
        "cdc-ingest.shop.changelog", "cdc-ingest.shop.offsets")
    assert options.partitions == 3 and options.server_id == 5401
    assert options.captured("shop", "orders") and not options.captured("app", "orders")
    assert options.kafka["sasl.password"] == "s3cret-kafka"  # the client gets it
    text = repr(options)
    assert "s3cret" not in text and "s3cret" not in str(options.connection)


@pytest.mark.parametrize("mode", ["initial", "snapshot"])
def test_snapshot_modes_read_chunks_with_the_next_server_id(mode: str) -> None:
    options = capture_options(parse_pipeline(YAML.replace("{mode}", mode), ENV))
    assert options.startup.mode == mode
    assert options.snapshot_server_id == 5402 and options.chunk_size == 8096


def test_default_startup_mode_is_initial() -> None:
    text = YAML.replace("  scan.startup.mode: {mode}\n", "")
    assert capture_options(parse_pipeline(text, ENV)).startup.mode == "initial"
