"""Binlog value encodings -> output JSON values (docs/changelog-format.md).

Small pure functions the compiled row decoder calls for the types that need more than a
``struct`` unpack. Each takes the event buffer and an offset and returns ``(value, new_offset)``
or just the value when the caller knows the size.
"""

from __future__ import annotations

import base64
import struct
import time
from collections.abc import Callable
from typing import Any

import orjson

_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
_F32 = struct.Struct("<f")
_DOUBLE = struct.Struct("<d")
_UINT32 = struct.Struct("<I")


def decimal_size(precision: int, scale: int) -> int:
    intg = precision - scale
    return (
        (intg // 9) * 4 + _DIG2BYTES[intg % 9] + (scale // 9) * 4 + _DIG2BYTES[scale % 9]
    )


def decimal_text(raw: bytes, precision: int, scale: int) -> str:
    """MySQL's binary DECIMAL as exact decimal text (never through float)."""
    negative = not raw[0] & 0x80
    buf = bytearray(raw)
    buf[0] ^= 0x80
    if negative:
        buf = bytearray(b ^ 0xFF for b in buf)
    intg = precision - scale
    lead = _DIG2BYTES[intg % 9]
    pos = 0
    digits = []
    if lead:
        digits.append(str(int.from_bytes(buf[0:lead], "big")))
        pos = lead
    for _ in range(intg // 9):
        digits.append("%09d" % int.from_bytes(buf[pos : pos + 4], "big"))
        pos += 4
    int_part = "".join(digits).lstrip("0") or "0"
    frac = []
    for _ in range(scale // 9):
        frac.append("%09d" % int.from_bytes(buf[pos : pos + 4], "big"))
        pos += 4
    trail = scale % 9
    if trail:
        width = _DIG2BYTES[trail]
        frac.append("%0*d" % (trail, int.from_bytes(buf[pos : pos + width], "big")))
    text = f"{int_part}.{''.join(frac)}" if scale else int_part
    return f"-{text}" if negative and text.strip("0.") else text


def decimal_json(raw: bytes, precision: int, scale: int) -> orjson.Fragment:
    return orjson.Fragment(decimal_text(raw, precision, scale))


def decimal_reader(precision: int, scale: int) -> Callable[[bytes], orjson.Fragment]:
    """A reader of one DECIMAL(p,s) layout: integer arithmetic on the whole value at once."""
    intg = precision - scale
    groups: list[tuple[int, int]] = []  # (bytes, decimal digits) from the left
    if intg % 9:
        groups.append((_DIG2BYTES[intg % 9], intg % 9))
    groups += [(4, 9)] * (intg // 9)
    n_int = len(groups)
    groups += [(4, 9)] * (scale // 9)
    if scale % 9:
        groups.append((_DIG2BYTES[scale % 9], scale % 9))
    size = sum(b for b, _ in groups)
    sign_bit = 1 << (8 * size - 1)
    ones = (1 << (8 * size)) - 1
    plan = []
    shift = 8 * size
    for width, digits in groups:
        shift -= 8 * width
        plan.append((shift, (1 << (8 * width)) - 1, 10**digits))
    int_plan, frac_plan = tuple(plan[:n_int]), tuple(plan[n_int:])

    def read(raw: bytes) -> orjson.Fragment:
        stored = int.from_bytes(raw, "big")
        negative = not stored & sign_bit  # MySQL sets the top bit for positive values...
        value = stored ^ (sign_bit ^ ones if negative else sign_bit)  # ...and inverts negatives
        whole = 0
        for at, mask, scale_by in int_plan:
            whole = whole * scale_by + ((value >> at) & mask)
        frac = 0
        for at, mask, scale_by in frac_plan:
            frac = frac * scale_by + ((value >> at) & mask)
        text = f"{whole}.{frac:0{scale}d}" if scale else str(whole)
        return orjson.Fragment(f"-{text}" if negative and (whole or frac) else text)

    return read


def float32(raw: bytes, off: int) -> float:
    """FLOAT as the shortest decimal that reads back as the same 32-bit value."""
    value: float = _F32.unpack_from(raw, off)[0]
    for digits in (6, 7, 8, 9):
        candidate = float(f"{value:.{digits}g}")
        if _F32.unpack(_F32.pack(candidate))[0] == value:
            return candidate
    return value


def _fraction(raw: bytes, off: int, fsp: int) -> tuple[str, int]:
    """Fractional seconds of TIME2/DATETIME2/TIMESTAMP2 as ``.ddd`` text and bytes used.

    MySQL stores fsp 1-2 as hundredths (1 byte), 3-4 as units of 100us (2 bytes), 5-6 as
    microseconds (3 bytes), big-endian.
    """
    if fsp == 0:
        return "", 0
    if fsp <= 2:
        return "." + f"{raw[off]:02d}"[:fsp], 1
    if fsp <= 4:
        return "." + f"{int.from_bytes(raw[off : off + 2], 'big'):04d}"[:fsp], 2
    return "." + f"{int.from_bytes(raw[off : off + 3], 'big'):06d}"[:fsp], 3


def _frac_text(micros: int, fsp: int) -> str:
    return "." + f"{micros:06d}"[:fsp] if fsp else ""


# Rows of one table often share their date-times to the second: the formatted text of the
# whole-seconds part is kept per raw value (bounded), the fraction formatted each time.
_CACHE_LIMIT = 1 << 16
_DATETIMES: dict[bytes, str | None] = {}
_TIMESTAMPS: dict[bytes, str] = {}


def _datetime_text(packed_bytes: bytes) -> str | None:
    packed = int.from_bytes(packed_bytes, "big") - 0x8000000000
    ymd = packed >> 17
    ym = ymd >> 5
    year, month, day = ym // 13, ym % 13, ymd & 31
    if month == 0 or day == 0:
        return None
    hms = packed & 0x1FFFF
    return f"{year:04d}-{month:02d}-{day:02d} {hms >> 12:02d}:{(hms >> 6) & 63:02d}:{hms & 63:02d}"


def datetime2(raw: bytes, off: int, fsp: int) -> tuple[str | None, int]:
    key = raw[off : off + 5]
    text = _DATETIMES.get(key, "")
    if text == "":
        if len(_DATETIMES) >= _CACHE_LIMIT:
            _DATETIMES.clear()
        text = _DATETIMES[key] = _datetime_text(key)
    frac, extra = _fraction(raw, off + 5, fsp)
    return (None if text is None else text + frac), off + 5 + extra


def timestamp2(raw: bytes, off: int, fsp: int) -> tuple[str | None, int]:
    key = raw[off : off + 4]
    frac, extra = _fraction(raw, off + 4, fsp)
    if key == b"\x00\x00\x00\x00" and frac.strip(".0") == "":
        return None, off + 4 + extra
    text = _TIMESTAMPS.get(key)
    if text is None:
        if len(_TIMESTAMPS) >= _CACHE_LIMIT:
            _TIMESTAMPS.clear()
        text = _TIMESTAMPS[key] = _utc_text(int.from_bytes(key, "big"))
    return f"{text}{frac}Z", off + 4 + extra


def _utc_text(seconds: int) -> str:
    t = time.gmtime(seconds)
    return (
        f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d} "
        f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"
    )


def timestamp_v1(raw: bytes, off: int) -> str | None:
    seconds: int = _UINT32.unpack_from(raw, off)[0]
    return _utc_text(seconds) + "Z" if seconds else None


def time2(raw: bytes, off: int, fsp: int) -> tuple[str, int]:
    """TIME2 including negative values and hours beyond 24 (up to 838)."""
    if fsp >= 5:
        packed = int.from_bytes(raw[off : off + 6], "big") - 0x800000000000
        size = 6
    else:
        intpart = int.from_bytes(raw[off : off + 3], "big") - 0x800000
        frac = 0
        size = 3
        if fsp in (1, 2):
            frac = raw[off + 3]
            if intpart < 0 and frac:
                intpart += 1
                frac -= 0x100
            frac *= 10000
            size = 4
        elif fsp in (3, 4):
            frac = int.from_bytes(raw[off + 3 : off + 5], "big")
            if intpart < 0 and frac:
                intpart += 1
                frac -= 0x10000
            frac *= 100
            size = 5
        packed = (intpart << 24) + frac
    sign = "-" if packed < 0 else ""
    packed = abs(packed)
    hms, micros = packed >> 24, packed % (1 << 24)
    hours = (hms >> 12) % (1 << 10)
    text = f"{sign}{hours:02d}:{(hms >> 6) % 64:02d}:{hms % 64:02d}{_frac_text(micros, fsp)}"
    return text, off + size


def time_v1(raw: bytes, off: int) -> str:
    value = int.from_bytes(raw[off : off + 3], "little", signed=True)
    sign = "-" if value < 0 else ""
    value = abs(value)
    return f"{sign}{value // 10000:02d}:{value // 100 % 100:02d}:{value % 100:02d}"


def date(raw: bytes, off: int) -> str | None:
    value = raw[off] | raw[off + 1] << 8 | raw[off + 2] << 16
    day, month, year = value & 31, (value >> 5) & 15, value >> 9
    if month == 0 or day == 0:
        return None
    return f"{year:04d}-{month:02d}-{day:02d}"


def datetime_v1(raw: bytes, off: int) -> str | None:
    value = int.from_bytes(raw[off : off + 8], "little")
    d, t = divmod(value, 1000000)
    year, month, day = d // 10000, d // 100 % 100, d % 100
    if month == 0 or day == 0:
        return None
    return f"{year:04d}-{month:02d}-{day:02d} {t // 10000:02d}:{t // 100 % 100:02d}:{t % 100:02d}"


def year(raw: bytes, off: int) -> int:
    value = raw[off]
    return value + 1900 if value else 0


def base64_text(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def bit_value(raw: bytes, off: int, size: int, bits: int) -> tuple[Any, int]:
    chunk = bytes(raw[off : off + size])
    if bits == 1:
        return bool(chunk[0] & 1), off + size
    return base64_text(chunk), off + size


def text(data: bytes, encoding: str) -> str:
    """Decode a text column. MySQL's latin1 is cp1252 with its five holes mapped 1:1."""
    if encoding == "cp1252":
        try:
            return data.decode("cp1252")
        except UnicodeDecodeError:
            return "".join(
                bytes([b]).decode("cp1252", errors="strict") if b not in _CP1252_HOLES
                else chr(b)
                for b in data
            )
    return data.decode(encoding)


_CP1252_HOLES = frozenset((0x81, 0x8D, 0x8F, 0x90, 0x9D))


def set_labels(mask: int, labels: tuple[str, ...]) -> list[str]:
    return [label for i, label in enumerate(labels) if mask >> i & 1]


def enum_label(index: int, labels: tuple[str, ...]) -> str:
    # Index 0 is MySQL's "invalid value" marker, shown as the empty string.
    return labels[index - 1] if 0 < index <= len(labels) else ""


def fixed_binary(data: bytes, width: int) -> str:
    # BINARY(n) is right-padded with 0x00; the binlog drops the padding.
    return base64_text(data.ljust(width, b"\x00"))


def vector(data: bytes) -> list[float]:
    """VECTOR: its float32 values (little-endian), each as the shortest decimal that reads
    back as the same 32-bit value, like FLOAT."""
    if len(data) % 4:
        raise ValueError(f"a VECTOR value of {len(data)} bytes is not a whole number of floats")
    return [float32(data, off) for off in range(0, len(data), 4)]


def double(raw: bytes, off: int) -> float:
    value: float = _DOUBLE.unpack_from(raw, off)[0]
    return value
