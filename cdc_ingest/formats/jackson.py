"""Message keys spelled as Flink's json format (Jackson's UTF8JsonGenerator) writes them.

Compaction and partitioning go by key bytes, so a topic two writers share must get the same
bytes for the same key from both. orjson (capture's changelog keys) and Jackson differ in
two spellings only: a character beyond the BMP is raw UTF-8 in orjson and a ``\\uD83D\\uDD11``
surrogate-pair escape in Jackson, and a control character without a short escape is
``\\u001f`` in orjson and ``\\u001F`` in Jackson. Both write ``\\b \\t \\n \\f \\r \\" \\\\``
and every other character alike (docs/output-contract.md, "Keys").
"""

from __future__ import annotations

import re

# an escaped backslash (skipped whole, so the "u" after it is not read as an escape), a
# lower-case control escape, or a 4-byte UTF-8 sequence
_SPOTS = re.compile(rb"\\\\|\\u00([0-9a-f]{2})|[\xf0-\xf4][\x80-\xbf]{3}")
_NEEDED = re.compile(rb"\\u00|[\xf0-\xf4]")


def _fix(match: re.Match[bytes]) -> bytes:
    whole = match.group(0)
    if whole == b"\\\\":
        return whole
    if match.group(1) is not None:
        return b"\\u00" + match.group(1).upper()
    point = ord(whole.decode("utf-8")) - 0x10000
    return b"\\u%04X\\u%04X" % (0xD800 + (point >> 10), 0xDC00 + (point & 0x3FF))


def jackson_json(text: bytes) -> bytes:
    """orjson's compact JSON text as Jackson writes the same value."""
    if _NEEDED.search(text) is None:
        return text
    return _SPOTS.sub(_fix, text)


# an escaped backslash, an upper-case control escape, or a surrogate pair's two escapes
_BACK = re.compile(rb"\\\\|\\u00([0-9A-F]{2})|\\u(D[89AB][0-9A-F]{2})\\u(D[C-F][0-9A-F]{2})")
_BACK_NEEDED = re.compile(rb"\\u(?:00[0-9A-F]{2}|D[89AB])")


def _unfix(match: re.Match[bytes]) -> bytes:
    whole = match.group(0)
    if whole == b"\\\\":
        return whole
    if match.group(1) is not None:
        return b"\\u00" + match.group(1).lower()
    high, low = int(match.group(2), 16), int(match.group(3), 16)
    return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)).encode()


def orjson_spelling(text: bytes) -> bytes:
    """The inverse of :func:`jackson_json`: a key Jackson spelled as capture's changelog
    spells it (the bytes its changelog partition is hashed from)."""
    if _BACK_NEEDED.search(text) is None:
        return text
    return _BACK.sub(_unfix, text)
