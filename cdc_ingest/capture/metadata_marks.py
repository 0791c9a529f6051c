"""What capture adds to the changelog for transaction metadata (``sink.transaction-metadata
.topic``; docs/output-contract.md, "Transaction metadata").

Per MySQL transaction that wrote rows of captured tables: each rows event's ``table_delta``
(a row's number among its transaction's changes of its own table is its row number plus
it), and at the transaction's end one ``TX`` record for every changelog partition, written
after its last row and before the position that passes it, in the same capture transaction.
The sink counts what it wrote per transaction and knows a transaction is whole once every
partition's task has passed its ``TX`` record (sink/task/metadata_parts.py).

Counting starts at the transaction's first rows event and is rebuilt when capture resumes
inside a transaction: the binlog is read again from the transaction's start (resume.py), so
every rows event passes here again, the ones whose rows an earlier run wrote too.
"""

from __future__ import annotations

from cdc_ingest.model.transaction_metadata import tx_value


class MetadataMarks:
    """The current MySQL transaction's per-table row counts and id (``on``: metadata is
    wanted; else every method does nothing)."""

    def __init__(self, on: bool, partitions: int) -> None:
        self.on = on
        self._partitions = partitions
        self._tables: dict[tuple[str, str], int] = {}
        self._id: str | None = None

    def begin(self) -> None:
        self._tables.clear()
        self._id = None

    def rows(self, tx_id: str, db: str, table: str, before_event: int,
             count: int) -> int | None:
        """A rows event of ``count`` rows of ``db.table``, the transaction's rows before it
        ``before_event``: its ``table_delta`` (None: metadata off)."""
        if not self.on:
            return None
        self._id = tx_id
        slot = (db, table)
        done = self._tables.get(slot, 0)
        self._tables[slot] = done + count
        return done - before_event

    def end(self, ts_ms: int) -> bytes | None:
        """The ``TX`` record of the transaction ending now, or None (metadata off, or no
        rows of a captured table in it)."""
        tx_id, self._id = self._id, None
        self._tables.clear()
        if tx_id is None:
            return None
        return tx_value(tx_id, self._partitions, ts_ms)
