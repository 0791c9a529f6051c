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
_ALTER = re.compile(rf"^\s*ALTER(?:\s+ONLINE)?(?:\s+IGNORE)?\s+TABLE\s+(?:IF\s+EXISTS\s+)?"
                    rf"(?P<name>{_QUALIFIED})", re.IGNORECASE)
# ALTER TABLE's table rename, not RENAME COLUMN / INDEX / KEY ... TO
_ALTER_RENAME = re.compile(
    rf"(?:^|,)\s*RENAME\s+(?:(?:TO|AS)\s+)?(?!(?:COLUMN|INDEX|KEY)\b)(?P<b>{_QUALIFIED})\s*"
    r"(?:,|$)", re.IGNORECASE)
_DROP_DATABASE = re.compile(rf"^\s*DROP\s+(?:DATABASE|SCHEMA)\s+(?:IF\s+EXISTS\s+)?(?P<db>{_NAME})",
                            re.IGNORECASE)
_QUOTED = re.compile(r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.|\"\")*\"")


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


def _body(sql: str) -> str:
    """The statement without comments."""
    return re.sub(r"/\*.*?\*/", " ", sql, flags=re.DOTALL)


def tables_of(sql: str, default_db: str) -> list[tuple[str, str]]:
    """(db, table) pairs a DDL statement changes, each once, in the order named; empty for
    anything else. A rename names both the old and the new names."""
    body = _body(sql)
    out: list[tuple[str, str]] = []
    match = _TABLE_DDL.match(body) or _TRUNCATE_SHORT.match(body)
    if match:
        out = [_qualified(n, default_db) for n in re.findall(_QUALIFIED, match.group("names"))]
    for old, new in renames(sql, default_db):
        out += [old, new]
    return list(dict.fromkeys(out))


def renames(sql: str, default_db: str) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """(old, new) names of each table a statement renames, in order: ``RENAME TABLE a TO b,
    c TO d`` (applied left to right, so a swap ``t TO t_old, t_new TO t`` is two pairs) and
    ``ALTER TABLE a ... RENAME [TO|AS] b``; empty for anything else."""
    body = _body(sql)
    rename = _RENAME.match(body)
    if rename:
        return [(_qualified(p.group("a"), default_db), _qualified(p.group("b"), default_db))
                for p in _PAIR.finditer(rename.group("pairs"))]
    alter = _ALTER.match(body)
    if alter:
        # quoted text (a comment, a default) cannot rename anything
        specs = _QUOTED.sub("''", body[alter.end():])
        to = _ALTER_RENAME.search(specs)
        if to:
            return [(_qualified(alter.group("name"), default_db),
                     _qualified(to.group("b"), default_db))]
    return []


def dropped_database(sql: str) -> str | None:
    """The database ``DROP DATABASE`` / ``DROP SCHEMA`` drops, with every table in it."""
    match = _DROP_DATABASE.match(_body(sql))
    return _unquote(match.group("db")) if match else None


def arrivals(sql: str, default_db: str) -> list[tuple[str, str]]:
    """The names a statement renames tables to that still name a table after it (a pair
    applied later may move a table on again: ``a TO tmp, b TO a, tmp TO b``)."""
    now: dict[tuple[str, str], None] = {}
    for old, new in renames(sql, default_db):
        now.pop(old, None)
        now[new] = None
    return list(now)


_ACTION = re.compile(
    r"^\s*(?P<verb>CREATE|ALTER|DROP|TRUNCATE|RENAME)\b(?P<rest>.*)$", re.IGNORECASE | re.DOTALL
)
_OR_REPLACE = re.compile(r"^\s*OR\s+REPLACE\b", re.IGNORECASE)


def action_of(sql: str) -> str:
    """What a table DDL statement does: ``truncate``, ``drop``, ``replace`` (MariaDB's
    ``CREATE OR REPLACE TABLE``: the old table and its rows are gone), ``create``, ``alter``,
    ``rename`` (also ``ALTER TABLE ... RENAME TO``); ``other`` for anything else."""
    match = _ACTION.match(_body(sql))
    if match is None:
        return "other"
    verb = match.group("verb").lower()
    if verb == "alter" and renames(sql, ""):
        return "rename"  # ALTER TABLE a RENAME TO b, alone or with other changes
    if verb == "create" and _OR_REPLACE.match(match.group("rest")):
        return "replace"
    return verb
