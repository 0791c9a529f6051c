"""MySQL partial JSON updates (PARTIAL_UPDATE_ROWS_EVENT diff vectors) applied to the old
document, on hand-built binary JSON and diff vectors (no server).

The builders below write MySQL's formats from their description (sql-common/json_binary.cc for
binary JSON, Json_diff::write_binary for a diff); the expected texts are spelled out where the
order of keys or the rendering of a value is the point.
"""

from __future__ import annotations

import struct
from typing import Any, NamedTuple

import pytest

from cdc_ingest.capture import json_diff
from cdc_ingest.capture.json_diff import JsonDiffError
from cdc_ingest.capture.mysql_json import Compiled, expand, json_text, json_tree, render
from cdc_ingest.capture.plan import compiled_json_reader

REPLACE, INSERT, REMOVE = 0, 1, 2
# the reader of the document's untouched parts each test runs with: the reference's own, or
# the compiled one capture uses (test_json_diff_compiled.py: random documents and diffs)
_READER: list[Compiled | None] = [None]


@pytest.fixture(autouse=True, params=["reference", "compiled"])
def _reader(request: pytest.FixtureRequest) -> None:
    compiled = compiled_json_reader()
    if request.param == "compiled" and compiled is None:
        pytest.skip("_jsontext is not built (test_json_text_compiled.py fails for it)")
    _READER[0] = compiled if request.param == "compiled" else None


def apply_json_diff(before: bytes, diff: bytes) -> str:
    return json_diff.apply_json_diff(before, diff, _READER[0])


class Opaque(NamedTuple):
    """An opaque binary JSON scalar: a MySQL field type and its raw bytes."""

    field_type: int
    raw: bytes


def _varlen(n: int) -> bytes:
    out = b""
    while True:
        out += bytes([(n & 0x7F) | (0x80 if n > 0x7F else 0)])
        n >>= 7
        if not n:
            return out


def _mysql_key_order(key: str) -> tuple[int, bytes]:
    raw = key.encode()
    return len(raw), raw


def _scalar(value: Any) -> tuple[int, bytes]:
    if value is None or isinstance(value, bool):
        return 0x04, bytes([{None: 0, True: 1, False: 2}[value]])
    if isinstance(value, Opaque):
        return 0x0F, bytes([value.field_type]) + _varlen(len(value.raw)) + value.raw
    if isinstance(value, float):
        return 0x0B, struct.pack("<d", value)
    if isinstance(value, str):
        raw = value.encode()
        return 0x0C, _varlen(len(raw)) + raw
    for kind, fmt in ((0x05, "<h"), (0x07, "<i"), (0x09, "<q"), (0x0A, "<Q")):
        try:
            return kind, struct.pack(fmt, value)
        except struct.error:
            continue
    raise ValueError(value)


def _layout(items: list[tuple[str | None, Any]], large: bool) -> bytes | None:
    """A container's body (from its element count on), or None when it needs the large form."""
    word, size = ("<I", 4) if large else ("<H", 2)
    keys = [k.encode() for k, _ in items if k is not None]
    header = 2 * size + len(keys) * (size + 2) + len(items) * (1 + size)
    key_entries, at = b"", header
    for key in keys:
        key_entries += struct.pack(word + "H", at, len(key))
        at += len(key)
    entries, blob = b"", b""
    for _, value in items:
        kind, body = _encode(value)
        inlined = kind in (0x04, 0x05, 0x06) or (large and kind in (0x07, 0x08))
        if inlined:
            entries += bytes([kind]) + body.ljust(size, b"\x00")
        else:
            if at + len(blob) > 0xFFFF and not large:
                return None
            entries += bytes([kind]) + struct.pack(word, at + len(blob))
            blob += body
    total = at + len(blob)
    if total > 0xFFFF and not large:
        return None
    return struct.pack(word + word[1], len(items), total) + key_entries + entries + \
        b"".join(keys) + blob


def _encode(value: Any) -> tuple[int, bytes]:
    if isinstance(value, dict):
        items: list[tuple[str | None, Any]] = sorted(
            value.items(), key=lambda kv: _mysql_key_order(kv[0]))
        base = 0x00
    elif isinstance(value, list):
        items, base = [(None, v) for v in value], 0x02
    else:
        return _scalar(value)
    small = _layout(items, large=False)
    if small is not None:
        return base, small
    large = _layout(items, large=True)
    assert large is not None
    return base + 1, large


def doc(value: Any) -> bytes:
    """A value as MySQL stores it in a JSON column (objects' keys in MySQL's order)."""
    kind, body = _encode(value)
    return bytes([kind]) + body


def _packed(n: int) -> bytes:
    """MySQL's net_store_length."""
    if n < 251:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + struct.pack("<H", n)
    if n < 1 << 24:
        return b"\xfd" + struct.pack("<I", n)[:3]
    return b"\xfe" + struct.pack("<Q", n)


def op(operation: int, path: str | bytes, value: bytes | None = None) -> bytes:
    """One diff as Json_diff::write_binary writes it."""
    raw = path.encode() if isinstance(path, str) else path
    out = bytes([operation]) + _packed(len(raw)) + raw
    return out if value is None else out + _packed(len(value)) + value


def replace(path: str, value: Any) -> bytes:
    return op(REPLACE, path, doc(value))


def insert(path: str, value: Any) -> bytes:
    return op(INSERT, path, doc(value))


def remove(path: str) -> bytes:
    return op(REMOVE, path)


def column(*diffs: bytes) -> bytes:
    """The partial column's value in the row (Json_diff_vector::write_binary)."""
    body = b"".join(diffs)
    return struct.pack("<I", len(body)) + body


def apply(before: Any, *diffs: bytes) -> str:
    value = column(*diffs)
    (length,) = struct.unpack_from("<I", value)
    return apply_json_diff(doc(before), value[4:4 + length])


def text(value: Any) -> str:
    return json_text(doc(value))


# --- the tree shared with json_text -------------------------------------------------------

def test_a_tree_renders_exactly_as_json_text_and_expands_one_level() -> None:
    value = {"a": [1, 2.5, {"x": None}], "bb": "q\"\n\\é😀\x01", "c": True, "": -70000}
    data = doc(value)
    assert render(json_tree(data)) == json_text(data)
    top = json_tree(data)
    assert not isinstance(top, (str, list, dict))
    level = expand(top)
    assert isinstance(level, dict) and list(level) == ["", "a", "c", "bb"]
    assert level["c"] == "true" and level[""] == "-70000"
    assert render(level) == json_text(data)
    assert json_tree(doc(2.5)) == "2.5" and json_tree(b"") == "null"


def test_an_empty_diff_vector_leaves_the_document_as_it_is() -> None:
    before = {"k": [1, {"z": 1.0}], "kk": "v"}
    assert apply(before) == text(before) == '{"k": [1, {"z": 1.0}], "kk": "v"}'


def test_the_caller_passes_the_bytes_after_the_vectors_own_length() -> None:
    value = column(replace("$.a", 2))
    # the 4-byte length is the vector's only length: it counts exactly the diffs
    assert struct.unpack_from("<I", value)[0] == len(value) - 4
    assert apply_json_diff(doc({"a": 1}), value[4:]) == '{"a": 2}'
    with pytest.raises(JsonDiffError, match="unknown operation"):
        apply_json_diff(doc({"a": 1}), value)  # the length's low byte read as an operation


# --- REPLACE -------------------------------------------------------------------------------

def test_replace_a_scalar_at_a_nested_path() -> None:
    before = {"a": {"b": [10, 20, {"c": "old"}]}, "z": 1}
    assert apply(before, replace("$.a.b[2].c", "new")) == \
        '{"a": {"b": [10, 20, {"c": "new"}]}, "z": 1}'
    assert apply(before, replace("$.a.b[0]", [1, 2])) == \
        '{"a": {"b": [[1, 2], 20, {"c": "old"}]}, "z": 1}'


def test_replace_keeps_the_members_place() -> None:
    assert apply({"a": 1, "bb": 2, "ccc": 3}, replace("$.bb", {"n": None})) == \
        '{"a": 1, "bb": {"n": null}, "ccc": 3}'


def test_replace_at_the_root_is_refused_as_mysql_refuses_it() -> None:
    # apply_json_diffs rejects a path without legs for every operation (MySQL's own unit test
    # json_diff-t.cc expects REJECTED), and MySQL never logs one
    for diff in (replace("$", 1), insert("$", 1), remove("$")):
        with pytest.raises(JsonDiffError, match=r"diff 0 \((REPLACE|INSERT|REMOVE) '\$'\).*root"):
            apply([1, 2, 3], diff)


def test_new_values_are_rendered_the_mysql_way() -> None:
    datetime = ((((2024 * 13 + 1) << 5 | 31) << 17 | 12 << 12 | 34 << 6 | 56) << 24) + 500000
    assert apply({"d": 0}, replace("$.d", 1e-5)) == '{"d": 0.00001}'
    assert apply({"d": 0}, replace("$.d", 100.0)) == '{"d": 100.0}'
    assert apply({"d": 0}, replace("$.d", 1e15)) == '{"d": 1e15}'
    assert apply({"d": 0}, replace("$.d", Opaque(246, b"\x05\x02\x80\x01\x32"))) == \
        '{"d": 1.50}'
    assert apply({"d": 0}, replace("$.d", Opaque(12, struct.pack("<q", datetime)))) == \
        '{"d": "2024-01-31 12:34:56.500000"}'
    assert apply([0], insert("$[1]", Opaque(15, b"\x00\xff"))) == '[0, "base64:type15:AP8="]'
    assert apply([0], replace("$[0]", 18446744073709551615)) == "[18446744073709551615]"
    assert apply([0], replace("$[0]", "tab\there")) == '["tab\\there"]'


# --- INSERT --------------------------------------------------------------------------------

def test_insert_a_member_where_mysql_orders_it() -> None:
    before = {"a": 1, "ccc": 3, "bb": 2}  # stored as a, bb, ccc
    assert apply(before, insert("$.dd", 4)) == '{"a": 1, "bb": 2, "dd": 4, "ccc": 3}'
    assert apply(before, insert("$.b", 0)) == '{"a": 1, "b": 0, "bb": 2, "ccc": 3}'
    assert apply(before, insert("$.ba", 0)) == '{"a": 1, "ba": 0, "bb": 2, "ccc": 3}'
    assert apply(before, insert("$.zzzz", 0)) == '{"a": 1, "bb": 2, "ccc": 3, "zzzz": 0}'
    # length in UTF-8 bytes: "é" is 2 bytes, sorted with "bb", after it bytewise
    assert apply(before, insert("$.é", 5)) == '{"a": 1, "bb": 2, "é": 5, "ccc": 3}'
    assert apply({}, insert("$.k", [])) == '{"k": []}'


def test_insert_into_an_array_at_the_start_middle_and_past_the_end() -> None:
    before = {"a": [1, 2, 3]}
    assert apply(before, insert("$.a[0]", 0)) == '{"a": [0, 1, 2, 3]}'
    assert apply(before, insert("$.a[2]", 9)) == '{"a": [1, 2, 9, 3]}'
    assert apply(before, insert("$.a[3]", 4)) == '{"a": [1, 2, 3, 4]}'
    assert apply(before, insert("$.a[4294967295]", 4)) == '{"a": [1, 2, 3, 4]}'
    assert apply({"a": []}, insert("$.a[2]", 3)) == '{"a": [3]}'


def test_last_legs_count_from_the_end() -> None:
    # JSON_SET(doc, '$[last]', v) logs [last]; not found (an empty array) it logs an INSERT
    assert apply([1, 2, 3], replace("$[last]", 9)) == "[1, 2, 9]"
    assert apply([1, 2, 3], replace("$[last-2]", 9)) == "[9, 2, 3]"
    assert apply([1, 2, 3], remove("$[last-1]")) == "[1, 3]"
    assert apply([], insert("$[last]", 7)) == "[7]"
    assert apply([1, 2], insert("$[last]", 7)) == "[1, 7, 2]"
    # [last-n] past the start: Json_array_index puts it at 0
    assert apply([1, 2], insert("$[last-5]", 0)) == "[0, 1, 2]"
    with pytest.raises(JsonDiffError, match=r"leg 1 \[last-2\]: out of bounds"):
        apply([1, 2], replace("$[last-2]", 0))


# --- REMOVE --------------------------------------------------------------------------------

def test_remove_a_member_and_an_array_element() -> None:
    before = {"a": {"b": 3, "c": 1}, "l": [1, [2, 3], 4]}
    assert apply(before, remove("$.a.b")) == '{"a": {"c": 1}, "l": [1, [2, 3], 4]}'
    assert apply(before, remove("$.l[1]")) == '{"a": {"b": 3, "c": 1}, "l": [1, 4]}'
    assert apply(before, remove("$.l[1][0]")) == '{"a": {"b": 3, "c": 1}, "l": [1, [3], 4]}'
    assert apply({"a": 1}, remove("$.a")) == "{}"


# --- paths ---------------------------------------------------------------------------------

def test_quoted_member_names_with_escapes_and_non_ascii() -> None:
    before = {"a b": 1, 'q"\\': 2, "line\nbreak": 3, "é": 4, "😀": 5, "": 6}
    assert apply(before, replace('$."a b"', 10)).count('"a b": 10') == 1
    assert '"q\\"\\\\": 20' in apply(before, replace('$."q\\"\\\\"', 20))
    assert '"line\\nbreak": 30' in apply(before, replace('$."line\\nbreak"', 30))
    assert '"é": 40' in apply(before, replace('$."\\u00e9"', 40))
    assert '"é": 41' in apply(before, replace("$.é", 41))
    assert '"😀": 50' in apply(before, replace('$."\\ud83d\\ude00"', 50))
    assert '"": 60' in apply(before, replace('$.""', 60))
    assert apply(before, remove('$."a b"')) == \
        '{"": 6, "é": 4, "q\\"\\\\": 2, "😀": 5, "line\\nbreak": 3}'


def test_whitespace_between_path_tokens_is_mysqls_grammar() -> None:
    assert apply({"a": [1, 2]}, replace(" $ .a [ 1 ] ", 0)) == '{"a": [1, 0]}'
    assert apply([1, 2, 3], remove("$[last - 1]")) == "[1, 3]"
    assert apply([1, 2], replace("$[001]", 0)) == "[1, 0]"


# --- sequences -----------------------------------------------------------------------------

def test_several_operations_apply_in_order() -> None:
    # JSON_SET(j, '$.n', JSON_OBJECT('x', 1), '$.n.x', 2), then JSON_REMOVE(.., '$.l[0]')
    diffs = (insert("$.n", {"x": 1}), replace("$.n.x", 2), remove("$.l[0]"),
             insert("$.l[5]", "end"), replace("$.l[0]", "first"))
    assert apply({"l": [1, 2, 3]}, *diffs) == '{"l": ["first", 3, "end"], "n": {"x": 2}}'
    # each diff sees the document the previous one left (MySQL's own test case)
    assert apply([1, 2, 3, 4, 5, 6], remove("$[2]"), remove("$[3]")) == "[1, 2, 4, 6]"


def test_a_large_document_is_read_only_where_the_path_goes() -> None:
    before = {f"key{i:04d}": {"v": [i, f"text {i}"]} for i in range(2000)}
    data = doc(before)
    assert data[0] == 0x01  # the large object format
    got = apply(before, replace("$.key1234.v[1]", 1.5), insert("$.key0007.w", None))
    changed = dict(before, key1234={"v": [1234, 1.5]}, key0007={"v": [7, "text 7"], "w": None})
    assert got == text(changed)
    assert '"key0007": {"v": [7, "text 7"], "w": null}' in got


def test_long_paths_and_values_use_longer_packed_lengths() -> None:
    key = "k" * 300
    value = "v" * 70000
    assert apply({key: 0}, replace(f"$.{key}", value)) == f'{{"{key}": "{value}"}}'


# --- what cannot be applied exactly ---------------------------------------------------------

@pytest.mark.parametrize(("before", "diff", "message"), [
    ({"a": 1}, replace("$.b", 2), r"diff 0 \(REPLACE '\$\.b'\): leg 1 \.\"b\": no such member"),
    ({"a": [1]}, replace("$.a[1]", 2), r"leg 2 \[1\]: out of bounds of an array of 1"),
    ({"a": [1]}, remove("$.a[1]"), r"REMOVE '\$\.a\[1\]'\): leg 2 \[1\]: out of bounds"),
    ({"a": 1}, remove("$.b"), r"leg 1 \.\"b\": no such member"),
    ({"a": 1}, replace("$.a.b", 2), r"leg 2 \.\"b\": needs an object, found the scalar 1"),
    ({"a": [1]}, replace("$.a.b", 2), r"leg 2 \.\"b\": needs an object, found an array"),
    ({"a": {"b": 1}}, replace("$.a[0]", 2), r"leg 2 \[0\]: needs an array, found an object"),
    ({"a": {"b": 1}}, insert("$.a[0]", 2), r"INSERT '\$\.a\[0\]'\): leg 2 \[0\]: needs an array"),
    ({"a": [1]}, insert("$.a.b", 2), r"leg 2 \.\"b\": needs an object, found an array"),
    ({"a": 1}, insert("$.x.y", 2), r"leg 1 \.\"x\": no such member"),
    ({"a": 1}, insert("$.a", 2), r"member 'a' to insert already exists"),
    ("s", remove("$[0]"), r"leg 1 \[0\]: needs an array, found the scalar \"s\""),
])
def test_a_diff_that_does_not_fit_the_document_is_an_error(
        before: Any, diff: bytes, message: str) -> None:
    with pytest.raises(JsonDiffError, match=message):
        apply(before, diff)


def test_the_error_names_the_diff_that_failed() -> None:
    with pytest.raises(JsonDiffError, match=r"^diff 2 \(REMOVE '\$\.gone'\)"):
        apply({"a": 1}, replace("$.a", 2), insert("$.b", 3), remove("$.gone"))


@pytest.mark.parametrize(("path", "message"), [
    ("$.*", r"wildcard \.\*"),
    ("$[*]", r"wildcard \[\*\]"),
    ("$**.a", r"wildcard \*\*"),
    ("$.a[1 to 2]", r"array range"),
    ("$[last-1 to last]", r"array range"),
    ("a", r"a path starts with \$ at character 0"),
    ("", r"a path starts with \$"),
    ('$."a', r"unterminated quoted member name at character 2"),
    ('$."a\\"', r"unterminated"),
    ("$.", r"member name missing"),
    ("$.a.", r"member name missing at character 4"),
    ("$[", r"array index expected"),
    ("$[x]", r"array index expected"),
    ("$[\u0661]", r"array index expected"),  # a digit, but not an ASCII one
    ("$[-1]", r"array index expected"),
    ("$[1", r"\] expected"),
    ("$[1 2]", r"\] expected"),
    ("$[4294967296]", r"array index 4294967296 is above 4294967295"),
    ("$a", r"unexpected 'a' at character 1"),
    ('$."a"b', r"unexpected 'b'"),
    ('$."\\x"', r"bad member name"),
    ('$."\\ud800"', r"bad member name"),
    ('$."tab\there"', r"bad member name"),
    ('$.a"b', r"bad member name"),
])
def test_malformed_and_wildcard_paths_are_errors(path: str, message: str) -> None:
    with pytest.raises(JsonDiffError, match=r"diff 0 \(REPLACE .*\): malformed path: " + message):
        apply({"a": [1, 2, 3]}, op(REPLACE, path, doc(1)))


@pytest.mark.parametrize(("diff", "message"), [
    (b"\x03\x01$", r"diff 0 at byte 0: unknown operation 3"),
    (replace("$.a", 1) + b"\x7f", r"diff 1 at byte \d+: unknown operation 127"),
    (b"\x00", r"diff 0 at byte 0: the path's length is missing"),
    (b"\x00\x05$.a", r"the path needs 5 bytes, 3 are left"),
    (b"\x00\xfb", r"bad packed length byte 0xfb for the path"),
    (b"\x00\xfc\x01", r"the path's length is truncated"),
    (b"\x00\x02\xff\xfe", r"\(REPLACE '\\udcff\\udcfe'\): malformed path: a path starts"),
    (b"\x00\x04$.\xc3\x28" + doc(1), r"malformed path: bad member name"),
    (b"\x00\x05$.\xed\xa0\x80" + doc(1), r"malformed path: bad member name"),
    (op(INSERT, "$.a") , r"diff 0 \(INSERT '\$\.a'\): the value's length is missing"),
    (op(REPLACE, "$.a") + b"\x09\x0b\x00", r"the value needs 9 bytes, 2 are left"),
    (op(REPLACE, "$.a", b"\x0b\x00\x00"), r"diff 0 \(REPLACE '\$\.a'\): value: "),
    (op(REPLACE, "$.a", b"\x0e\x00"), r"value: unknown binary JSON type 0xe"),
    (op(REPLACE, "$.a", b"\x0c\x02\xff\xfe"), r"value: malformed binary JSON"),
    (op(REPLACE, "$.a", b"\x02\x01\x00\x07\x00\x0c\x20\x00"), r"value: malformed"),
])
def test_a_malformed_diff_vector_is_an_error(diff: bytes, message: str) -> None:
    with pytest.raises(JsonDiffError, match=message):
        apply({"a": [1, 2, 3]}, diff)


def test_a_malformed_value_is_refused_even_when_a_later_diff_removes_it() -> None:
    # MySQL reads (and so checks) the whole vector before applying any of it
    with pytest.raises(JsonDiffError, match=r"diff 0 \(INSERT '\$\.b'\): value"):
        apply({"a": 1}, op(INSERT, "$.b", b"\x0b\x00"), remove("$.b"))


def test_a_broken_before_image_is_an_error_not_a_guess() -> None:
    broken = doc({"a": [1, 2], "b": "x"})[:-3]
    with pytest.raises(JsonDiffError, match="before image"):
        apply_json_diff(broken, column(replace("$.a[0]", 0))[4:])
    with pytest.raises(JsonDiffError, match="before image"):
        apply_json_diff(broken, b"")
    with pytest.raises(JsonDiffError, match="before image"):
        apply_json_diff(b"\x0b\x00", b"")
