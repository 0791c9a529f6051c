"""A MySQL partial JSON update applied to the old document: the full new document's text.

With ``binlog_row_value_options=PARTIAL_JSON``, MySQL may log an UPDATE as a
PARTIAL_UPDATE_ROWS_EVENT whose after image holds, for a JSON column, a diff vector instead of
the document. The bytes (MySQL 8.0 to 9.x: sql/rpl_record.cc ``pack_row``, sql/field.cc
``Field_json::pack_diff``, sql-common/json_diff.cc, formerly sql/json_diff.cc):

* The after image starts with ``value_options``, a packed integer: 1 (PARTIAL_JSON) when a
  JSON column of the row is a diff, else 0. When 1, ``partial_bits`` follow: ceil(J / 8) bytes,
  a bit per JSON column *of the table* (all J, in column order, in the image or not), lowest
  bit first, set for a diff. Then null bits and values as usual.
* A diff column's value is exactly ``Json_diff_vector::write_binary``'s output: a 4-byte
  little-endian length L, then L bytes of diffs. That length is the vector's own and the only
  one, so the value is framed like a full JSON value, and ``diff`` here is those L bytes,
  ``row[pos + 4:pos + 4 + L]``. L = 0 (an empty vector) means unchanged.
* Each diff (``Json_diff::write_binary``): the operation byte (0 REPLACE, 1 INSERT, 2 REMOVE);
  the path's length, packed, then the path as text; except for REMOVE, the value's length,
  packed, then the value in binary JSON. Packed (``net_store_length``): one byte below 251,
  else 252 + 2 bytes, 253 + 3 bytes or 254 + 8 bytes, little-endian.

The path is ``Json_path::to_string`` (sql-common/json_path.cc): ``$`` then ``.name`` (an
ECMAScript identifier), ``."name"`` (JSON string escapes), ``[n]``, ``[last]``, ``[last-n]``:
the path JSON_SET / JSON_REPLACE / JSON_REMOVE got, auto-wrapping legs dropped (so ``last``
can appear), or where JSON_SET wrapped a value into an array. They refuse wildcards and ranges;
we read MySQL's grammar (spaces between tokens too), refuse ``.*``, ``[*]``, ``**``, ``[m to
n]``, and do not re-check unquoted names (MySQL writes only what its parser reads back).

Applying follows ``apply_json_diff`` (sql-common/json_diff.cc) and ``apply_json_diffs``
(sql/item_json_func.cc, formerly sql/json_diff.cc), one diff after the other. Paths are
followed exactly, never auto-wrapping: ``.name`` only into an object having that member, an
array leg only into an array and within bounds (``[last-n]``: element size-1-n).

* REPLACE: the value at the path must exist; it is replaced where it is.
* INSERT: the path but its last leg must exist. Object, name leg: the member must not exist;
  it goes where MySQL orders keys (shorter UTF-8 first, then bytewise). Array, array leg: in at
  ``[n]`` clamped to the size (appends), ``[last-n]`` at size-1-n or 0 when n >= size.
* REMOVE: the member (name leg, object) or element (array leg, array, in bounds) must exist.
* The root path ``$`` is refused whatever the operation: MySQL rejects it when applying and
  never logs it (a whole new document is logged in full).

Anything else (path not found, wrong leg, member to insert exists, unknown operation, bad
path, length or value) raises ``JsonDiffError`` naming the diff, where a replica would stop.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from cdc_ingest.capture.json_path import Cell, Leg, PathError, parse_path
from cdc_ingest.capture.mysql_json import (
    Compiled,
    JsonBinaryError,
    Node,
    Unread,
    expand,
    json_tree,
    render,
)
from cdc_ingest.mysql.packed import packed_int

REPLACE, INSERT, REMOVE = 0, 1, 2


class JsonDiffError(ValueError):
    """A partial JSON update that cannot be applied exactly."""




class _Diff(NamedTuple):
    where: str  # "diff <index> (<OPERATION> '<path>')", for messages
    operation: int
    legs: tuple[Leg, ...]
    value: Node


def apply_json_diff(before: bytes, diff: bytes, fast: Compiled | None = None) -> str:
    """The JSON text of ``before`` (binary JSON) changed by ``diff`` (a diff vector's body);
    ``fast`` (``mysql_json.Compiled``) reads the bytes, the same text and errors as without."""
    diffs = _read(diff, fast)
    where = "before image"
    try:
        box: list[Node] = [json_tree(before, fast)]
        for each in diffs:
            where = f"{each.where}: before image"
            _apply(box, each, fast)
        where = "before image"
        return render(box[0], fast)
    except JsonBinaryError as exc:
        raise JsonDiffError(f"{where}: {exc}") from exc


def _read(diff: bytes, fast: Compiled | None) -> list[_Diff]:
    """Every diff of the vector, checked as MySQL's read_binary does before applying any."""
    out: list[_Diff] = []
    at = 0
    while at < len(diff):
        where = f"diff {len(out)} at byte {at}"
        operation = diff[at]
        if operation > REMOVE:
            raise JsonDiffError(f"{where}: unknown operation {operation} "
                                "(0 REPLACE, 1 INSERT, 2 REMOVE)")
        raw, at = _field(diff, at + 1, where, "path")
        # bytes that are not UTF-8 become lone surrogates: no name has one, no token is one
        path = raw.decode("utf-8", "surrogateescape")
        where = f"diff {len(out)} ({('REPLACE', 'INSERT', 'REMOVE')[operation]} {path!r})"
        try:
            legs = parse_path(path)
        except PathError as exc:
            raise JsonDiffError(f"{where}: malformed path: {exc}") from exc
        value: Node = ""
        if operation != REMOVE:
            raw, at = _field(diff, at, where, "value")
            try:
                value = json_tree(raw, fast)
                render(value, fast)  # MySQL parses the value before applying anything
            except JsonBinaryError as exc:
                raise JsonDiffError(f"{where}: value: {exc}") from exc
        out.append(_Diff(where, operation, legs, value))
    return out


def _field(data: bytes, at: int, where: str, what: str) -> tuple[bytes, int]:
    """A packed length then that many bytes: (the bytes, offset after them)."""
    if at >= len(data):
        raise JsonDiffError(f"{where}: the {what}'s length is missing (diff vector ends)")
    try:
        length, start = packed_int(data, at)
    except ValueError as exc:  # no packed integer starts with 0xFB or 0xFF; else truncated
        problem = (f"bad packed length byte {data[at]:#x} for the {what}"
                   if data[at] in (0xFB, 0xFF) else f"the {what}'s length is truncated")
        raise JsonDiffError(f"{where}: {problem}") from exc
    if start + length > len(data):
        raise JsonDiffError(f"{where}: the {what} needs {length} bytes, "
                            f"{len(data) - start} are left")
    return data[start:start + length], start + length


def _apply(box: list[Node], diff: _Diff, fast: Compiled | None) -> None:
    if not diff.legs:
        raise JsonDiffError(f"{diff.where}: MySQL applies no diff at the root path $")
    parent = _seek(box, diff, fast)
    last = diff.legs[-1]
    if diff.operation == INSERT:
        if isinstance(parent, dict) and isinstance(last, str):
            if last in parent:
                raise JsonDiffError(f"{diff.where}: member {last!r} to insert already exists")
            items = sorted([*parent.items(), (last, diff.value)],
                           key=lambda item: (len(key := item[0].encode()), key))
            parent.clear()
            parent.update(items)
        elif isinstance(parent, list) and isinstance(last, Cell):
            parent.insert(last.position(len(parent)), diff.value)
        else:
            raise JsonDiffError(f"{diff.where}: {_miss(parent, last, len(diff.legs))}")
        return
    slot = _slot(parent, last)
    if slot is None:
        raise JsonDiffError(f"{diff.where}: {_miss(parent, last, len(diff.legs))}")
    if diff.operation == REPLACE:
        parent[slot] = diff.value
    else:
        del parent[slot]


def _seek(box: list[Node], diff: _Diff, fast: Compiled | None) -> Any:
    """The value at the diff's path without its last leg, read (expanded) if a container."""
    holder: Any = box
    slot: int | str = 0
    for number, leg in enumerate(diff.legs[:-1], start=1):
        node = _open(holder, slot, fast)
        found = _slot(node, leg)
        if found is None:
            raise JsonDiffError(f"{diff.where}: {_miss(node, leg, number)}")
        holder, slot = node, found
    return _open(holder, slot, fast)


def _open(holder: Any, slot: int | str, fast: Compiled | None) -> Node:
    node: Node = holder[slot]
    if isinstance(node, Unread):
        node = holder[slot] = expand(node, fast)
    return node


def _slot(node: Node, leg: Leg) -> int | str | None:
    """Where ``leg`` points in ``node`` (seek_exact_path), or None: not there."""
    if isinstance(leg, str):
        return leg if isinstance(node, dict) and leg in node else None
    if isinstance(node, list) and leg.n < len(node):
        return leg.position(len(node))
    return None


def _miss(node: Node, leg: Leg, number: int) -> str:
    """Why leg ``number`` (1-based) found nothing in ``node``."""
    shown = f"leg {number} " + (f".{json.dumps(leg, ensure_ascii=False)}"
                                if isinstance(leg, str) else str(leg))
    if isinstance(leg, str) and isinstance(node, dict):
        return f"{shown}: no such member in the object"
    if isinstance(leg, Cell) and isinstance(node, list):
        return f"{shown}: out of bounds of an array of {len(node)}"
    found = ("an object" if isinstance(node, dict) else "an array" if isinstance(node, list)
             else f"the scalar {node[:40]}")
    return f"{shown}: needs {'an object' if isinstance(leg, str) else 'an array'}, found {found}"
