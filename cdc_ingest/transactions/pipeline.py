"""What a pipeline definition says the transaction reader reads: its sink topics and its
transaction metadata topic."""

from __future__ import annotations

from typing import Any

from cdc_ingest.config import PipelineDef
from cdc_ingest.errors import ConfigError, ConfigProblem
from cdc_ingest.kafka import client_config
from cdc_ingest.mysql import connection_settings
from cdc_ingest.verify.mysql import MySqlSide
from cdc_ingest.verify.run import topics_of

OPTION = "sink.transaction-metadata.topic"


def metadata_topic_of(defn: PipelineDef) -> str:
    """The pipeline's transaction metadata topic; a ConfigError (exit 2) naming the option
    when the pipeline does not set it."""
    topic = getattr(defn.sink, "sink_transaction_metadata_topic", None)
    if not topic:
        raise ConfigError(ConfigProblem(
            OPTION, "is not set, so the sink writes no transaction metadata and whole "
            "transactions cannot be read",
            f"add '{OPTION}: <topic>' to the sink block (with sink.delivery-guarantee: "
            "exactly-once, the default) and run the sink with it"))
    return str(topic)


def sink_topics_of(defn: PipelineDef) -> list[str]:
    """Every sink topic of the tables the pipeline captures now (asks MySQL which tables
    those are, as ``cdc-ingest watch`` and ``verify`` do)."""
    mysql = MySqlSide(connection_settings(defn.source), defn.source.connect_max_retries)
    try:
        return sorted(topics_of(defn, mysql.tables(defn.source.captures)))
    finally:
        mysql.close()


def kafka_config_of(defn: PipelineDef) -> dict[str, Any]:
    return client_config(defn.sink.properties)
