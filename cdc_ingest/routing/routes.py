"""Route rules compiled once and resolved once per source table (Flink CDC ``TableIdRouter``).

A rule's ``source-table`` is a table selector (see :mod:`cdc_ingest.routing.selectors`). Its
``sink-table`` names the topic: with ``replace-symbol`` every occurrence of the symbol becomes
the source table name; without it, ``$1``, ``$2`` take the groups that the
source-table regex captured over ``db.table``. As in Flink CDC the two forms do not mix: a
rule with a replace-symbol takes its sink-table literally apart from the symbol.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from cdc_ingest.errors import ConfigError, ConfigProblem
from cdc_ingest.routing.selectors import TableSelector

# Only numbered groups: "${name}" in YAML is always an environment variable reference.
GROUP_REFERENCE = re.compile(r"\$(\d+)")
_CACHE_LIMIT = 65536


class RouteMode(StrEnum):
    """``pipeline.route-mode``: apply every matching rule (fan-out) or only the first one."""

    ALL_MATCH = "ALL_MATCH"
    FIRST_MATCH = "FIRST_MATCH"


class RouteLike(Protocol):
    """What :meth:`Router.from_defs` needs of a route definition (``config.RouteDef``)."""

    @property
    def source_table(self) -> str: ...
    @property
    def sink_table(self) -> str: ...
    @property
    def replace_symbol(self) -> str | None: ...


def _option(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _template(sink_table: str, selector: TableSelector, option: str) -> tuple[str | int, ...]:
    """Split ``sink_table`` into literal text and group references, checked against the regex."""
    parts: list[str | int] = []
    position = 0
    for ref in GROUP_REFERENCE.finditer(sink_table):
        parts.append(sink_table[position : ref.start()])
        number = int(ref.group(1))
        if number > selector.group_count:  # $0 is the whole db.table, as in Java
            raise ConfigError([ConfigProblem(
                option,
                f"refers to group {ref.group(0)} but the source-table regex has "
                f"{selector.group_count} capturing group(s)",
                "add a (...) group to source-table or correct the group number",
            )])
        parts.append(number)
        position = ref.end()
    parts.append(sink_table[position:])
    if "$" in "".join(part for part in parts if isinstance(part, str)):
        raise ConfigError([ConfigProblem(
            option, "has a '$' that is not a group reference",
            "write group references as $1, $2; topic names cannot contain '$'",
        )])
    return tuple(part for part in parts if part != "")


@dataclass(frozen=True)
class RouteRule:
    """One compiled route: which tables it takes and which topic name it gives them."""

    source: TableSelector
    sink_table: str
    replace_symbol: str | None = None
    path: str = field(default="", repr=False, compare=False)
    _template: tuple[str | int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.sink_table.strip():
            raise ConfigError([ConfigProblem(
                _option(self.path, "sink-table"), "is empty",
                "name the topic, e.g. sink-table: orders",
            )])
        if self.replace_symbol == "":
            raise ConfigError([ConfigProblem(
                _option(self.path, "replace-symbol"), "is empty",
                "use a placeholder such as <> (sink-table: ods.<>) or remove replace-symbol",
            )])
        template: tuple[str | int, ...] = ()
        if self.replace_symbol is None:
            template = _template(self.sink_table, self.source, _option(self.path, "sink-table"))
        object.__setattr__(self, "_template", template)  # derived once; the rule stays frozen

    @classmethod
    def compile(
        cls, source_table: str, sink_table: str, replace_symbol: str | None = None,
        path: str = "",
    ) -> RouteRule:
        """Compile one rule; problems are a :class:`ConfigError` at ``<path>.source-table`` ..."""
        source = TableSelector.parse(source_table, option=_option(path, "source-table"))
        return cls(source, sink_table, replace_symbol, path)

    def could_name(self, topic: str) -> bool:
        """Whether this rule can give some table the sink-table ``topic`` (placeholders and
        group references taken as any text)."""
        if self.replace_symbol is not None:
            parts = [re.escape(p) for p in self.sink_table.split(self.replace_symbol)]
        else:
            parts = [re.escape(p) if isinstance(p, str) else "" for p in self._template or ("",)]
        return re.fullmatch(".*".join(parts), topic, re.DOTALL) is not None

    def target(self, db: str, table: str) -> str | None:
        """The sink topic for ``db.table``, or None when this rule does not take the table."""
        if not self.source.matches(db, table):
            return None
        if self.replace_symbol is not None:
            return self.sink_table.replace(self.replace_symbol, table)
        match = self.source.match_groups(db, table)
        if match is None:  # only when a name contains dots; the selector still matched
            return self.sink_table
        return "".join(
            part if isinstance(part, str) else (match.group(part) or "")
            for part in self._template
        )


class Router:
    """Resolves source tables to sink topics; each table is resolved once and cached."""

    def __init__(self, rules: Sequence[RouteRule], mode: RouteMode = RouteMode.ALL_MATCH) -> None:
        self.rules = tuple(rules)
        self.mode = RouteMode(mode)
        self._cache: dict[tuple[str, str], tuple[str, ...]] = {}

    @classmethod
    def from_defs(
        cls, routes: Iterable[RouteLike], mode: RouteMode = RouteMode.ALL_MATCH
    ) -> Router:
        rules = [
            RouteRule.compile(r.source_table, r.sink_table, r.replace_symbol, f"route[{i}]")
            for i, r in enumerate(routes)
        ]
        return cls(rules, mode)

    def sink_topics(self, db: str, table: str) -> tuple[str, ...]:
        """Topics for a row of ``db.table``: every match (fan-out), the first, or ``db.table``."""
        key = (db, table)
        topics = self._cache.get(key)
        if topics is None:
            topics = self._resolve(db, table)
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()  # bounded memory even for unbounded table churn
            self._cache[key] = topics
        return topics

    def _resolve(self, db: str, table: str) -> tuple[str, ...]:
        found: list[str] = []
        for rule in self.rules:
            topic = rule.target(db, table)
            if topic is None:
                continue
            if topic not in found:  # two rules naming one topic must not write rows twice
                found.append(topic)
            if self.mode is RouteMode.FIRST_MATCH:
                break
        return tuple(found) or (f"{db}.{table}",)
