"""A key-changing update after a snapshot is two halves, each judged by its own key's chunk:
both encoders (Python and compiled) write the -D of the old key and the +I of the new one
only as ``keep`` says, with the same bytes as when both are written."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from cdc_ingest.capture.binlog_schema import ColumnSpec, FieldType, TableSchema
from cdc_ingest.capture.decoder import compiled_available
from cdc_ingest.capture.encode import (
    KEEP_ALL,
    KEEP_NEW,
    KEEP_OLD,
    KeyPlan,
    TableEncoder,
    table_encoder,
)

SCHEMA = TableSchema("db", "t", (ColumnSpec("id", FieldType.LONG),
                                 ColumnSpec("v", FieldType.LONG)), ("id",))
ROWS = [([1, 10], [1, 11]),   # same key
        ([2, 20], [9, 21]),   # key 2 -> 9
        ([3, 30], [4, 31])]   # key 3 -> 4


def _encoders() -> list[Any]:
    plan = KeyPlan(SCHEMA, "test")
    found = [TableEncoder(SCHEMA, plan)]
    if compiled_available():
        found.append(table_encoder(SCHEMA, plan))
        assert type(found[1]) is not TableEncoder
    return found


def _written(encoder: Any, keep: Any) -> list[tuple[bytes, str, int]]:
    sent: list[tuple[bytes, str, int]] = []

    def send(topic: str, value: bytes, key: bytes, ts: int) -> None:
        sent.append((key, orjson.loads(value)["op"], orjson.loads(value)["pos"]))

    produced = encoder.produce_rows(send, "t", "U", ROWS, 5, "0-1-7", 1000, keep)
    assert produced == sum(1 for b, a in ROWS if keep is None or keep(b, a))
    return sent


@pytest.mark.parametrize("encoder", _encoders(), ids=lambda e: type(e).__name__)
def test_each_half_of_a_key_change_is_written_only_when_kept(encoder: Any) -> None:
    every = _written(encoder, None)
    assert every == [(b'{"id":1}', "+U", "0-1-7#5"),
                     (b'{"id":2}', "-D", "0-1-7#6"), (b'{"id":9}', "+I", "0-1-7#6"),
                     (b'{"id":3}', "-D", "0-1-7#7"), (b'{"id":4}', "+I", "0-1-7#7")]
    assert _written(encoder, lambda b, a: KEEP_ALL) == every

    # the old key's chunk already read (its delete is news), the new key's not yet
    old_only = _written(encoder, lambda b, a: KEEP_OLD if b[0] != a[0] else KEEP_ALL)
    assert old_only == [every[0], every[1], every[3]]
    new_only = _written(encoder, lambda b, a: KEEP_NEW if b[0] != a[0] else 0)
    assert new_only == [every[2], every[4]]
    assert _written(encoder, lambda b, a: 0) == []
