"""Changelog record -> sink messages (DESIGN section 4): topic, key, value, headers, time.

Values travel from capture already in their output JSON form; numbers with a fraction or an
exponent (DECIMAL, FLOAT, DOUBLE) are carried through as their exact text, never through a
float, so ``0.50`` and 65-digit decimals come out as they went in.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

Headers = list[tuple[str, bytes]]
Topics = Callable[[str, str], tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class SinkMessage:
    topic: str
    key: bytes
    value: bytes | None
    headers: Headers | None
    timestamp_ms: int
    table: str


def decode(value: bytes) -> dict[str, Any]:
    """Parse a changelog value keeping every non-integer number as its exact JSON text."""
    body: dict[str, Any] = json.loads(value, parse_float=orjson.Fragment)
    return body


def sink_messages(
    key: bytes | None,
    record: dict[str, Any],
    topics: Topics,
    except_key: bool,
    with_headers: bool,
) -> list[SinkMessage]:
    """The messages one changelog record becomes: one per routed topic; none for DDL."""
    op = record["op"]
    if op == "DDL":
        return []
    db, table = record["db"], record["table"]
    pk: dict[str, Any] = record["pk"]
    key_bytes = key if key is not None else orjson.dumps(pk)
    value: bytes | None = None
    if op != "-D":
        after: dict[str, Any] = record["after"]
        if except_key:
            after = {k: v for k, v in after.items() if k not in pk}
        value = orjson.dumps(after)
    headers = (
        [("namespace", b""), ("schemaName", db.encode()), ("tableName", table.encode())]
        if with_headers
        else None
    )
    name = f"{db}.{table}"
    ts = int(record["ts_ms"])
    return [SinkMessage(t, key_bytes, value, headers, ts, name) for t in topics(db, table)]


def last_per_key(messages: list[SinkMessage]) -> list[SinkMessage]:
    """``sink.buffer-flush``: only the last message per (topic, key), in last-write order."""
    latest: dict[tuple[str, bytes], SinkMessage] = {}
    for msg in messages:
        slot = (msg.topic, msg.key)
        latest.pop(slot, None)
        latest[slot] = msg
    return list(latest.values())
