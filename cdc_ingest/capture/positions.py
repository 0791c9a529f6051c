"""The committed capture position, kept in the pipeline's compacted offsets topic."""

from __future__ import annotations

from typing import Any

from cdc_ingest.kafka import read_topic
from cdc_ingest.model import Position
from cdc_ingest.model.table_stats import parse, table_of

SOURCE_KEY = b'{"source":"mysql"}'


class PositionStore:
    def __init__(self, kafka: dict[str, Any], topic: str) -> None:
        self._kafka = kafka
        self.topic = topic
        self.resumed = False  # whether load() found a committed position
        # each table's committed totals (cdc_ingest/model/table_stats.py), read by load()
        self.table_totals: dict[str, dict[str, int]] = {}

    def load(self) -> Position | None:
        """The last committed position (read_committed), or None on a first start; the
        tables' totals into :attr:`table_totals` on the way."""
        last: bytes | None = None
        totals: dict[str, dict[str, int]] = {}
        for msg in read_topic(self._kafka, self.topic):
            if msg.key == SOURCE_KEY and msg.value is not None:
                last = msg.value
            elif msg.value is not None and (table := table_of(msg.key)) is not None:
                totals[table] = parse(msg.value)
        self.resumed = last is not None
        self.table_totals = totals
        return Position.from_json(last) if last is not None else None

    @staticmethod
    def record(position: Position) -> tuple[bytes, bytes]:
        """The offsets topic's record of ``position``: (key, value). Written last in each of
        capture's Kafka transactions (capture/transaction.py)."""
        return SOURCE_KEY, position.to_json()
