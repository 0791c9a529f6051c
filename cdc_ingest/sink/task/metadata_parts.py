"""A sink task's share of the transaction metadata (docs/output-contract.md, "Transaction
metadata"): the ``transaction.*`` headers of each message, and one *part* record per sink
transaction saying what it wrote for which MySQL transaction.

Capture gives each row record of a MySQL transaction its id and row number (``pos``:
``<id>#<n>``) and its number within its table (``table_delta``), and writes a ``TX`` record
into every changelog partition after the transaction's last row (capture/metadata_marks.py). A
task turns each row's messages' headers into ``headers + transaction.*``; when it commits a
chunk it adds, in the same Kafka transaction as the messages and the consumed offsets, a part
record: per MySQL transaction, the messages written per sink topic, and whether this
partition's ``TX`` record was passed. Exactly once like the messages: an aborted attempt's
part is never read, a committed one never written again. The driver adds the parts up and
writes BEGIN and END once every partition has passed the ``TX`` record
(sink/driver/metadata_writer.py). The headers and records are spelled in
model/transaction_metadata.py.
"""

from __future__ import annotations

from typing import Any

from cdc_ingest.formats.upsert_json import SinkMessage
from cdc_ingest.model.transaction_metadata import (
    ID_HEADER,
    PartEntry,
    decode_tx,
    part_values,
    tx_headers,
)


def with_tx_headers(messages: list[SinkMessage], first: int, value: bytes,
                    tally: TxTally | None = None, offset: int = -1) -> None:
    """Give ``messages[first:]`` (the messages of the row record at changelog ``offset``)
    the record's transaction headers, and note the record in ``tally``."""
    extra = tx_headers(value)
    if extra is None:
        return
    for i in range(first, len(messages)):
        topic, key, body, headers, ts, table = messages[i]
        messages[i] = (topic, key, body, [*(headers or ()), *extra], ts, table)
    if tally is not None:
        tally.row(extra, offset)


class TxTally:
    """What one sink transaction of a task wrote per MySQL transaction, in the order the
    transactions first appear (commit order: a partition holds a transaction's rows, then its
    ``TX`` record, then the next transaction's)."""

    def __init__(self, partition: int) -> None:
        self.partition = partition
        # id -> [messages per topic, partitions its TX record went to (0: not passed),
        #        commit time, the changelog offset of its last record seen here]
        self._entries: dict[str, list[Any]] = {}

    def _entry(self, tx_id: str) -> list[Any]:
        entry = self._entries.get(tx_id)
        if entry is None:
            entry = self._entries[tx_id] = [{}, 0, 0, -1]
        return entry

    def row(self, headers: list[tuple[str, bytes]], offset: int) -> None:
        """A row record of a MySQL transaction at changelog ``offset`` (its headers)."""
        self._entry(headers[0][1].decode())[3] = offset

    def marker(self, value: bytes, offset: int) -> None:
        """This partition's ``TX`` record of a transaction, at changelog ``offset``."""
        record = decode_tx(value)
        entry = self._entry(record.id)
        entry[1], entry[2], entry[3] = record.partitions, record.ts_ms, offset

    def count(self, messages: list[SinkMessage]) -> None:
        """Messages about to be sent (after ``sink.buffer-flush``): each one with a
        ``transaction.id`` counts for its transaction and topic."""
        for topic, _key, _value, headers, _ts, _table in messages:
            if headers and len(headers) >= 3 and headers[-3][0] == ID_HEADER:
                counts = self._entry(headers[-3][1].decode())[0]
                counts[topic] = counts.get(topic, 0) + 1

    def parts(self) -> list[bytes]:
        """The part records of what was tallied since the last call (none: nothing; at most
        :data:`~cdc_ingest.model.transaction_metadata.PART_ENTRIES` transactions each); the
        tally starts again."""
        entries, self._entries = list(self._entries.items()), {}
        rows: list[PartEntry] = [(tx_id, counts, partitions, ts, at)
                                 for tx_id, (counts, partitions, ts, at) in entries]
        return part_values(self.partition, rows)
