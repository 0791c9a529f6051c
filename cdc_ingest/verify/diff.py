"""One sink topic against the MySQL rows routed to it: missing, extra, differing, conflicts.

Pure logic: the topic arrives folded into a store of latest value bytes per canonical key
(verify/store.py: on disk, or a dict), the rows in batches (:meth:`TopicCheck.rows`) or one
at a time. Matched keys leave the store as they are compared, and what is left at the end is
the extra keys. Keys are remembered beyond that only when several tables share the topic, to
tell a key two shards both hold (a conflict), in the same store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from cdc_ingest.verify.store import MemoryValues, Values
from cdc_ingest.verify.values import dumps, parse, render, same

ABSENT = "(absent)"
MAX_SUSPECTS = 100_000  # differing keys kept to read again; beyond, none is confirmed
CATEGORIES = ("missing", "extra", "differing", "conflicts")


@dataclass(frozen=True)
class Source:
    """Where an expected message comes from: ``table`` (``db.table``), the row's key as
    the changelog spells it (canonical JSON), and its key columns' values as MySQL gave
    them (None: not read from MySQL, only known from a topic's key)."""

    table: str
    pk: bytes
    key_values: tuple[Any, ...] | None


# (expected key, row, the value once updated or None, fields ignored, fields of dropped
# columns, source): one item of TopicCheck.rows
Item = tuple[bytes, dict[str, Any], dict[str, Any] | None, frozenset[str], frozenset[str],
             Source]


@dataclass(frozen=True)
class Suspect:
    """A key that differed: its category, its MySQL row's source (None for an extra key)
    and the topic's value for it (None: absent)."""

    category: str
    source: Source | None
    topic_value: bytes | None


@dataclass(frozen=True)
class Sample:
    """One reported difference: the key, its source table, and both sides in short JSON."""

    key: str
    table: str
    detail: str


@dataclass
class TopicResult:
    topic: str
    tables: tuple[str, ...]
    topic_exists: bool = True
    topic_keys: int = 0
    rows: dict[str, int] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    samples: dict[str, list[Sample]] = field(
        default_factory=lambda: {c: [] for c in CATEGORIES})
    problems: list[str] = field(default_factory=list)
    # keys of rows a SOFT_DELETE transform keeps after MySQL deleted them: not a difference
    soft_deleted: int = 0
    # keys that kept changing while verify read them again (verify/settle.py): neither
    # equal nor confirmed different
    unconfirmed: list[Sample] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # how the differences were judged

    @property
    def mysql_rows(self) -> int:
        return sum(self.rows.values())

    @property
    def ok(self) -> bool:
        return not self.problems and not any(self.counts.values()) and not self.unconfirmed


def _extra(key: bytes, raw: bytes) -> Sample:
    try:
        shown = render(parse(raw))
    except ValueError:
        shown = raw.decode("utf-8", errors="replace")[:160]
    return Sample(key.decode("utf-8", errors="replace"), "", f"mysql {ABSENT} | topic {shown}")


def value_diff(expected: Any, actual: Any) -> str:
    """Both sides of a differing value; for two rows only the columns that differ."""
    if not (isinstance(expected, dict) and isinstance(actual, dict)):
        return f"mysql {render(expected)} | topic {render(actual)}"
    parts = []
    for name in [*expected, *(k for k in actual if k not in expected)]:
        mine = render(expected[name], 60) if name in expected else ABSENT
        theirs = render(actual[name], 60) if name in actual else ABSENT
        if name not in expected or name not in actual or not same(expected[name], actual[name]):
            parts.append(f"{name}: mysql {mine} | topic {theirs}")
    return "; ".join(parts)


class TopicCheck:
    """Feed every MySQL row routed to ``topic`` with :meth:`row`, then call :meth:`finish`."""

    def __init__(
        self,
        topic: str,
        tables: tuple[str, ...],
        latest: Values | dict[bytes, bytes] | None,
        except_key: bool,
        max_diffs: int = 10,
        soft_delete: bool = False,
        nulls_left_out: bool = False,
    ) -> None:
        self._soft_delete = soft_delete
        # `<format>.encode.ignore-null-fields`: a column the message lacks is a null
        self._nulls_left_out = nulls_left_out
        self._latest: Values = (latest if latest is not None and not isinstance(latest, dict)
                                else MemoryValues(latest))
        self._except_key = except_key
        self._max = max_diffs
        self._shared = len(tables) > 1  # keys are claimed, to tell a key two tables hold
        self._ahead: dict[bytes, bytes] = {}  # values taken for the batch of rows in hand
        self._taken: dict[bytes, str] = {}  # its keys another table claimed first
        self._in_batch = False
        # the keys that differ, with what a second look needs (None: too many)
        self.suspects: dict[bytes, Suspect] | None = {}
        # table -> column -> the value rows got when the column was added, parsed as a
        # topic value is (MySqlSide.added_values)
        self._added: dict[str, dict[str, Any]] = {}
        self.result = TopicResult(topic, tables, latest is not None, len(self._latest),
                                  dict.fromkeys(tables, 0))

    def rows(self, table: str, key_names: tuple[str, ...], batch: list[Item]) -> None:
        """A batch of ``table``'s rows, each ``(key, row, also, ignored, dropped, source)``
        as :meth:`row` takes them: their values are taken from the store at once."""
        keys = [item[0] for item in batch]
        if self._shared:
            self._taken = self._latest.claim(keys, table)
        self._ahead = self._latest.take(keys)
        self._in_batch = True
        try:
            for key, row, also, ignored, dropped, source in batch:
                self.row(table, key, key_names, row, also, ignored, dropped, source)
        finally:
            self._ahead, self._taken, self._in_batch = {}, {}, False

    def _suspect(self, key: bytes, category: str, source: Source | None,
                 raw: bytes | None) -> None:
        """Keep a key that differs, to read it again (verify/settle.py): up to
        :data:`MAX_SUSPECTS`, beyond which none is kept (too many to confirm)."""
        if self.suspects is None:
            return
        if len(self.suspects) >= MAX_SUSPECTS:
            self.suspects = None
            return
        self.suspects[key] = Suspect(category, source, raw)

    def _note(self, category: str, sample: Callable[[], Sample]) -> None:
        """Count one difference; describe it only while there is room to show it."""
        self.result.counts[category] += 1
        found = self.result.samples[category]
        if len(found) < self._max:
            found.append(sample())

    def row(self, table: str, key: bytes, key_names: tuple[str, ...], row: dict[str, Any],
            also: dict[str, Any] | None = None, ignored: frozenset[str] = frozenset(),
            dropped: frozenset[str] = frozenset(), source: Source | None = None) -> None:
        """One MySQL row of ``table``; ``key`` is its canonical key JSON. ``also``: another
        value the topic may hold for it (a transform's ``__data_event_type__`` is ``+I``
        or ``+U`` depending on the row's history). ``ignored``: columns of the topic's value
        that MySQL cannot tell (a transform's ``op_ts``), left out of the comparison.
        ``dropped``: columns the table had and no longer has; a field of one in a message
        written before the ``DROP COLUMN`` means nothing (docs/output-contract.md, "Schema
        changes") unless the row expected has a field of that name. ``source``: where the
        row comes from, kept with a key that differs (:attr:`suspects`)."""
        self.result.rows[table] = self.result.rows.get(table, 0) + 1
        if self._shared:
            first = (self._taken.get(key) if self._in_batch
                     else self._latest.claim([key], table).get(key))
            if first is not None:
                self._note("conflicts", lambda: Sample(
                    key.decode(), table, f"both {first} and {table} have a row with it"))
                return
        expected = row
        if self._except_key:
            expected = {k: v for k, v in row.items() if k not in key_names}
        raw = (self._ahead.pop(key, None) if self._in_batch
               else self._latest.take([key]).get(key))
        if raw is None:
            self._note("missing", lambda: Sample(
                key.decode(), table, f"mysql {render(expected)} | topic {ABSENT}"))
            self._suspect(key, "missing", source, None)
            return
        try:
            actual = parse(raw)
        except ValueError:
            actual = raw.decode("utf-8", errors="replace")  # shown as a string, and differs
        if ignored and isinstance(actual, dict):
            actual = {k: v for k, v in actual.items() if k not in ignored}
        if dropped and isinstance(actual, dict):
            actual = {k: v for k, v in actual.items() if k not in dropped or k in expected}
        if also is not None and not same(expected, actual):
            alternative = also
            if self._except_key:
                alternative = {k: v for k, v in also.items() if k not in key_names}
            if same(alternative, actual):
                return
        if (not same(expected, actual) and not self._same_but_added(table, expected, actual)
                and not self._same_but_nulls(expected, actual)):
            self._note("differing", lambda: Sample(
                key.decode(), table, value_diff(expected, actual)))
            self._suspect(key, "differing", source, raw)

    def columns_added(self, table: str, values: dict[str, Any]) -> None:
        """The value each column of ``table`` stands for where a message lacks it (a message
        written before the column was added)."""
        self._added[table] = parse(dumps(values))

    def _same_but_added(self, table: str, expected: Any, actual: Any) -> bool:
        """Equal once the columns the message lacks are taken as the values rows got when
        those columns were added (docs/output-contract.md, "Schema changes")."""
        if not (isinstance(expected, dict) and isinstance(actual, dict)):
            return False
        missing = [c for c in expected if c not in actual]
        added = self._added.get(table, {})
        if not missing or any(c not in added for c in missing):
            return False
        return same(expected, {**actual, **{c: added[c] for c in missing}})

    def _same_but_nulls(self, expected: Any, actual: Any) -> bool:
        """Equal once the columns the message lacks are taken as nulls, where the sink
        leaves null fields out (``<format>.encode.ignore-null-fields``)."""
        if not (self._nulls_left_out and isinstance(expected, dict)
                and isinstance(actual, dict)):
            return False
        return same(expected, {k: actual.get(k) for k in expected} | actual)

    def problem(self, text: str) -> None:
        """Something that keeps a table from being verified (no key, unsupported type)."""
        self.result.problems.append(text)

    def close(self) -> None:
        """Delete the store (done by :meth:`finish`; again is harmless)."""
        self._latest.close()

    def finish(self) -> TopicResult:
        """Count what the topic holds beyond the MySQL rows (its extra keys); the store is
        closed."""
        try:
            if self._soft_delete:
                self.result.soft_deleted = len(self._latest)
            else:
                for key, raw in self._latest.remaining():
                    self._note("extra", partial(_extra, key, raw))
                    self._suspect(key, "extra", None, raw)
        finally:
            self._latest.close()
        return self.result
