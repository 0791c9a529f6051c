"""Partial JSON updates applied with the compiled reader reading the document (``_jsontext``:
``json_text``, ``container_text``, ``container_entries``) against the reference alone, on random documents and random diff
vectors: REPLACE, INSERT and REMOVE at paths that exist, paths that do not, ``[last-n]`` legs,
quoted and plain member names, several diffs in a row, and broken bytes in the document or the
diff. The same text, or the same error with the same message, every time."""

from __future__ import annotations

import json
import random
import struct

import pytest

from cdc_ingest.capture.json_diff import apply_json_diff
from cdc_ingest.capture.mysql_json import Unread, expand, json_tree
from cdc_ingest.capture.plan import compiled_json_reader
from tests.unit.binary_json_docs import OBJECT, Container, Random, document
from tests.unit.test_json_diff import INSERT, REMOVE, REPLACE, op

container = compiled_json_reader()
needs_build = pytest.mark.skipif(container is None, reason="_jsontext is not built")


def _outcome(before: bytes, diff: bytes, reader: object) -> tuple[object, ...]:
    try:
        return ("text", apply_json_diff(before, diff, reader))  # type: ignore[arg-type]
    except RecursionError:
        return ("error", RecursionError)
    except Exception as exc:  # noqa: BLE001
        return ("error", type(exc), str(exc))


def _same(before: bytes, diff: bytes) -> tuple[object, ...]:
    want = _outcome(before, diff, None)
    assert _outcome(before, diff, container) == want, (before.hex(), diff.hex())
    return want


def _leg_name(key: str, rng: random.Random) -> str:
    if key.isidentifier() and key.isascii() and rng.random() < 0.7:
        return "." + key
    return "." + json.dumps(key, ensure_ascii=rng.random() < 0.5)


def _path(value: object, rng: random.Random, insert: bool) -> str:
    """A path into ``value``: mostly to something there (a new member or element for an
    INSERT), sometimes to something that is not."""
    path = "$"
    while isinstance(value, Container) and value.values and (path == "$" or rng.random() < 0.8):
        if insert and rng.random() < 0.4:
            break
        i = rng.randrange(len(value.values))
        if value.kind == OBJECT:
            path += _leg_name(value.keys[i], rng)
        elif rng.random() < 0.3:
            n = len(value.values) - 1 - i
            path += f"[last-{n}]" if n else "[last]"
        else:
            path += f"[{i}]"
        value = value.values[i]
    if insert and isinstance(value, Container):
        path += (f".new{rng.randrange(3)}" if value.kind == OBJECT and rng.random() < 0.9
                 else f"[{rng.randrange(6)}]" if rng.random() < 0.7
                 else f"[last-{rng.randrange(4)}]")
    elif rng.random() < 0.2:  # a leg that may not be there: a new member, past the end
        path += rng.choice([f".new{rng.randrange(3)}", f"[{rng.randrange(6)}]", "[last]",
                            '."a b"', f"[last-{rng.randrange(4)}]"])
    if rng.random() < 0.03:
        path = path.replace(".", " . ").replace("[", " [ ")
    return path


def _root(gen: Random) -> Container:
    """A document whose root is a container holding something (MySQL logs no diff at $)."""
    values = [gen.value() for _ in range(gen.rng.choice([1, 2, 3, 8]))]
    if gen.rng.random() < 0.5:
        return Container("array", values, large=gen.rng.random() < 0.15)
    return Container(OBJECT, values, [gen.text() for _ in values], large=gen.rng.random() < 0.15)


def _diff(value: object, gen: Random, rng: random.Random) -> bytes:
    out = b""
    for _ in range(rng.choice([1, 1, 1, 2, 3, 5])):
        operation = rng.choice([REPLACE, REPLACE, INSERT, INSERT, REMOVE])
        new = None if operation == REMOVE else document(gen.value(depth=rng.randrange(3, 9)))
        out += op(operation, _path(value, rng, operation == INSERT), new)
    return out


@needs_build
def test_random_diffs_of_random_documents_apply_alike() -> None:
    gen = Random(20261202)
    rng = random.Random(4802)
    texts = 0
    for _ in range(2000):
        value = _root(gen)
        outcome = _same(document(value), _diff(value, gen, rng))
        texts += outcome[0] == "text"
    assert texts > 1000  # most diffs apply; the rest fail alike


@needs_build
def test_broken_documents_and_diffs_fail_alike() -> None:
    gen = Random(77)
    rng = random.Random(78)
    kinds: set[object] = set()
    for _ in range(1000):
        value = _root(gen)
        before, diff = bytearray(document(value)), bytearray(_diff(value, gen, rng))
        broken = rng.choice([before, diff])
        if rng.random() < 0.5 and len(broken) > 1:
            del broken[rng.randrange(1, len(broken)):]
        else:
            for _ in range(rng.choice([1, 2, 4])):
                broken[rng.randrange(len(broken))] = rng.choice([0, 1, 2, 0x7F, 0x80, 0xFF,
                                                                 rng.randrange(256)])
        outcome = _same(bytes(before), bytes(diff))
        kinds.add(outcome[0])
    assert kinds == {"text", "error"}


@needs_build
def test_a_container_inside_itself_fails_alike() -> None:
    # the root's one value is itself: both recurse until Python stops them
    before = b"\x02" + struct.pack("<HH", 1, 7) + b"\x02" + struct.pack("<H", 0)
    assert _same(before, op(INSERT, "$[0][5]", b"\x04\x00"))[0] == "error"
    assert _same(before, op(REPLACE, "$[9]", b"\x04\x00"))[0] == "error"


def _expanded(data: bytes, reader: object) -> tuple[object, ...]:
    try:
        tree = json_tree(data, reader)  # type: ignore[arg-type]
        if not isinstance(tree, Unread):
            return ("scalar", tree)
        level = expand(tree, reader)  # type: ignore[arg-type]
    except RecursionError:
        return ("error", RecursionError)
    except Exception as exc:  # noqa: BLE001
        return ("error", type(exc), str(exc))
    values = level.values() if isinstance(level, dict) else level
    return (type(level).__name__, list(level) if isinstance(level, dict) else None,
            [v if isinstance(v, str) else (v.kind, v.start) for v in values])


@needs_build
def test_one_level_of_random_and_broken_containers_reads_alike() -> None:
    gen = Random(31)
    rng = random.Random(32)
    for n in range(2500):
        data = bytearray(document(_root(gen) if n % 2 else gen.value(width=4)))
        for _ in range(rng.choice([0, 0, 1, 3])):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if rng.random() < 0.2:
            del data[rng.randrange(1, len(data) + 1):]
        assert _expanded(bytes(data), container) == _expanded(bytes(data), None), data.hex()
