"""The compiled binary JSON reader (``_jsontext.pyx``) against the reference
(``mysql_json.json_text``) on random documents encoded here (tests/unit/binary_json_docs.py):
the same text for every document, and for broken bytes (cut short, bytes changed, noise) the
same text or the same error, message included."""

from __future__ import annotations

import json
import random
import struct
import sys

import pytest

from cdc_ingest.capture import mysql_json
from cdc_ingest.capture.decoder import DECODER_ENV, capture_json_text
from tests.unit.binary_json_docs import (
    ARRAY,
    DOUBLE,
    LITERAL,
    OPAQUE,
    STRING,
    Container,
    Random,
    Scalar,
    document,
)

try:
    from cdc_ingest.capture import _jsontext  # type: ignore[attr-defined]
except ImportError:  # not built: test_extension_is_built says so
    _jsontext = None

needs_build = pytest.mark.skipif(_jsontext is None, reason="_jsontext is not built")
reference = mysql_json.json_text


def _outcome(read: object, data: bytes) -> tuple[object, ...]:
    try:
        return ("text", read(data))  # type: ignore[operator]
    except RecursionError:
        return ("error", RecursionError)
    except Exception as exc:  # noqa: BLE001
        return ("error", type(exc), str(exc))


def _same(data: bytes) -> tuple[object, ...]:
    want = _outcome(reference, data)
    got = _outcome(_jsontext.json_text, data)
    assert got == want, data.hex()
    return want


def test_extension_is_built() -> None:
    # CI builds it (scripts/setup.sh sets CDC_INGEST_REQUIRE_EXT=1)
    assert _jsontext is not None


def test_capture_reads_json_with_the_decoder_it_uses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DECODER_ENV, "python")
    assert capture_json_text() is reference
    monkeypatch.setenv(DECODER_ENV, "compiled")
    assert capture_json_text() is (_jsontext.json_text if _jsontext else reference)


def _plain(v: object) -> object:
    """What json.loads gives back for a document without opaque values."""
    if isinstance(v, Container):
        values = [_plain(x) for x in v.values]
        return values if v.kind == ARRAY else list(zip(v.keys, values, strict=True))
    assert isinstance(v, Scalar)
    if v.type == LITERAL:
        return [None, True, False][v.value]  # type: ignore[index]
    return v.value


def _has_opaque(v: object) -> bool:
    if isinstance(v, Container):
        return any(_has_opaque(x) for x in v.values)
    return isinstance(v, Scalar) and v.type == OPAQUE


@needs_build
def test_random_documents_read_the_same() -> None:
    gen = Random(20261204)
    checked = 0
    for _ in range(4000):
        value = gen.value()
        text = _same(document(value))[1]
        if not _has_opaque(value):  # the encoder and both readers agree with json
            assert json.loads(text, object_pairs_hook=list) == _plain(value)  # type: ignore[arg-type]
            checked += 1
    assert checked > 1000


@needs_build
def test_deep_documents_read_the_same() -> None:
    gen = Random(48)
    for depth in (1, 2, 50, 100, 150, 200):
        _same(document(gen.deep(depth)))


@needs_build
def test_every_scalar_type_and_extreme() -> None:
    for kind, fmt in ((0x05, "<h"), (0x06, "<H"), (0x07, "<i"), (0x08, "<I"), (0x09, "<q"),
                      (0x0A, "<Q")):
        bits = struct.calcsize(fmt) * 8
        signed = fmt.islower()
        for n in (0, 1, -1, (1 << bits - 1) - 1, -(1 << bits - 1), (1 << bits) - 1, 42):
            if (n < 0 and not signed) or (signed and n >= 1 << bits - 1) or n >= 1 << bits:
                continue
            assert _same(bytes([kind]) + struct.pack(fmt, n)) == ("text", str(n))
    for literal, text in ((0, "null"), (1, "true"), (2, "false")):
        assert _same(bytes([LITERAL, literal])) == ("text", text)
    assert _same(b"") == ("text", "null")
    assert _same(b"\x00\x00\x00\x04\x00") == ("text", "{}")
    assert _same(b"\x03" + bytes(8)) == ("text", "[]")


@needs_build
def test_doubles_print_as_the_reference_prints_them() -> None:
    gen = Random(1e300)  # type: ignore[arg-type]
    rng = random.Random(3)
    values = [gen.double() for _ in range(60000)]
    values += [struct.unpack("<d", rng.randbytes(8))[0] for _ in range(60000)]
    values += [float(f"{rng.randrange(1, 10 ** rng.randrange(1, 18))}e{e}")
               for e in range(-330, 310) for _ in range(20)]
    for x in values:
        data = bytes([DOUBLE]) + struct.pack("<d", x)
        want = _outcome(reference, data)
        assert _outcome(_jsontext.json_text, data) == want, repr(x)
    for x in (float("inf"), float("-inf"), float("nan"), -float("nan")):
        error = _same(bytes([DOUBLE]) + struct.pack("<d", x))
        assert error[1] is mysql_json.JsonBinaryError


@needs_build
def test_strings_escape_as_json_does() -> None:
    gen = Random(9)
    every_byte = "".join(map(chr, range(0x250))) + "\U0001f600\U0010ffff"
    for text in [every_byte, *(gen.text(300) for _ in range(3000))]:
        data = document(Scalar(STRING, text))
        assert _same(data) == ("text", json.dumps(text, ensure_ascii=False))


@needs_build
def test_utf8_is_checked_as_python_decodes_it() -> None:
    # every pair of bytes, and runs of the bytes where UTF-8's rules change, as a string and
    # as a key
    edges = [0x00, 0x22, 0x41, 0x5C, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1,
             0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]
    rng = random.Random(8)
    samples = [bytes([a, b]) for a in range(256) for b in range(256)]
    samples += [bytes(rng.choice(edges) for _ in range(rng.randrange(1, 9)))
                for _ in range(30000)]
    for raw in samples:
        _same(bytes([STRING, len(raw)]) + raw)
    for raw in samples[::7]:
        _same(b"\x00" + struct.pack("<HHHH", 1, 11 + len(raw), 11, len(raw)) + b"\x04\x00\x00"
              + raw)


@needs_build
def test_truncated_documents_fail_alike() -> None:
    gen = Random(77)
    messages = []
    for _ in range(400):
        data = document(gen.value(width=4))
        if len(data) > 3000:
            data = data[:3000]  # itself cut short
        cuts = range(len(data)) if len(data) < 200 else random.Random(len(data)).sample(
            range(len(data)), 200)
        for cut in cuts:
            outcome = _same(data[:cut])
            if outcome[0] == "error":
                messages.append(outcome[2])
    assert sum(m.startswith("truncated binary JSON (") for m in messages) > 5000


@needs_build
def test_changed_bytes_and_noise_read_alike() -> None:
    gen = Random(5)
    rng = random.Random(6)
    kinds: set[object] = set()
    for _ in range(3000):
        data = bytearray(document(gen.value(width=4)))
        for _ in range(rng.choice([1, 1, 2, 4])):
            data[rng.randrange(len(data))] = rng.choice([0, 1, 2, 0x7F, 0x80, 0xFF,
                                                        rng.randrange(256)])
        outcome = _same(bytes(data))
        kinds.add(outcome[1] if outcome[0] == "error" else "text")
    for _ in range(3000):
        _same(bytes([rng.randrange(0x11)]) + rng.randbytes(rng.randrange(40)))
    # the ways a broken document fails: cut short, a type or literal unknown, not UTF-8
    assert {mysql_json.JsonBinaryError, KeyError, UnicodeDecodeError, "text"} <= kinds


@needs_build
def test_a_container_inside_itself_is_a_recursion_error() -> None:
    # an array whose one value is itself (offset 0): the reference recurses until Python stops it
    data = b"\x02" + struct.pack("<HH", 1, 7) + b"\x02" + struct.pack("<H", 0)
    assert _same(data) == ("error", RecursionError)
    assert sys.getrecursionlimit() >= 1000
