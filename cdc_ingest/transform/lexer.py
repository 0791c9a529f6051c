"""Transform expression text -> tokens (Calcite's lexical rules, the part Flink CDC uses)."""

from __future__ import annotations

import re


class ExpressionError(ValueError):
    """A projection or filter that cannot be read or compiled; the message says where."""


_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<number>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
  | (?P<string>'(?:[^']|'')*')
  | (?P<quoted>`(?:[^`]|``)+`)
  | (?P<name>[A-Za-z_][A-Za-z0-9_$]*)
  | (?P<op>\|\||<>|!=|<=|>=|\\\*|[=<>+\-*/%(),])
""", re.VERBOSE)

KEYWORDS = frozenset({
    "AND", "OR", "NOT", "IS", "NULL", "TRUE", "FALSE", "UNKNOWN", "BETWEEN", "IN", "LIKE",
    "ESCAPE", "CASE", "WHEN", "THEN", "ELSE", "END", "CAST", "AS", "DISTINCT", "FROM", "FOR",
    "SYMMETRIC", "ASYMMETRIC", "SIMILAR", "TO",
})
METADATA = ("__namespace_name__", "__schema_name__", "__table_name__", "__data_event_type__")
COMPARISONS = {"=": "=", "<>": "<>", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) pairs: ``number``, ``string``, ``name`` (unquoted), ``quoted``, ``op``,
    ``kw``; ``end`` last."""
    out: list[tuple[str, str]] = []
    at = 0
    while at < len(text):
        match = _TOKEN.match(text, at)
        if match is None:
            raise ExpressionError(f"unexpected character {text[at]!r} at position {at + 1}")
        kind = match.lastgroup or ""
        word = match.group()
        at = match.end()
        if kind == "space":
            continue
        if kind == "name" and word.upper() in KEYWORDS:
            out.append(("kw", word.upper()))
        elif kind == "quoted":
            out.append(("name", word[1:-1].replace("``", "`")))
        elif kind == "string":
            out.append(("string", word[1:-1].replace("''", "'")))
        elif word == "\\*":
            out.append(("op", "*"))
        else:
            out.append((kind, word))
    out.append(("end", ""))
    return out
