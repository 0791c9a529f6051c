"""Change events read back from a topic: the row each one leaves (verify, and the sink's
delete events for a table's live rows, sink/task/event_resets.py)."""

from __future__ import annotations

import msgspec


class _Payload(msgspec.Struct):
    """What a delete needs of a change event read back: its last row image."""

    op: str | None = None  # debezium
    after: msgspec.Raw = msgspec.Raw(b"null")
    type: str | None = None  # canal
    data: list[msgspec.Raw] | None = None
    pkNames: list[str] | None = None


class _Event(_Payload):
    """The same, or wrapped with its Kafka Connect schema (``include-schema.enabled``)."""

    schema: msgspec.Raw = msgspec.Raw(b"null")
    payload: _Payload | None = None


_decode_wrapped = msgspec.json.Decoder(_Event).decode


def decode_event(value: bytes) -> _Payload:
    event = _decode_wrapped(value)
    return event.payload if event.payload is not None else event


def schema_of(value: bytes | None) -> bytes | None:
    """The ``schema`` block of an event written with one."""
    if not value:
        return None
    schema = bytes(_decode_wrapped(value).schema)
    return None if schema == b"null" else schema


def row_image(value: bytes | None) -> bytes | None:
    """The row a change event leaves (``after``, canal's ``data[0]``); None after a delete."""
    if value is None:
        return None
    event = decode_event(value)
    if event.op == "d" or event.type == "DELETE":
        return None
    if event.data:
        return bytes(event.data[0])
    after = bytes(event.after)
    return None if after == b"null" else after
