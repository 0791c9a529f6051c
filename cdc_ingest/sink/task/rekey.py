"""The sink's half of re-keying a table in place (capture/rekey.py).

At a ``rekey-cut`` record in changelog partition ``p``, the task of ``p`` writes ONE
transaction holding a tombstone for every key of the table live in its sink topics and the
table's rows under its new key, which capture wrote into ``p`` between the cut and the
``rekey-end`` record. Every live key is an old key: capture wrote the cut only once every
task had passed the table's ``rekey`` record (so each old key's last change is written), and
wrote no other record of the table since. The rows are read straight from the changelog
partition, not from the micro-batch (the end is usually not in it yet: the task waits for it
while capture reads the table), and the transaction commits the offset after the end, so no
task writes them again. A read_committed reader of a sink topic sees the table's old
messages or its new ones, never both and never neither.

The transaction must commit within ``transaction.timeout.ms``: a table of millions of rows
needs it raised (docs/operations.md).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

from cdc_ingest.formats.upsert_json import Serde, SinkMessage
from cdc_ingest.kafka.consumer import follow_partition
from cdc_ingest.model.changelog import REKEY_END, DdlRecord, decode_ddl
from cdc_ingest.sink.settings import SinkSettings
from cdc_ingest.sink.task.table_resets import tombstones

log = logging.getLogger(__name__)

SLICE_ROWS = 10_000  # rows handed to the producer at a time, all in the one transaction
WAIT_LOG_S = 60.0


class Cutover:
    """The cutover of a re-keyed table; construct it once the chunk before is committed
    (it waits for the end record, then reads the table's old keys back)."""

    def __init__(self, settings: SinkSettings, serde: Serde, partition: int, cut: int,
                 ddl: DdlRecord, ts_ms: int) -> None:
        self._settings = settings
        self._serde = serde
        self._partition = partition
        self._cut = cut
        self._ddl = ddl
        self._ts_ms = ts_ms
        self.last = self._end()  # the rekey-end record's offset
        self._tombstones = tombstones(settings, serde, ddl, ts_ms, 0, None)  # all: old keys

    def parts(self) -> Iterator[list[SinkMessage]]:
        """The tombstones, then the rows under the new key, in slices; one transaction.
        The first row's messages are built before anything is yielded, so whatever they
        need first (an Avro key schema registered, formats/upsert_avro.py) is there, or has
        failed, before a tombstone is sent: with at-least-once there is no transaction to
        take the tombstones back."""
        self._first_row()
        yield self._tombstones
        rows = 0
        out: list[SinkMessage] = []
        for msg in follow_partition(self._settings.kafka, self._settings.changelog_topic,
                                    self._partition, self._cut + 1):
            if msg is None:
                continue
            if msg.offset >= self.last:
                break
            if msg.key is None or msg.value is None:
                continue  # no DDL record is written between the cut and the end
            self._serde.add(out, msg.key, msg.value)
            rows += 1
            if len(out) >= SLICE_ROWS:
                yield out
                out = []
        yield out
        ddl = self._ddl
        log.info("re-key of %s.%s at binlog %s: %d old key(s) tombstoned and %d row(s) "
                 "under the new key written in one transaction (changelog partition %d, "
                 "offsets %d..%d)", ddl.db, ddl.table, ddl.pos, len(self._tombstones), rows,
                 self._partition, self._cut, self.last)

    def _first_row(self) -> None:
        for msg in follow_partition(self._settings.kafka, self._settings.changelog_topic,
                                    self._partition, self._cut + 1):
            if msg is None:
                continue
            if msg.offset >= self.last:
                return
            if msg.key is not None and msg.value is not None:
                self._serde.add([], msg.key, msg.value)
                return

    def _end(self) -> int:
        """The offset of the table's rekey-end record, once capture has committed it."""
        ddl, settings = self._ddl, self._settings
        began = logged = time.monotonic()
        for msg in follow_partition(settings.kafka, settings.changelog_topic, self._partition,
                                    self._cut + 1):
            if msg is None:
                if time.monotonic() - logged >= WAIT_LOG_S:
                    logged = time.monotonic()
                    log.warning("re-key of %s.%s: waiting %.0fs so far for capture to finish "
                                "reading the table under its new key (changelog partition %d "
                                "from offset %d)", ddl.db, ddl.table, logged - began,
                                self._partition, self._cut)
                continue
            if msg.key is None and msg.value is not None:
                end = decode_ddl(msg.value)
                if end.action == REKEY_END and (end.db, end.table) == (ddl.db, ddl.table):
                    return msg.offset
        raise AssertionError("unreachable: follow_partition never ends")
