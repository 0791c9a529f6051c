"""kafka/bulk.py: a topic read as columns, each partition ending at its end when reading began."""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError

from cdc_ingest.kafka import bulk


class _Msg:
    def __init__(self, partition: int, offset: int, key: bytes | None = None,
                 value: bytes | None = None, eof: bool = False) -> None:
        self._p, self._o, self._k, self._v, self._eof = partition, offset, key, value, eof

    def error(self) -> Any:
        if not self._eof:
            return None
        return type("E", (), {"code": lambda _self: KafkaError._PARTITION_EOF})()

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._o

    def key(self) -> bytes | None:
        return self._k

    def value(self) -> bytes | None:
        return self._v


class _Consumer:
    def __init__(self, batches: list[list[_Msg]]) -> None:
        self.batches = batches
        self.config: dict[str, Any] = {}

    def assign(self, parts: Any) -> None:
        pass

    def consume(self, n: int, timeout: float) -> list[_Msg]:
        return self.batches.pop(0) if self.batches else []

    def close(self) -> None:
        pass


def test_columns_and_each_partitions_last_offset(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    batches = [
        [_Msg(0, 0, b"a", b"1"), _Msg(1, 0, b"b", b"2"), _Msg(0, 1, b"c", None)],
        [_Msg(0, 2, b"d", b"4"), _Msg(0, 3, eof=True), _Msg(1, 1, b"e", b"5")],
        [_Msg(1, 2, b"f", b"6")],  # partition 1's end was 2 (its last stable offset 3)
        [_Msg(1, 3, b"never", b"read")],
    ]
    consumer = _Consumer(batches)
    seen: dict[str, Any] = {}

    def make(config: dict[str, Any], isolation: str) -> _Consumer:
        seen.update(config)
        return consumer

    monkeypatch.setattr(bulk, "_consumer", make)
    monkeypatch.setattr(bulk, "partition_ends", lambda *a: {0: 10, 1: 3})
    out = list(bulk.read_columns({"bootstrap.servers": "x"}, "t"))
    assert seen["fetch.queue.backoff.ms"] == 0
    assert out == [([b"a", b"b", b"c"], [b"1", b"2", None], {0: 1, 1: 0}),
                   ([b"d", b"e"], [b"4", b"5"], {1: 1, 0: 2}),
                   ([b"f"], [b"6"], {1: 2})]
    assert len(consumer.batches) == 1  # reading stopped at the ends it began with
