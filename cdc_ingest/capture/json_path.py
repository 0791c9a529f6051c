"""MySQL's JSON path grammar, for the one path each partial JSON diff names
(:mod:`cdc_ingest.capture.json_diff`): ``$`` then ``.name``, ``."name"``, ``[n]``, ``[last]``,
``[last-n]``, spaces between tokens; wildcards and ranges refused."""

from __future__ import annotations

import functools
import json
from typing import NamedTuple

SPACE = " \t\n\v\f\r"  # my_isspace in utf8mb4
_MAX_INDEX = 0xFFFFFFFF  # MySQL reads an array index as a uint32


class Cell(NamedTuple):
    """An array leg: ``[n]``, or ``[last-n]`` when counted from the end."""

    n: int
    from_end: bool

    def position(self, size: int) -> int:
        """Json_array_index: where the leg points in an array of ``size`` elements."""
        if self.from_end:
            return size - self.n - 1 if self.n < size else 0
        return min(self.n, size)

    def __str__(self) -> str:
        return f"[{self.n}]" if not self.from_end else f"[last-{self.n}]" if self.n else "[last]"


Leg = str | Cell  # a member name or an array leg


class PathError(Exception):
    def __init__(self, why: str, at: int) -> None:
        super().__init__(f"{why} at character {at}")


def _skip(path: str, at: int) -> int:
    while at < len(path) and path[at] in SPACE:
        at += 1
    return at


@functools.lru_cache(maxsize=4096)
def parse_path(path: str) -> tuple[Leg, ...]:
    """MySQL's parse_path, for the paths a diff can hold (see the module docstring); cached:
    the rows of one statement repeat its paths (a bad one raises every time)."""
    at = _skip(path, 0)
    if not path.startswith("$", at):
        raise PathError("a path starts with $", at)
    legs: list[Leg] = []
    at = _skip(path, at + 1)
    while at < len(path):
        if path[at] == ".":
            at = _member(path, _skip(path, at + 1), legs)
        elif path[at] == "[":
            at = _cell(path, _skip(path, at + 1), legs)
        elif path[at] == "*":
            raise PathError("wildcard ** (a diff's path names one value)", at)
        else:
            raise PathError(f"unexpected {path[at]!r}", at)
        at = _skip(path, at)
    return tuple(legs)


def _member(path: str, at: int, legs: list[Leg]) -> int:
    if path.startswith("*", at):
        raise PathError("wildcard .* (a diff's path names one value)", at)
    end = at
    if path.startswith('"', at):
        end += 1
        while end < len(path) and path[end] != '"':
            end += 2 if path[end] == "\\" else 1
        if end >= len(path):
            raise PathError("unterminated quoted member name", at)
        end += 1
        quoted = path[at:end]
    else:
        while end < len(path) and path[end] not in SPACE + "[.*":
            end += 1
        if end == at:
            raise PathError("member name missing", at)
        quoted = f'"{path[at:end]}"'
    try:
        name = json.loads(quoted)
        name.encode("utf-8")
    except ValueError as exc:  # JSONDecodeError; UnicodeEncodeError (a lone surrogate)
        raise PathError(f"bad member name {path[at:end]!r} ({exc})", at) from exc
    legs.append(name)
    return end


def _cell(path: str, at: int, legs: list[Leg]) -> int:
    """An array leg after its ``[``: ``n]``, ``last]`` or ``last-n]``."""
    if path.startswith("*", at):
        raise PathError("wildcard [*] (a diff's path names one value)", at)
    from_end = path.startswith("last", at)
    at = _skip(path, at + 4) if from_end else at
    digits = not from_end or path.startswith("-", at)
    at = _skip(path, at + 1) if from_end and digits else at
    end = at
    while digits and end < len(path) and "0" <= path[end] <= "9":
        end += 1
    if digits and end == at:
        raise PathError("array index expected", at)
    n = int(path[at:end]) if digits else 0
    if n > _MAX_INDEX:
        raise PathError(f"array index {n} is above {_MAX_INDEX}", at)
    at = _skip(path, end)
    if path.startswith("to", at) and path[at - 1] in SPACE:
        raise PathError("array range [m to n] (a diff's path names one value)", at)
    if not path.startswith("]", at):
        raise PathError("] expected", at)
    legs.append(Cell(n, from_end))
    return at + 1
