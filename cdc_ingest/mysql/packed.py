"""MySQL's packed (length-encoded) integer, as binlog events and row images carry it: one
byte below 251, else 0xFC + 2 bytes, 0xFD + 3 bytes, 0xFE + 8 bytes, little-endian."""

from __future__ import annotations

_WIDTHS = {0xFC: 2, 0xFD: 3, 0xFE: 8}


def packed_int(data: bytes, at: int) -> tuple[int, int]:
    """The packed integer at ``at``: (value, offset after it). ValueError on a first byte
    that starts none (251, 255) or on too few bytes."""
    if at >= len(data):
        raise ValueError("a packed integer is missing (the data ends)")
    first = data[at]
    if first < 0xFB:
        return first, at + 1
    width = _WIDTHS.get(first)
    if width is None:
        raise ValueError(f"bad packed integer byte {first:#x}")
    end = at + 1 + width
    if end > len(data):
        raise ValueError("a packed integer is truncated")
    return int.from_bytes(data[at + 1:end], "little"), end
