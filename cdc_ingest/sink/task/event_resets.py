"""``sink.type: kafka``: the delete events that empty a table in its topics (TRUNCATE, DROP,
CREATE OR REPLACE, the old keys of a re-key), as sink/task/table_resets.py does with tombstones for
upsert topics: one per row whose last change event is not a delete. A change-event topic
keeps every event, so this is what tells its readers the rows are gone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import orjson

from cdc_ingest.errors import SinkError
from cdc_ingest.formats.change_events import EventSerde
from cdc_ingest.formats.event_readback import decode_event, row_image, schema_of
from cdc_ingest.formats.event_routing import Target, exclusive
from cdc_ingest.formats.event_values import decode_columns
from cdc_ingest.formats.upsert_json import SinkMessage
from cdc_ingest.kafka.consumer import Message
from cdc_ingest.kafka.partition import java_partition
from cdc_ingest.model.changelog import DdlRecord, older_capture


def deletes(serde: EventSerde, topic: str, messages: Iterable[Message], ddl: DdlRecord,
            ts_ms: int, changelog_partitions: int, partition: int | None) -> list[SinkMessage]:
    """A delete event for every row of ``ddl``'s table live in ``topic`` (its last event is
    not a delete) whose changelog key hashes to changelog ``partition`` (None: every row)."""
    name = f"{ddl.db}.{ddl.table}"
    out: list[SinkMessage] = []
    messages = list(messages)  # once per table id the table has in this topic
    for target in serde.targets(ddl.db, ddl.table):
        if target.topic != topic:
            continue
        if not exclusive(serde.router, ddl.db, ddl.table, target.table_id):
            raise SinkError(
                f"{ddl.action.upper()} of {name} at binlog {ddl.pos}: its events carry "
                f"table id {target.table_id}, which a route gives other tables too, so "
                "the rows of this table cannot be told from theirs. Fix: route "
                f"{name} by a source-table that names it alone")
        stamps = serde.table_timestamps(ddl.db, ddl.table)
        for key, image, names, schema in _live(serde, target, messages):
            if partition is not None and _owner(ddl, image, changelog_partitions,
                                                     names, stamps) != partition:
                continue
            pk_names = orjson.dumps(names or ddl.key or [])
            # the delete carries the schema its row was written with
            value = serde.value(target, "-D", b"{}", image, b"null", pk_names, schema)
            out.append((topic, key, value, target.headers, ts_ms, name))
    return out


def _live(serde: EventSerde, target: Target, messages: Iterable[Message]
          ) -> list[tuple[bytes, bytes, list[str], bytes | None]]:
    """(key, last row image, key column names, schema block) of each live row of
    ``target``."""
    head = target.key_head
    live: dict[bytes, tuple[bytes, list[str], bytes | None] | None] = {}
    for msg in messages:
        key = msg.key
        if key is None or not key.startswith(head):
            continue
        rest = key[len(head):len(head) + 1]
        if rest not in (b",", b"}", b""):
            continue  # another table id that starts with this one
        image = row_image(msg.value)
        if image is None:
            live[key] = None
        else:
            names = decode_event(msg.value or b"{}").pkNames if serde.canal else None
            live[key] = (image, names or [], schema_of(msg.value))
    return [(k, *v) for k, v in live.items() if v is not None]


_ISO = re.compile(rb'^"\d{4,}-\d\d-\d\dT\d\d:')


def _as_captured(value: bytes, stamp: bool) -> bytes:
    """A key value as the changelog key holds it (an ISO-8601 timestamp with its space)."""
    if stamp and _ISO.match(value):
        return value.replace(b"T", b" ", 1)
    return value


def _owner(ddl: DdlRecord, image: bytes, partitions: int, names: list[str],
           stamps: frozenset[bytes]) -> int:
    """The changelog partition of the row: murmur2 of its changelog key (``stamps``: its
    timestamp columns, written in ISO-8601 but keyed as captured)."""
    key_names = ddl.key or names
    if not key_names:
        raise SinkError(older_capture(
            f"the {ddl.action.upper()} record of {ddl.db}.{ddl.table} at binlog {ddl.pos}",
            "key", "a delete event for each of the table's rows (its key columns)"))
    columns = decode_columns(image)
    pk = orjson.dumps({n: orjson.Fragment(_as_captured(bytes(columns[n]), n.encode() in stamps))
                       for n in key_names})
    return java_partition(pk, partitions)
