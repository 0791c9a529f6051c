"""The pieces of a change event's key and value (formats/change_events.py): row objects without
their nulls or with ISO-8601 timestamps, ``"name":value`` members, CSV fields as Jackson writes
them."""

from __future__ import annotations

import msgspec
import orjson

decode_columns = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
NULL = b"null"


def without_nulls(row: bytes) -> bytes:
    """A row object without its null members, every other value byte for byte."""
    return msgspec.json.encode({k: v for k, v in decode_columns(row).items()
                                if bytes(v) != NULL})


def iso_timestamps(row: bytes, stamps: frozenset[bytes]) -> bytes:
    """A row object with its timestamp columns in ISO-8601 (``2024-01-02T03:04:05.5`` for
    ``2024-01-02 03:04:05.5``, the same with ``Z`` for TIMESTAMP_LTZ), as Flink's json
    formats write them with ``timestamp-format.standard: ISO-8601``."""
    columns = decode_columns(row)
    changed = False
    for name, raw in columns.items():
        if name.encode() in stamps:
            text = bytes(raw)
            if text[:1] == b'"' and b" " in text:
                columns[name] = msgspec.Raw(text.replace(b" ", b"T", 1))
                changed = True
    return msgspec.json.encode(columns) if changed else row


def members(*pairs: tuple[bytes, bytes], skip_nulls: bool) -> bytes:
    """``"name":value`` members, those whose value is null left out with ``skip_nulls``."""
    return b",".join(b'"%b":%b' % (name, value) for name, value in pairs
                     if not (skip_nulls and value == NULL))


def csv_field(value: str) -> str:
    """One CSV field as Flink's CSV format (Jackson, default settings) writes a string:
    quoted when longer than 24 characters or holding a character below '-' (comma, quote,
    space, '$', '+', ...), a quote doubled inside."""
    if len(value) > 24 or any(ch < "-" for ch in value):
        return '"' + value.replace('"', '""') + '"'
    return value


def csv_value(raw: bytes) -> str:
    if raw == b"null":
        return ""
    if raw[:1] == b'"':
        return csv_field(orjson.loads(raw))
    if raw[:1] in (b"[", b"{"):
        return csv_field(raw.decode())
    return raw.decode()  # a number, true or false: as written


