"""Where a pipeline's sink writes, from its definition alone (no I/O): each captured table's
sink topics, and the transaction metadata topic that a reader of whole transactions reads
(``cdc-ingest verify``, ``cdc-ingest watch``, the transaction reader for a pipeline file)."""

from __future__ import annotations

from cdc_ingest.config.definition import PipelineDef
from cdc_ingest.config.kafka_sink import KafkaSinkDef
from cdc_ingest.errors import ConfigError, ConfigProblem
from cdc_ingest.formats.event_routing import EventAddress

METADATA_OPTION = "sink.transaction-metadata.topic"


def topics_of(defn: PipelineDef, tables: list[tuple[str, str]]) -> dict[str, list[str]]:
    """Sink topic -> the captured tables (``db.table``) routed to it, in table order."""
    router = defn.router()
    events = event_address(defn)
    topics: dict[str, list[str]] = {}
    for db, table in tables:
        names = (router.sink_topics(db, table) if events is None
                 else events.route(db, table)[0])
        for topic in names:
            topics.setdefault(topic, []).append(f"{db}.{table}")
    return topics


def event_address(defn: PipelineDef) -> EventAddress | None:
    """``sink.type: kafka``: what spells the change events' keys; None for upsert-kafka."""
    if not isinstance(defn.sink, KafkaSinkDef):
        return None
    return EventAddress(defn.router(), defn.sink.event_options(), False)


def transaction_metadata_topic(defn: PipelineDef) -> str:
    """The pipeline's transaction metadata topic; a ConfigError (exit 2) naming the option
    when the pipeline does not set it."""
    topic = defn.sink.sink_transaction_metadata_topic
    if not topic:
        raise ConfigError(ConfigProblem(
            METADATA_OPTION, "is not set, so the sink writes no transaction metadata and whole "
            "transactions cannot be read",
            f"add '{METADATA_OPTION}: <topic>' to the sink block (with "
            "sink.delivery-guarantee: exactly-once, the default) and run the sink with it"))
    return str(topic)
