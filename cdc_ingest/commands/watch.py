"""``cdc-ingest watch``: the sink topics' messages as they are committed, for a person."""

from __future__ import annotations

from collections.abc import Callable

from cdc_ingest.config import PipelineDef
from cdc_ingest.kafka import client_config
from cdc_ingest.kafka.consumer import Message, follow_topics
from cdc_ingest.mysql import connection_settings
from cdc_ingest.verify.mysql import MySqlSide
from cdc_ingest.verify.run import topics_of


def sink_topics(defn: PipelineDef) -> list[str]:
    """Every sink topic of the tables the pipeline captures now."""
    mysql = MySqlSide(connection_settings(defn.source), defn.source.connect_max_retries)
    try:
        return sorted(topics_of(defn, mysql.tables(defn.source.captures)))
    finally:
        mysql.close()


def line(m: Message) -> str:
    value = "null (tombstone: a delete)" if m.value is None else m.value.decode(
        errors="replace")
    key = m.key.decode(errors="replace") if m.key is not None else None
    headers = {k: v.decode(errors="replace") for k, v in m.headers}
    return f"{m.topic} p{m.partition}@{m.offset} key={key} value={value}" + (
        f" headers={headers}" if headers else "")


def watch_topics(defn: PipelineDef, topics: list[str], from_beginning: bool,
                 echo: Callable[[str], None]) -> None:
    chosen = topics or sink_topics(defn)
    if not chosen:
        echo("watch: the pipeline captures no table that exists in MySQL; nothing to follow")
        return
    since = "from the beginning" if from_beginning else "new messages"
    echo(f"following {', '.join(chosen)} ({since}; Ctrl-C stops)")
    try:
        for m in follow_topics(client_config(defn.sink.properties), chosen, from_beginning):
            echo(line(m))
    except KeyboardInterrupt:
        pass
