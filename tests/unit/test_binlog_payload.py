"""Compressed transactions (TRANSACTION_PAYLOAD): header fields and the events inside."""

from __future__ import annotations

import struct

import pytest
import zstandard

from cdc_ingest.capture.binlog_payload import PayloadError, inner_events, payload_header

# A real payload event body from MySQL 9.7 (3 rows inserted in one transaction), header part:
# compression type 0 (zstd), uncompressed size 541 (0xfc: a 2-byte packed integer), payload
# size 150, end mark.
REAL_HEADER = bytes.fromhex("020100" "0303fc1d02" "010196" "00")


def _event(kind: int, body: bytes) -> bytes:
    return struct.pack("<IBIIIH", 1700000000, kind, 1, 19 + len(body), 0, 0) + body


def _packed(n: int) -> bytes:
    if n < 251:
        return bytes([n])
    return b"\xfc" + n.to_bytes(2, "little") if n < 1 << 16 else b"\xfd" + n.to_bytes(3, "little")


def _body(events: list[bytes], compression: int = 0) -> bytes:
    plain = b"".join(events)
    payload = zstandard.ZstdCompressor().compress(plain) if compression == 0 else plain
    fields = [(2, _packed(compression)),
              (3, _packed(len(plain))), (1, _packed(len(payload)))]
    header = b"".join(bytes([k]) + _packed(len(v)) + v for k, v in fields)
    return header + b"\x00" + payload


def test_real_header_fields() -> None:
    assert payload_header(REAL_HEADER + b"x" * 150) == (0, 150, 541, len(REAL_HEADER))


@pytest.mark.parametrize("compression", [0, 255])
def test_inner_events_come_back_whole_and_in_order(compression: int) -> None:
    events = [_event(2, b"BEGIN"), _event(19, b"m" * 40), _event(30, b"r" * 70_000),
              _event(16, b"x" * 8)]
    assert list(inner_events(_body(events, compression))) == events


def test_sizes_that_disagree_are_refused() -> None:
    body = bytearray(_body([_event(2, b"BEGIN")]))
    body[body.index(3) + 2] += 1  # claim one more uncompressed byte
    with pytest.raises(PayloadError, match="unpacked to 24 bytes, its header says 25"):
        list(inner_events(bytes(body)))
    with pytest.raises(PayloadError, match="payload bytes"):
        list(inner_events(_body([_event(2, b"BEGIN")])[:-3]))


def test_unknown_compression_is_refused() -> None:
    body = bytes([2, 1, 7, 1, 1, 0, 0])
    with pytest.raises(PayloadError, match="compressed with type 7"):
        list(inner_events(body))
