"""Flink CDC table selectors: the syntax of ``tables``, ``tables.exclude`` and ``source-table``.

The syntax (Flink CDC ``Selectors`` / ``TableIdRouter``), e.g. ``shop.\\.*, app.order_[0-9]+``:

* ``,`` separates alternatives; ``\\,`` is a literal comma inside a regex (``{1\\,3}``).
* In each alternative the unescaped ``.`` separates the database pattern from the table pattern.
* ``\\.`` is the regex *any character* (so ``shop.\\.*`` is every table of ``shop``); every
  other backslash escape (``\\d``, ``\\$``) is passed to the regex unchanged.
* Each pattern must match the whole name. Matching is case-sensitive, as MySQL on Linux
  (``lower_case_table_names=0``) treats ``Orders`` and ``orders`` as two tables.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cdc_ingest.errors import ConfigError, ConfigProblem

_CACHE_LIMIT = 4096
_SYNTAX_HINT = (
    "write each alternative as <db-regex>.<table-regex>, separate alternatives with ',', and "
    "write the regex 'any character' as '\\.' (for example: shop.\\.*, app.order_[0-9]+)"
)


@dataclass(frozen=True)
class _Alternative:
    db: re.Pattern[str]
    table: re.Pattern[str]


def split_unescaped(text: str, sep: str, option: str) -> list[str]:
    """Split on ``sep`` where not escaped; ``\\<sep>`` becomes the bare character."""
    parts: list[str] = []
    current: list[str] = []
    chars = iter(text)
    for char in chars:
        if char == "\\":
            escaped = next(chars, None)
            if escaped is None:
                raise _problem(option, "ends with a lone backslash", _SYNTAX_HINT)
            # Only the separator is unescaped here; other escapes belong to the regex.
            current.append(escaped if escaped == sep else "\\" + escaped)
        elif char == sep:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _split_alternatives(text: str, option: str) -> list[str]:
    # Empty alternatives ("a.b,") are skipped, as Flink CDC does.
    return [alt.strip() for alt in split_unescaped(text, ",", option) if alt.strip()]


def _problem(option: str, message: str, fix: str) -> ConfigError:
    return ConfigError([ConfigProblem(option, message, fix)])


def _compile(pattern: str, option: str, alternative: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise _problem(
            option, f"'{alternative}' is not a valid regular expression ({exc.msg})", _SYNTAX_HINT
        ) from None


def _parse_alternative(text: str, option: str) -> tuple[_Alternative, str]:
    """Return the compiled alternative and its ``(?:db)\\.(?:table)`` regex source."""
    parts = [part.strip() for part in split_unescaped(text, ".", option)]
    if len(parts) != 2 or not all(parts):
        raise _problem(
            option, f"'{text}' is not of the form <database>.<table>", _SYNTAX_HINT
        )
    db, table = parts
    return _Alternative(_compile(db, option, text), _compile(table, option, text)), (
        f"(?:{db})\\.(?:{table})"
    )


@dataclass(frozen=True)
class TableSelector:
    """A parsed selector. Equal selectors have equal ``text``; the match cache is per object."""

    text: str
    alternatives: tuple[_Alternative, ...] = field(repr=False, compare=False)
    pattern: re.Pattern[str] = field(repr=False, compare=False)
    _cache: dict[tuple[str, str], bool] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @classmethod
    def parse(cls, text: str, option: str = "tables") -> TableSelector:
        """Parse ``text``; errors are a :class:`ConfigError` at YAML path ``option``."""
        texts = _split_alternatives(text, option)
        if not texts:
            raise _problem(option, "selects no table: the value is empty", _SYNTAX_HINT)
        parsed = [_parse_alternative(alt, option) for alt in texts]
        # One regex over "db.table" with the groups numbered as Flink CDC numbers them, so a
        # route's sink-table can refer to them as $1, $2, ...
        combined = _compile("|".join(source for _, source in parsed), option, text)
        return cls(text, tuple(alt for alt, _ in parsed), combined)

    def matches(self, db: str, table: str) -> bool:
        """True if some alternative matches both the database and the table name."""
        key = (db, table)
        hit = self._cache.get(key)
        if hit is None:
            hit = any(
                alt.db.fullmatch(db) is not None and alt.table.fullmatch(table) is not None
                for alt in self.alternatives
            )
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()  # a table set this large is rare; keep memory bounded
            self._cache[key] = hit
        return hit

    def match_groups(self, db: str, table: str) -> re.Match[str] | None:
        """The full match of ``db.table`` against the combined regex, for group references."""
        return self.pattern.fullmatch(f"{db}.{table}")

    @property
    def group_count(self) -> int:
        return self.pattern.groups

    def __str__(self) -> str:
        return self.text


def table_id_selector(text: str) -> list[list[re.Pattern[str]]]:
    """A ``sink.tableId-to-topic.mapping`` selector as Flink CDC reads it: ``,`` between
    alternatives, ``.`` between the 1 to 3 parts of a table id, ``\\.`` any character; each
    part a case-insensitive regex of the whole name."""
    option = "sink.tableId-to-topic.mapping"
    return [[_compile_ci(part.strip().replace("\\.", "."), option, alternative)
             for part in split_unescaped(alternative.strip(), ".", option)]
            for alternative in split_unescaped(text, ",", option) if alternative.strip()]


def _compile_ci(pattern: str, option: str, alternative: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise _problem(option, f"'{alternative}' is not a valid regular expression "
                       f"({exc.msg})", _SYNTAX_HINT) from None
