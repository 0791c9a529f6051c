"""Random MySQL binary JSON documents, encoded here independently of the decoders under test.

The format (MySQL's json_binary): a type byte, then the value. An object or array is its
element count and its byte size (2 bytes each when small, 4 when large), then for an object
one key entry per key (its offset, then its length in 2 bytes), then one value entry per value
(a type byte, then the value inlined, or its offset), then the keys, then the values not
inlined; every offset counts from the element count. Literals and 16-bit integers are inlined,
32-bit integers too in a large container. A string is its length (7 bits a byte, low first,
the top bit set on all but the last byte) and its UTF-8; an opaque value its MySQL field type,
a length likewise and its bytes.
"""

from __future__ import annotations

import math
import random
import struct
from dataclasses import dataclass, field

from tests.unit.test_values import _decimal_bytes

OBJECT, ARRAY = "object", "array"
LITERAL, INT16, UINT16, INT32, UINT32, INT64, UINT64, DOUBLE, STRING, OPAQUE = (
    0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0F)
INTS = {INT16: "<h", UINT16: "<H", INT32: "<i", UINT32: "<I", INT64: "<q", UINT64: "<Q"}
DECIMAL, DATE, TIME, DATETIME, TIMESTAMP = 246, 10, 11, 12, 7

# characters a string is drawn from: ASCII, what JSON escapes, and every UTF-8 length
CHARS = ("abcxyzXYZ019 _-.,:/{}[]", "\"\\/\b\f\n\r\t\x00\x01\x1f\x7f", "éßñ\x80\xa0\xff",
         "\u0100\u07ff\u0800\u2028\u2029\ufeff\ufffd\uffff\u4e2d\ud7ff\ue000",
         "\U00010000\U0001f600\U0010ffff\U0001d11e")


@dataclass
class Container:
    kind: str  # OBJECT or ARRAY
    values: list[object] = field(default_factory=list)  # Scalars and Containers
    keys: list[str] = field(default_factory=list)  # an object's, in stored order
    large: bool = False  # stored large even when small would do


@dataclass
class Scalar:
    type: int
    value: object  # the literal byte, the number, the str, or (field type, raw bytes)


def varlen(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def scalar_bytes(s: Scalar) -> bytes:
    if s.type == LITERAL:
        return bytes([int(s.value)])  # type: ignore[call-overload]
    if s.type in INTS:
        return struct.pack(INTS[s.type], s.value)
    if s.type == DOUBLE:
        return struct.pack("<d", s.value)
    if s.type == STRING:
        raw = str(s.value).encode() if isinstance(s.value, str) else bytes(s.value)  # type: ignore[call-overload]
        return varlen(len(raw)) + raw
    field_type, raw = s.value  # type: ignore[misc]
    return bytes([field_type]) + varlen(len(raw)) + raw


def _inlined(s: object, large: bool) -> bool:
    return isinstance(s, Scalar) and (
        s.type in (LITERAL, INT16, UINT16) or (large and s.type in (INT32, UINT32)))


def container_bytes(c: Container) -> tuple[bool, bytes]:
    """Whether stored large, and the bytes after the type byte: small if it fits and is not
    forced large."""
    body = None if c.large else _container(c, False)
    if body is not None:
        return False, body
    body = _container(c, True)
    assert body is not None
    return True, body


def _container(c: Container, large: bool) -> bytes | None:
    size = 4 if large else 2
    word = "<I" if large else "<H"
    keys = [k.encode() for k in c.keys]
    header = 2 * size + (size + 2) * len(keys) + (1 + size) * len(c.values)
    at = header + sum(len(k) for k in keys)
    key_entries, value_entries, tail = bytearray(), bytearray(), bytearray()
    key_at = header
    for k in keys:
        if (key_at > 0xFFFF and not large) or len(k) > 0xFFFF:
            return None
        key_entries += struct.pack(word + "H", key_at, len(k))
        key_at += len(k)
    for v in c.values:
        kind, raw = type_and_bytes(v)
        if _inlined(v, large):
            value_entries += bytes([kind]) + raw.ljust(size, b"\0")
            continue
        if at + len(tail) >= 1 << (8 * size):
            return None
        value_entries += bytes([kind]) + struct.pack(word, at + len(tail))
        tail += raw
    total = at + len(tail)
    if total >= 1 << (8 * size):
        return None
    return (struct.pack(word, len(c.values)) + struct.pack(word, total) + key_entries
            + value_entries + b"".join(keys) + tail)


def type_and_bytes(v: object) -> tuple[int, bytes]:
    if isinstance(v, Container):
        large, body = container_bytes(v)
        return (0 if v.kind == OBJECT else 2) + (1 if large else 0), body
    assert isinstance(v, Scalar)
    return v.type, scalar_bytes(v)


def document(v: object) -> bytes:
    kind, raw = type_and_bytes(v)
    return bytes([kind]) + raw


class Random:
    """Random documents of every shape and scalar type, from a seed."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def text(self, longest: int = 12) -> str:
        r = self.rng
        n = r.choice([0, 1, 2, r.randrange(longest + 1), r.randrange(longest + 1)])
        if r.random() < 0.01:  # lengths of 2 and 3 bytes
            n = r.choice([127, 128, 300, 16383, 16384, 20000] if longest > 12 else [127, 128])
        return "".join(r.choice(r.choice(CHARS)) for _ in range(n))

    def double(self) -> float:
        r = self.rng
        pick = r.randrange(7)
        if pick == 0:
            return r.choice([0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308,
                             1.7976931348623157e308, -1.7976931348623157e308, 0.1, 1e-14,
                             1e-15, 1.5e-15, 1e15, 1e16, 9.999999999999999e15, 1e17,
                             123456789012345678.0, 1234567890123456.7, 0.3, 2.0, -1.0, 1e22])
        if pick == 1:  # any finite bit pattern
            while True:
                (x,) = struct.unpack("<d", r.randbytes(8))
                if math.isfinite(x):
                    return x
        if pick == 2:  # integral
            return float(r.randrange(-(10 ** r.randrange(1, 25)), 10 ** r.randrange(1, 25)))
        if pick == 3:  # few digits around the plain/exponent borders
            return r.choice([1, -1]) * r.randrange(1, 10 ** r.randrange(1, 18)) * 10.0 ** (
                r.randrange(-22, 24))
        return r.uniform(-1, 1) * 10.0 ** r.randrange(-30, 30)

    def opaque(self) -> Scalar:
        r = self.rng
        pick = r.randrange(4)
        if pick == 0:
            precision = r.randrange(1, 66)
            scale = r.randrange(0, min(precision, 30) + 1)
            intg = "".join(r.choice("0123456789") for _ in range(precision - scale)) or "0"
            frac = "".join(r.choice("0123456789") for _ in range(scale))
            text = r.choice(["", "-"]) + intg + ("." + frac if scale else "")
            raw = bytes([precision, scale]) + _decimal_bytes(text, precision, scale)
            return Scalar(OPAQUE, (DECIMAL, raw))
        if pick == 1:
            field_type = r.choice([DATE, TIME, DATETIME, TIMESTAMP])
            if field_type == TIME:
                whole = (r.randrange(839) << 12 | r.randrange(60) << 6 | r.randrange(60))
                packed = (whole << 24 | r.randrange(1000000)) * r.choice([1, -1])
            else:
                ymd = (r.randrange(10000) * 13 + r.randrange(13)) << 5 | r.randrange(32)
                hms = r.randrange(24) << 12 | r.randrange(60) << 6 | r.randrange(60)
                packed = (ymd << 17 | hms) << 24 | r.randrange(1000000)
            return Scalar(OPAQUE, (field_type, struct.pack("<q", packed)))
        if pick == 2:  # odd ones: any 8 bytes, or too short for a temporal
            return Scalar(OPAQUE, (r.choice([DATE, TIME, DATETIME, TIMESTAMP]),
                                   r.randbytes(r.choice([8, 8, 0, 3, 9]))))
        return Scalar(OPAQUE, (r.choice([15, 252, 253, 254, 245, 255, 0]),
                               r.randbytes(r.randrange(0, 40))))

    def scalar(self) -> Scalar:
        r = self.rng
        kind = r.choice([LITERAL, INT16, UINT16, INT32, UINT32, INT64, UINT64, DOUBLE, DOUBLE,
                         STRING, STRING, STRING, OPAQUE])
        if kind == LITERAL:
            return Scalar(kind, r.randrange(3))
        if kind in INTS:
            bits = struct.calcsize(INTS[kind]) * 8
            low, high = (-(1 << bits - 1), (1 << bits - 1) - 1) if INTS[kind].islower() \
                else (0, (1 << bits) - 1)
            value = r.choice([low, high, 0, -1 if low else 1, r.randint(low, high),
                              r.randint(max(low, -1000), min(high, 1000))])
            return Scalar(kind, value)
        if kind == DOUBLE:
            return Scalar(kind, self.double())
        if kind == STRING:
            return Scalar(kind, self.text(40))
        return self.opaque()

    def value(self, depth: int = 0, width: int = 6) -> object:
        r = self.rng
        if depth >= 8 or r.random() < 0.35 + 0.08 * depth:
            return self.scalar()
        n = r.choice([0, 1, 2, r.randrange(width + 1)])
        below = depth + 1
        if r.random() < 0.01:
            n = r.choice([300, 300, 3000])  # a large container by size, or by the count alone
            below = 8  # of scalars
        kind = r.choice([OBJECT, ARRAY])
        values = [self.value(below, max(1, width - 1)) for _ in range(n)]
        keys = [self.text() for _ in range(n)] if kind == OBJECT else []
        return Container(kind, values, keys, large=r.random() < 0.15)

    def deep(self, depth: int) -> object:
        """Nested ``depth`` containers, each holding the next and a few scalars."""
        inner: object = self.scalar()
        for _ in range(depth):
            kind = self.rng.choice([OBJECT, ARRAY])
            values = [self.scalar(), inner] if self.rng.random() < 0.5 else [inner]
            keys = [self.text() for _ in values] if kind == OBJECT else []
            inner = Container(kind, values, keys, large=self.rng.random() < 0.1)
        return inner
