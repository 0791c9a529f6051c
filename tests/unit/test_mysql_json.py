"""MySQL binary JSON -> the text MySQL shows, on hand-encoded documents (the integration
tests compare with a real MySQL's SELECT)."""

from __future__ import annotations

import struct

import pytest

from cdc_ingest.capture.mysql_json import JsonBinaryError, double_text, json_text


def _small_object(items: list[tuple[bytes, int, bytes]]) -> bytes:
    """{key: value} with every value stored after the keys (type, raw bytes)."""
    n = len(items)
    head = 4 + 4 * n + 3 * n
    keys = b"".join(k for k, _, _ in items)
    key_entries, value_entries, values = b"", b"", b""
    key_at, value_at = head, head + len(keys)
    for key, kind, raw in items:
        key_entries += struct.pack("<HH", key_at, len(key))
        key_at += len(key)
        value_entries += bytes([kind]) + struct.pack("<H", value_at + len(values))
        values += raw
    body = key_entries + value_entries + keys + values
    return b"\x00" + struct.pack("<HH", n, 4 + len(body)) + body


def test_scalars_and_literals() -> None:
    assert json_text(b"") == "null"
    assert json_text(b"\x04\x01") == "true" and json_text(b"\x04\x02") == "false"
    assert json_text(b"\x05" + struct.pack("<h", -7)) == "-7"
    assert json_text(b"\x0a" + struct.pack("<Q", 2**64 - 1)) == "18446744073709551615"
    assert json_text(b"\x0b" + struct.pack("<d", 1e300)) == "1e300"
    assert json_text(b"\x0c\x05a\"b\n\\") == '"a\\"b\\n\\\\"'


def test_object_with_inlined_and_stored_values_keeps_mysql_spacing() -> None:
    doc = _small_object([(b"a", 0x0C, b"\x02\xc3\xa9"), (b"bb", 0x0B, struct.pack("<d", 0.5))])
    assert json_text(doc) == '{"a": "é", "bb": 0.5}'
    # an inlined int16 lives in the value entry itself
    inline = (b"\x00" + struct.pack("<HH", 1, 12) + struct.pack("<HH", 11, 1)
              + b"\x05" + struct.pack("<h", 42) + b"k")
    assert json_text(inline) == '{"k": 42}'


def test_opaque_values() -> None:
    # DECIMAL(5,2) 1.50: precision, scale, then MySQL's binary decimal
    assert json_text(b"\x0f\xf6\x05\x05\x02\x80\x01\x32") == "1.50"
    datetime = ((((2024 * 13 + 1) << 5 | 31) << 17 | 12 << 12 | 34 << 6 | 56) << 24) + 500000
    assert json_text(b"\x0f\x0c\x08" + struct.pack("<q", datetime)) == \
        '"2024-01-31 12:34:56.500000"'
    assert json_text(b"\x0f\x0a\x08" + struct.pack("<q", ((2024 * 13 + 1) << 5 | 31) << 41)) \
        == '"2024-01-31"'
    time = -((838 << 12 | 59 << 6 | 59) << 24)
    assert json_text(b"\x0f\x0b\x08" + struct.pack("<q", time)) == '"-838:59:59.000000"'
    assert json_text(b"\x0f\x0f\x02\x00\xff") == '"base64:type15:AP8="'


@pytest.mark.parametrize(("value", "text"), [
    (1e-5, "0.00001"), (1e-15, "0.000000000000001"), (1e-16, "1e-16"), (100.0, "100.0"),
    (1e14, "100000000000000.0"), (1e15, "1e15"), (1.2345678901234567e15, "1234567890123456.8"),
    (1.2345678901234568e16, "1.2345678901234568e16"), (-0.0, "-0.0"), (5e-324, "5e-324"),
    (1.2345678901234568e29, "1.2345678901234568e29"), (-1e20, "-1e20"), (0.1, "0.1"),
])
def test_doubles_as_mysql_prints_them(value: float, text: str) -> None:
    assert double_text(value) == text


def test_truncated_documents_are_an_error_not_a_guess() -> None:
    with pytest.raises(JsonBinaryError):
        json_text(b"\x0b\x00\x00")
    with pytest.raises(JsonBinaryError):
        json_text(b"\x0e\x00")
