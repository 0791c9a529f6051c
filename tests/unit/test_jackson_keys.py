"""Jackson's key spelling and its inverse: a key read back from a topic Jackson's spelling
wrote is capture's changelog key again, byte for byte (the sink finds each key's owner task
by hashing the changelog's bytes)."""

from __future__ import annotations

import random

import orjson

from cdc_ingest.formats.jackson import jackson_json, orjson_spelling

_ALPHABET = ["a", "é", "\u2028", "\x00", "\x1f", "\x7f", "\\", '"', "u", "0", "D", "8",
             "\U0001F511", "\U00010000", "\U0010FFFF", "\ud7ff", "\ue000", "\n", "/"]


def test_the_inverse_gives_back_orjsons_bytes_for_random_keys() -> None:
    rng = random.Random(5)
    for _ in range(3000):
        text = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 12)))
        key = orjson.dumps({"s": text, "n": rng.randint(-5, 5)})
        spelled = jackson_json(key)
        assert orjson_spelling(spelled) == key, (key, spelled)


def test_the_two_spellings_differ_where_jackson_escapes() -> None:
    key = orjson.dumps({"s": "\U0001F511\x1f"})
    assert jackson_json(key) == b'{"s":"\\uD83D\\uDD11\\u001F"}'
    assert orjson_spelling(b'{"s":"\\uD83D\\uDD11\\u001F"}') == key
    # an escaped backslash before "uD83D" is text, not an escape
    assert orjson_spelling(b'{"s":"\\\\uD83D\\\\uDD11"}') == b'{"s":"\\\\uD83D\\\\uDD11"}'
