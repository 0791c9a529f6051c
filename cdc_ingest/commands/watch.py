"""``cdc-ingest watch``: the sink topics' messages as they are committed, for a person."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson

from cdc_ingest.commands.pipeline_reader import captured_sink_topics
from cdc_ingest.config import PipelineDef
from cdc_ingest.config.sink_topics import transaction_metadata_topic
from cdc_ingest.kafka.consumer import Message
from cdc_ingest.kafka.follow import follow_topics
from cdc_ingest.mysql import connection_settings
from cdc_ingest.registry.avro_reader import AvroReader, shown
from cdc_ingest.transactions import Item, Standalone, TransactionReader, TxMessage
from cdc_ingest.verify.mysql import MySqlSide
from cdc_ingest.verify.run import avro_reader


def line(m: Message | TxMessage | Standalone, avro: AvroReader | None = None) -> str:
    """One message for a person; ``avro``: keys and values in avro-confluent, shown in the
    JSON form (as a json topic holds them)."""
    raw_key, raw_value = shown(avro, "key", m.key), shown(avro, "value", m.value)
    value = "null (tombstone: a delete)" if raw_value is None else raw_value.decode(
        errors="replace")
    key = raw_key.decode(errors="replace") if raw_key is not None else None
    headers = {k: v.decode(errors="replace") for k, v in m.headers}
    return f"{m.topic} p{m.partition}@{m.offset} key={key} value={value}" + (
        f" headers={headers}" if headers else "")


def _avro_reader(defn: PipelineDef, kafka: dict[str, Any]) -> AvroReader | None:
    mysql = MySqlSide(connection_settings(defn.source), defn.source.connect_max_retries)
    try:
        tables = mysql.tables(defn.source.captures)
        return avro_reader(defn, kafka, [mysql.shape(db, t, defn.key_columns_for(db, t))
                                         for db, t in tables])
    finally:
        mysql.close()


def watch_topics(defn: PipelineDef, topics: list[str], from_beginning: bool,
                 echo: Callable[[str], None]) -> None:
    chosen = topics or captured_sink_topics(defn)
    if not chosen:
        echo("watch: the pipeline captures no table that exists in MySQL; nothing to follow")
        return
    since = "from the beginning" if from_beginning else "new messages"
    kafka = defn.kafka_config()
    avro = _avro_reader(defn, kafka)
    messages = follow_topics(kafka, chosen, from_beginning)  # "new" starts here
    echo(f"following {', '.join(chosen)} ({since}; Ctrl-C stops)")
    try:
        for m in messages:
            echo(line(m, avro))
    except KeyboardInterrupt:
        pass
    finally:
        messages.close()


def block(item: Item, avro: AvroReader | None = None) -> str:
    """A whole transaction as a header line and its messages, or a standalone message's line."""
    if isinstance(item, Standalone):
        return line(item, avro)
    counts = ", ".join(f"{topic} {n}" for topic, n in item.data_collections.items())
    when = datetime.fromtimestamp(item.ts_ms / 1000, UTC).isoformat(timespec="milliseconds")
    noun = "message" if item.event_count == 1 else "messages"
    head = f"transaction {item.id} ({item.event_count} {noun}: {counts}) committed {when}"
    return "\n".join([head, *(f"  {line(m, avro)}" for m in item.messages)])


def watch_transactions(defn: PipelineDef, topics: list[str], from_beginning: bool,
                       echo: Callable[[str], None]) -> None:
    """``watch --transactions``: whole MySQL transactions, in commit order, as they are
    committed (cdc_ingest/transactions), and the messages of no transaction as they come."""
    metadata_topic = transaction_metadata_topic(defn)  # exit 2, naming the option, when unset
    chosen = topics or captured_sink_topics(defn)
    if not chosen:
        echo("watch: the pipeline captures no table that exists in MySQL; nothing to follow")
        return
    since = "from the beginning" if from_beginning else "new transactions"
    kafka = defn.kafka_config()
    avro = _avro_reader(defn, kafka)
    # "new" starts when the reader is made (its metadata topic's end): then say so
    reader = TransactionReader(kafka, chosen, metadata_topic, new_only=not from_beginning)
    echo(f"following whole transactions in {', '.join(chosen)} with {metadata_topic} "
         f"({since}; Ctrl-C stops)")
    try:
        for item in reader:
            echo(block(item, avro))
    except KeyboardInterrupt:
        pass
    finally:
        reader.close()


def notification_line(value: bytes | None) -> str:
    """A notification (capture/notifications.py) for a person: when, kind, type, snapshot
    id, then its additional data."""
    try:
        note = orjson.loads(value or b"")
        when = datetime.fromtimestamp(int(note["timestamp"]) / 1000, UTC)
        data = " ".join(f"{k}={v}" for k, v in note.get("additional_data", {}).items())
        return (f"{when.isoformat(timespec='milliseconds')} {note['aggregate_type']} "
                f"{note['type']} id={note['id']} {data}").rstrip()
    except (ValueError, KeyError, TypeError, AttributeError):
        return f"not a notification: {value!r}"


def watch_notifications(defn: PipelineDef, topics: list[str], from_beginning: bool,
                        echo: Callable[[str], None]) -> None:
    """``watch --notifications``: what capture says it is doing, as it commits it."""
    if topics:
        echo("watch --notifications follows the pipeline's notification topic only; "
             f"leave out {' '.join(topics)}")
        return
    topic = defn.notification_topic
    since = "from the beginning" if from_beginning else "new notifications"
    messages = follow_topics(defn.kafka_config(), [topic], from_beginning)
    echo(f"following {topic} ({since}; Ctrl-C stops)")
    try:
        for m in messages:
            echo(notification_line(m.value))
    except KeyboardInterrupt:
        pass
    finally:
        messages.close()
