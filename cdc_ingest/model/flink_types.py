"""Flink CDC's type names as a typed layout spells them (capture/typed_layout.py), taken apart;
and the byte form Java gives a DECIMAL's unscaled value. Shared by the Kafka Connect schema
block (formats/connect_schema.py) and the Avro format (formats/avro_schemas.py)."""

from __future__ import annotations

import re
import struct

_F32 = struct.Struct("<f")
_TYPE = re.compile(r"^([A-Z_]+)(?:\((\d+)(?:, (\d+))?\))?$")


def type_parts(type_: str) -> tuple[str, int | None, int | None]:
    """``DECIMAL(10, 2)`` -> ``("DECIMAL", 10, 2)``, ``TIME(3)`` -> ``("TIME", 3, None)``,
    ``BYTES`` -> ``("BYTES", None, None)``; a type it does not take apart as it is."""
    match = _TYPE.match(type_)
    if match is None:
        return type_, None, None
    size, scale = match.group(2), match.group(3)
    return match.group(1), (int(size) if size else None), (int(scale) if scale else None)


def twos_complement(value: int) -> bytes:
    """``BigInteger.toByteArray``: the shortest big-endian two's complement."""
    length = (value + (value < 0)).bit_length() // 8 + 1
    return value.to_bytes(length, "big", signed=True)


def shortest_float32(value: float) -> str:
    """The fewest digits that read back as the same 32-bit float, as Python spells them
    (a FLOAT in the changelog's JSON form)."""
    target = _F32.unpack(_F32.pack(value))[0]
    for digits in range(1, 10):
        text = f"{target:.{digits}g}"
        try:
            if _F32.unpack(_F32.pack(float(text)))[0] == target:
                return repr(float(text))
        except OverflowError:  # rounded up beyond the largest float
            continue
    return repr(target)
