"""Readers of what a pipeline file's sink wrote: the sink topics of the tables it captures
now (``cdc-ingest watch``), and a :class:`~cdc_ingest.transactions.TransactionReader` of its
sink topics and transaction metadata topic (``watch --transactions``, and users' code).

Here, not in cdc_ingest.transactions: the reader depends on model/ and kafka/ only; reading
a pipeline file's topics takes the configuration and asks MySQL which tables it captures."""

from __future__ import annotations

from cdc_ingest.config import PipelineDef
from cdc_ingest.config.sink_topics import topics_of, transaction_metadata_topic
from cdc_ingest.mysql import connection_settings
from cdc_ingest.transactions import TransactionReader
from cdc_ingest.verify.mysql import MySqlSide


def captured_sink_topics(defn: PipelineDef) -> list[str]:
    """Every sink topic of the tables the pipeline captures now (asks MySQL which tables
    those are, as ``cdc-ingest watch`` and ``verify`` do)."""
    mysql = MySqlSide(connection_settings(defn.source), defn.source.connect_max_retries)
    try:
        return sorted(topics_of(defn, mysql.tables(defn.source.captures)))
    finally:
        mysql.close()


def transaction_reader(defn: PipelineDef, group_id: str | None = None,
                       topics: list[str] | None = None, *,
                       new_only: bool = False) -> TransactionReader:
    """A reader of ``defn``'s sink topics (``topics``, or every sink topic of the tables the
    pipeline captures now: this asks MySQL) and its metadata topic; a ConfigError naming
    ``sink.transaction-metadata.topic`` when the pipeline does not set it. ``group_id`` and
    ``new_only``: as :class:`~cdc_ingest.transactions.TransactionReader` has them."""
    metadata_topic = transaction_metadata_topic(defn)
    chosen = captured_sink_topics(defn) if topics is None else topics
    return TransactionReader(defn.kafka_config(), chosen, metadata_topic,
                             group_id, new_only=new_only)
