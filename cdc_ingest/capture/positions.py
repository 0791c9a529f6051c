"""The committed capture position, kept in the pipeline's compacted offsets topic."""

from __future__ import annotations

from typing import Any

from cdc_ingest.kafka import TransactionalProducer, read_topic
from cdc_ingest.model import Position

SOURCE_KEY = b'{"source":"mysql"}'


class PositionStore:
    def __init__(self, kafka: dict[str, Any], topic: str) -> None:
        self._kafka = kafka
        self._topic = topic
        self.resumed = False  # whether load() found a committed position

    def load(self) -> Position | None:
        """The last committed position (read_committed), or None on a first start."""
        last: bytes | None = None
        for msg in read_topic(self._kafka, self._topic):
            if msg.key == SOURCE_KEY and msg.value is not None:
                last = msg.value
        self.resumed = last is not None
        return Position.from_json(last) if last is not None else None

    def produce(self, producer: TransactionalProducer, position: Position) -> None:
        producer.send(self._topic, position.to_json(), SOURCE_KEY)
