"""A table emptied at the source (TRUNCATE, DROP TABLE, CREATE OR REPLACE): tombstones for
every key of it that its sink topics still hold (with ``sink.type: kafka``, a delete event
for every row whose last event is not one, formats/change_events.py).

Capture writes the DDL record into every changelog partition, in binlog order with the rows
around it. The task of changelog partition ``p`` is the only writer of the keys that hash to
``p`` (all changes of one key travel through one partition), so at the DDL record it commits
what came before, reads the table's sink topics back (read_committed), and tombstones the keys
of the table that are live there and hash to ``p``, in one transaction with the DDL record's
offset. Keys that hash to other partitions are the other tasks' to tombstone at the same
point of their own streams: per key, a change made before the statement is never written after
its tombstone, and one made after is never deleted by it.

A key is the table's when its last message says so in its ``schemaName``/``tableName``
headers, or, for messages without them, when the topic can hold no other table's keys (no
routes: the topic is ``<db>.<table>``). Otherwise the keys cannot be told apart and the task
stops with an error rather than guess.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from cdc_ingest.errors import SinkError
from cdc_ingest.formats.change_events import EventSerde
from cdc_ingest.formats.upsert_json import Serde, SinkMessage
from cdc_ingest.kafka.consumer import Message, read_topic
from cdc_ingest.kafka.partition import java_partition
from cdc_ingest.model.changelog import DdlRecord
from cdc_ingest.sink.settings import SinkSettings
from cdc_ingest.sink.task.event_resets import deletes

log = logging.getLogger(__name__)

# How long reading a sink topic back may wait for records or for other tasks' open
# transactions to be decided (they commit every sink.transaction max interval)
RESET_READ_TIMEOUT_S = 120.0


def reset_messages(settings: SinkSettings, serde: Serde, changelog_partitions: int,
                   partition: int, ddl: DdlRecord, ts_ms: int) -> list[SinkMessage]:
    """Tombstones for the keys of ``ddl``'s table that hash to changelog ``partition``."""
    out = tombstones(settings, serde, ddl, ts_ms, changelog_partitions, partition)
    topics, _, name = serde.route(ddl.db, ddl.table)
    log.info("%s of %s at binlog %s: %d key(s) tombstoned in %s (changelog partition %d)",
             ddl.action.upper(), name, ddl.pos, len(out), ", ".join(topics), partition)
    return out


def tombstones(settings: SinkSettings, serde: Serde, ddl: DdlRecord, ts_ms: int,
               changelog_partitions: int, partition: int | None) -> list[SinkMessage]:
    """A tombstone for every live key of ``ddl``'s table in each of its sink topics that
    hashes to changelog ``partition`` (None: every key), read back once settled."""
    topics, headers, name = serde.route(ddl.db, ddl.table)
    out: list[SinkMessage] = []
    for topic in topics:
        messages = read_topic(settings.kafka, topic, RESET_READ_TIMEOUT_S, settled=True)
        if isinstance(serde, EventSerde):  # change events: a delete event per live row
            out.extend(deletes(serde, topic, messages, ddl, ts_ms, changelog_partitions,
                               partition))
            continue
        exclusive = not settings.router.rules and topic == name
        keys = live_keys(messages, ddl, changelog_partitions, partition, exclusive)
        out.extend((topic, key, None, headers, ts_ms, name) for key in keys)
    return out


def live_keys(messages: Iterable[Message], ddl: DdlRecord, changelog_partitions: int,
              partition: int | None, exclusive: bool) -> list[bytes]:
    """Keys of ``ddl``'s table live in one topic's ``messages`` (offset order per key) that
    hash to changelog ``partition`` (None: every key). ``exclusive``: the topic holds no
    other table's keys."""
    owner = (ddl.db.encode(), ddl.table.encode())
    live: dict[bytes, bool] = {}
    for msg in messages:
        key = msg.key
        if key is None or (partition is not None
                           and java_partition(key, changelog_partitions) != partition):
            continue
        names = dict(msg.headers)
        table = (names.get("schemaName"), names.get("tableName"))
        if table == (None, None):
            if not exclusive:
                raise SinkError(
                    f"{ddl.action.upper()} of {ddl.db}.{ddl.table} at binlog {ddl.pos}: sink "
                    f"topic {msg.topic} can hold other tables' keys and its messages carry no "
                    "schemaName/tableName headers, so the keys of this table cannot be told "
                    "from theirs. Fix: set sink.add-tableId-to-header-enabled: true and rebuild "
                    "the topic (delete it and the pipeline state, start with "
                    f"scan.startup.mode: initial), or route {ddl.db}.{ddl.table} to a topic of "
                    "its own"
                )
            table = owner
        live[key] = table == owner and msg.value is not None
    return [key for key, alive in live.items() if alive]
