"""Which tables a DDL statement touches (enough to route it; not a SQL parser)."""

from __future__ import annotations

import re

_NAME = r"(?:`(?:[^`]|``)+`|[\w$]+)"
_QUALIFIED = rf"{_NAME}(?:\s*\.\s*{_NAME})?"
_TABLE_DDL = re.compile(
    rf"^\s*(?:CREATE(?:\s+OR\s+REPLACE)?(?:\s+TEMPORARY)?|ALTER(?:\s+ONLINE)?(?:\s+IGNORE)?|DROP"
    rf"(?:\s+TEMPORARY)?|TRUNCATE)\s+TABLE\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?"
    rf"(?P<names>{_QUALIFIED}(?:\s*,\s*{_QUALIFIED})*)",
    re.IGNORECASE,
)
_TRUNCATE_SHORT = re.compile(rf"^\s*TRUNCATE\s+(?P<names>{_QUALIFIED})", re.IGNORECASE)
_RENAME = re.compile(r"^\s*RENAME\s+TABLES?\s+(?P<pairs>.+)$", re.IGNORECASE | re.DOTALL)
_PAIR = re.compile(rf"(?P<a>{_QUALIFIED})\s+TO\s+(?P<b>{_QUALIFIED})", re.IGNORECASE)
_SPLIT = re.compile(rf"{_NAME}")


def _unquote(name: str) -> str:
    name = name.strip()
    if name.startswith("`"):
        return name[1:-1].replace("``", "`")
    return name


def _qualified(text: str, default_db: str) -> tuple[str, str]:
    parts = [_unquote(p) for p in _SPLIT.findall(text)]
    if len(parts) >= 2:
        return parts[0], parts[1]
    return default_db, parts[0]


def tables_of(sql: str, default_db: str) -> list[tuple[str, str]]:
    """(db, table) pairs a DDL statement changes; empty for anything else."""
    body = re.sub(r"/\*.*?\*/", " ", sql, flags=re.DOTALL)
    match = _TABLE_DDL.match(body) or _TRUNCATE_SHORT.match(body)
    if match:
        names = re.findall(_QUALIFIED, match.group("names"))
        return [_qualified(n, default_db) for n in names]
    rename = _RENAME.match(body)
    if rename:
        out: list[tuple[str, str]] = []
        for pair in _PAIR.finditer(rename.group("pairs")):
            out.append(_qualified(pair.group("a"), default_db))
            out.append(_qualified(pair.group("b"), default_db))
        return out
    return []


_ACTION = re.compile(
    r"^\s*(?P<verb>CREATE|ALTER|DROP|TRUNCATE|RENAME)\b(?P<rest>.*)$", re.IGNORECASE | re.DOTALL
)
_OR_REPLACE = re.compile(r"^\s*OR\s+REPLACE\b", re.IGNORECASE)


def action_of(sql: str) -> str:
    """What a table DDL statement does: ``truncate``, ``drop``, ``replace`` (MariaDB's
    ``CREATE OR REPLACE TABLE``: the old table and its rows are gone), ``create``, ``alter``,
    ``rename``; ``other`` for anything else."""
    body = re.sub(r"/\*.*?\*/", " ", sql, flags=re.DOTALL)
    match = _ACTION.match(body)
    if match is None:
        return "other"
    verb = match.group("verb").lower()
    if verb == "create" and _OR_REPLACE.match(match.group("rest")):
        return "replace"
    return verb
