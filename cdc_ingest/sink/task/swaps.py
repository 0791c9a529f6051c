"""A swap (``RENAME TABLE t TO t_old, t_new TO t``) without a needless rewrite of ``t``.

Capture writes ``swap`` at the statement and, once the table now named ``t`` is snapshotted,
``swap-end`` after its last row (both into every changelog partition, capture/table_ddl.py
and capture/snapshot/phase.py). With plain JSON upserts the sink keeps ``t``'s keys at
``swap``: the snapshot's rows overwrite those the new table has, in place, so a consumer
never sees a key of a row that was never deleted disappear. At ``swap-end`` the task of
changelog partition ``p`` reads ``p`` back from the ``swap`` record to the ``swap-end``
record (the records the swap's snapshot wrote there: nothing else of ``t`` comes between) and
tombstones the keys of ``t`` live in its topics that hash to ``p`` and that no such record
wrote: the old table's rows the new one does not have. Done in the transaction of the
``swap-end`` record's offset, it is exact across kills as any reset is
(sink/task/table_resets.py). Other formats (Avro, change events) cannot compare the
topic's keys with the changelog's by their bytes: for them ``swap`` empties ``t`` as a
rename does and ``swap-end`` does nothing.
"""

from __future__ import annotations

import logging

import orjson

from cdc_ingest.errors import SinkError
from cdc_ingest.formats.jackson import jackson_json
from cdc_ingest.formats.upsert_json import Serde, SinkMessage, SinkSerde
from cdc_ingest.kafka.consumer import read_topic
from cdc_ingest.kafka.ranges import offset_for_time, read_range
from cdc_ingest.model.changelog import SWAP, DdlRecord, decode_record
from cdc_ingest.sink.settings import SinkSettings
from cdc_ingest.sink.task.table_resets import (
    RESET_READ_TIMEOUT_S,
    changelog_spelling,
    live_keys,
    reset_messages,
)

log = logging.getLogger(__name__)

STALL_S = 120.0


def by_bytes(serde: Serde) -> bool:
    """Whether the topic's keys are the changelog's key bytes (plain JSON upserts)."""
    return type(serde) is SinkSerde


def swap_messages(settings: SinkSettings, serde: Serde, changelog_partitions: int,
                  partition: int, ddl: DdlRecord, ts_ms: int) -> list[SinkMessage]:
    """At ``swap``: nothing for plain JSON upserts; elsewhere the rename's tombstones."""
    if not by_bytes(serde):
        return reset_messages(settings, serde, changelog_partitions, partition, ddl, ts_ms)
    log.info("swap of %s.%s at binlog %s: its keys kept until the table now under the name "
             "is written (changelog partition %d)", ddl.db, ddl.table, ddl.pos, partition)
    return []


def swap_end_messages(settings: SinkSettings, serde: Serde, changelog_partitions: int,
                      partition: int, ddl: DdlRecord, ts_ms: int, offset: int
                      ) -> list[SinkMessage]:
    """At ``swap-end`` (changelog ``offset``, its record's timestamp ``ts_ms``, the swap's):
    tombstones for the table's live keys of this partition its snapshot did not write."""
    if not by_bytes(serde):
        return []
    written = _written(settings, partition, ddl, ts_ms, offset)
    if getattr(serde, "_jackson", False):
        written = {jackson_json(k) for k in written}
    topics, headers, name = serde.route(ddl.db, ddl.table)
    out: list[SinkMessage] = []
    for topic in topics:
        messages = read_topic(settings.kafka, topic, RESET_READ_TIMEOUT_S, settled=True)
        exclusive = not settings.router.rules and topic == name
        keys = live_keys(messages, ddl, changelog_partitions, partition, exclusive,
                         changelog_spelling(settings, ddl))
        out.extend((topic, key, None, headers, ts_ms, name) for key in keys
                   if key not in written)
    log.info("swap of %s.%s at binlog %s: the table now under the name is written (%d keys "
             "in changelog partition %d); %d key(s) it does not have tombstoned",
             ddl.db, ddl.table, ddl.pos, len(written), partition, len(out))
    return out


def _written(settings: SinkSettings, partition: int, ddl: DdlRecord, ts_ms: int,
             offset: int) -> set[bytes]:
    """The keys of ``ddl``'s table the records between its ``swap`` record and ``offset``
    carry in changelog ``partition``."""
    topic = settings.changelog_topic
    start = offset_for_time(settings.kafka, topic, partition, ts_ms, offset)
    found, written = False, set()
    for _offsets, keys, values in read_range(settings.kafka, topic, partition, start, offset,
                                            STALL_S):
        for key, value in zip(keys, values, strict=True):
            if not found:
                found = key is None and _is_swap(value, ddl)
                continue
            if key is not None:
                row = decode_record(value)  # db and table; the row stays raw text
                if row.db == ddl.db and row.table == ddl.table:
                    written.add(key)
    if not found:
        raise SinkError(
            f"swap of {ddl.db}.{ddl.table} at binlog {ddl.pos}: its swap record is not in "
            f"{topic} partition {partition} before offset {offset} (deleted by retention?), "
            "so the keys its snapshot wrote cannot be told. Fix: snapshot the table again "
            f"(cdc-ingest snapshot {ddl.db}.{ddl.table}) once the sink runs past it, after "
            "raising the changelog topic's retention.ms")
    return written


def _is_swap(value: bytes, ddl: DdlRecord) -> bool:
    record = orjson.loads(value)
    return (record.get("op") == "DDL" and record.get("action") == SWAP
            and (record.get("db"), record.get("table"), record.get("pos"))
            == (ddl.db, ddl.table, ddl.pos))
