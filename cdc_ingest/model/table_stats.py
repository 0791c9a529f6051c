"""What capture wrote per table, counted exactly: the offsets topic's ``stats`` records.

Capture counts, per source table, the row changes it wrote to the changelog (inserts,
updates, deletes), the DDL records and the snapshot rows, and writes each table's totals into
the pipeline's compacted offsets topic, key ``{"stats":"db.table"}``, in the same Kafka
transaction as the records counted and the position (capture/transaction.py): the totals are
exactly those of the committed changelog, across kills and restarts. A run resumes from the
totals it loads. ``status --tables`` and the metrics show them. Counted as capture writes
them (a key-changing UPDATE counts as one update), before the sink's routes and filters.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import orjson

FIELDS = ("inserts", "updates", "deletes", "ddls", "snapshot_rows")
BY_KIND = {"I": "inserts", "U": "updates", "D": "deletes"}  # a rows event's kind
_PREFIX = b'{"stats":'


def stats_key(table: str) -> bytes:
    return orjson.dumps({"stats": table})


def table_of(key: bytes | None) -> str | None:
    """The table a ``stats`` record's key names, or None for another key."""
    if key is None or not key.startswith(_PREFIX):
        return None
    name = orjson.loads(key).get("stats")
    return name if isinstance(name, str) else None


def parse(value: bytes) -> dict[str, int]:
    found = orjson.loads(value)
    return {f: int(found.get(f, 0)) for f in FIELDS}


@dataclass
class TableStats:
    """Committed totals per table plus the counts of the Kafka transaction still open."""

    totals: dict[str, dict[str, int]] = field(default_factory=dict)
    pending: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, table: str, what: str, count: int) -> None:
        if count:
            counts = self.pending.get(table)
            if counts is None:
                counts = self.pending[table] = dict.fromkeys(FIELDS, 0)
            counts[what] += count

    def records(self) -> list[tuple[bytes, bytes]]:
        """The ``stats`` records of the tables the open transaction counted: their totals
        once it commits."""
        out = []
        for table, counts in self.pending.items():
            before = self.totals.get(table, {})
            after = {f: before.get(f, 0) + counts[f] for f in FIELDS}
            out.append((stats_key(table), orjson.dumps(after)))
        return out

    def committed(self) -> dict[str, dict[str, int]]:
        """The open transaction committed: its counts join the totals; returns them."""
        done = self.pending
        for table, counts in done.items():
            before = self.totals.setdefault(table, dict.fromkeys(FIELDS, 0))
            for f in FIELDS:
                before[f] += counts[f]
        self.pending = {}
        return done

    def aborted(self) -> None:
        self.pending = {}
