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

The owner of a key is the task its changelog key hashes to, so a sink key spelled otherwise
is first spelled back as the changelog spells it (:func:`changelog_spelling`): an Avro key
read back through the registry into the JSON form (a DECIMAL beyond 38 digits, which Avro
holds as text, a number again, by the key classes the DDL record carries), a Jackson-spelled
key (``key.json.encoding: jackson``) back to orjson's escapes.

A key is the table's when its last message says so in its ``schemaName``/``tableName``
headers, or, for messages without them, when the topic can hold no other table's keys (no
routes: the topic is ``<db>.<table>``). Otherwise the keys cannot be told apart and the task
stops with an error rather than guess.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from cdc_ingest.errors import SinkError
from cdc_ingest.formats.change_events import EventSerde
from cdc_ingest.formats.jackson import orjson_spelling
from cdc_ingest.formats.upsert_json import Serde, SinkMessage
from cdc_ingest.kafka.consumer import Message, read_topic
from cdc_ingest.kafka.partition import java_partition
from cdc_ingest.model.changelog import DdlRecord, older_capture
from cdc_ingest.registry.avro_reader import AvroReader, AvroReadError
from cdc_ingest.sink.settings import SinkSettings, UpsertFormat
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
    # one reader of the keys' spelling for all of the table's topics (re-keys take every key)
    spelling = _same if partition is None else changelog_spelling(settings, ddl)
    for topic in topics:
        messages = read_topic(settings.kafka, topic, RESET_READ_TIMEOUT_S, settled=True)
        if isinstance(serde, EventSerde):  # change events: a delete event per live row
            out.extend(deletes(serde, topic, messages, ddl, ts_ms, changelog_partitions,
                               partition))
            continue
        exclusive = not settings.router.rules and topic == name
        keys = live_keys(messages, ddl, changelog_partitions, partition, exclusive, spelling)
        out.extend((topic, key, None, headers, ts_ms, name) for key in keys)
    return out


def _same(key: bytes) -> bytes:
    return key


def changelog_spelling(settings: SinkSettings, ddl: DdlRecord) -> Callable[[bytes], bytes]:
    """What turns a sink key of ``ddl``'s table back into its changelog key's bytes."""
    upsert = settings.format
    if not isinstance(upsert, UpsertFormat):
        return _same
    avro = upsert.avro
    if avro is None or avro.key is None:
        return orjson_spelling if upsert.jackson_keys else _same
    if ddl.key is None or ddl.classes is None:
        raise SinkError(older_capture(
            f"the {ddl.action.upper()} record of {ddl.db}.{ddl.table} at binlog {ddl.pos}",
            "classes", "telling which task owns each of the table's Avro keys"))
    table = (ddl.db, ddl.table)
    numbers = frozenset(name for name, kind in zip(ddl.key, ddl.classes, strict=False)
                        if kind.startswith("decimal:"))
    reader = AvroReader(avro.kafka, avro.schema_topic, avro.key, None, [table],
                        {table: numbers})

    def spelled(key: bytes) -> bytes:
        try:
            text = reader.key(key)
        except (AvroReadError, ValueError) as exc:
            raise SinkError(
                f"{ddl.action.upper()} of {ddl.db}.{ddl.table} at binlog {ddl.pos}: a key of "
                f"the table in its sink topic cannot be read back through the registry "
                f"({exc}), so the task that owns it cannot be told. Fix: make the registry "
                "and the schema topic reachable; a topic another writer shares needs a topic "
                "of its own") from None
        assert text is not None
        return text
    return spelled


def live_keys(messages: Iterable[Message], ddl: DdlRecord, changelog_partitions: int,
              partition: int | None, exclusive: bool,
              spelling: Callable[[bytes], bytes] = _same) -> list[bytes]:
    """Keys of ``ddl``'s table live in one topic's ``messages`` (offset order per key) whose
    changelog key (``spelling`` of the sink key) hashes to changelog ``partition`` (None:
    every key). ``exclusive``: the topic holds no other table's keys."""
    owner = (ddl.db.encode(), ddl.table.encode())
    live: dict[bytes, bool] = {}
    owned: dict[bytes, bool] = {}  # per key: whether this partition's task owns it
    for msg in messages:
        key = msg.key
        if key is None:
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
        if table != owner:
            live[key] = False
            continue
        if partition is not None:
            mine = owned.get(key)
            if mine is None:
                mine = owned[key] = java_partition(spelling(key),
                                                   changelog_partitions) == partition
            if not mine:
                continue
        live[key] = msg.value is not None
    return [key for key, alive in live.items() if alive]
