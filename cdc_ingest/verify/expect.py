"""What a sink topic should hold for one MySQL row: its message key and value, as verify
builds them by its own rules (a second implementation of the output contract).

:class:`Expectation` is made once per table and sink topic; called with a row's values (as
:class:`~cdc_ingest.verify.mysql.MySqlSide` reads them) it gives what
:meth:`~cdc_ingest.verify.diff.TopicCheck.row` compares: the expected key, the row (and, with a
``__data_event_type__`` transform, the value it has once updated), the fields to leave out,
and where the row came from (its table, its key as the changelog spells it, and its key
columns' values, to read it again: verify/settle.py).
"""

from __future__ import annotations

from typing import Any

from cdc_ingest.config import PipelineDef
from cdc_ingest.formats.event_routing import EventAddress
from cdc_ingest.transform.rules import Rule
from cdc_ingest.verify.diff import Item, Source
from cdc_ingest.verify.mysql import RowConverter, TableShape
from cdc_ingest.verify.topics import canonical_key
from cdc_ingest.verify.values import dumps, parse


def expected_key(events: EventAddress | None, name: str, topic: str, key: bytes,
                 stamps: frozenset[bytes] = frozenset()) -> bytes:
    """The message key of a MySQL row whose canonical key JSON is ``key``, in the canonical
    form verify reads topic keys in (so `key.json.encoding` spellings compare equal)."""
    if events is None:
        return key
    db, _, table = name.partition(".")
    for target in events.targets(db, table):
        if target.topic == topic:
            return canonical_key(events.key(target, key, stamps))
    return key


def _iso(row: dict[str, Any], stamps: frozenset[bytes]) -> dict[str, Any]:
    """A row with its timestamps in ISO-8601, as the events write them."""
    return {name: value.replace(" ", "T", 1) if isinstance(value, str) and name.encode()
            in stamps else value for name, value in row.items()}


def _timestamps(shape: TableShape) -> frozenset[bytes]:
    """The columns Flink CDC types TIMESTAMP or TIMESTAMP_LTZ (for ISO-8601 events)."""
    return frozenset(c.name.encode() for c in shape.columns
                     if c.data_type in ("datetime", "timestamp"))


def rule_for(defn: PipelineDef, name: str) -> Rule | None:
    """The table's ``transform:`` rule, if one applies."""
    db, _, table = name.partition(".")
    found = defn.transform_for(db, table)
    return None if found is None else Rule(found.spec(defn.source.metadata_list))


def transformed(rule: Rule, name: str, row: dict[str, Any]
                ) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
    """A MySQL row as the table's transform writes it (None: the filter drops it), and
    the value it has once updated, when that differs (``__data_event_type__``)."""
    db, _, table = name.partition(".")
    raw = dumps(row)
    meta: dict[str, Any] = {"__namespace_name__": None, "__schema_name__": db,
                            "__table_name__": table, "__data_event_type__": "+I", "op_ts": 0}
    inserted, passed = rule.row(raw, meta)
    if not passed:
        return None
    ignored = rule.op_ts_columns
    first = {k: v for k, v in parse(inserted).items() if k not in ignored}
    if not rule.uses_event_type:
        return first, None
    meta["__data_event_type__"] = "+U"
    updated, _ = rule.row(raw, meta)
    second = {k: v for k, v in parse(updated).items() if k not in ignored}
    return first, (second if second != first else None)


class Expectation:
    """One table's rows -> what its sink topic ``topic`` should hold for each. Making it
    raises :class:`~cdc_ingest.errors.SourceError` for a table verify cannot check; calling
    it raises :class:`~cdc_ingest.transform.functions.EvaluationError` when the transform
    fails on the row."""

    def __init__(self, shape: TableShape, topic: str, events: EventAddress | None,
                 tinyint1_as_boolean: bool, rule: Rule | None,
                 pinned: list[str] | None, columns_ever: frozenset[str]) -> None:
        self.shape = shape
        self._convert = RowConverter(shape, tinyint1_as_boolean)
        self._key_at = tuple(self._convert.names.index(k) for k in shape.key)
        self._topic, self._events, self._rule, self._pinned = topic, events, rule, pinned
        now = {c.name for c in shape.columns}
        self._gone = frozenset(pinned or ()) - now  # schema.change.behavior: ignore
        self._dropped = columns_ever - now  # DROP COLUMN: old messages keep the field
        self._stamps = _timestamps(shape) if events is not None else frozenset()
        self._iso = events is not None and events.iso_values

    def key_text(self, values: tuple[Any, ...]) -> str:
        """The row's key, for messages."""
        return self._convert(values)[0].decode()

    def __call__(self, values: tuple[Any, ...]) -> Item | None:
        """The row's item; None when the table's transform filters it out."""
        name = self.shape.name
        key, row = self._convert(values)
        source = Source(name, key, tuple(values[i] for i in self._key_at))
        message_key = expected_key(self._events, name, self._topic, key, self._stamps)
        if self._iso:
            row = _iso(row, self._stamps)
        if self._pinned is not None:
            row = {c: row[c] for c in self._pinned if c in row}
        if self._rule is None:
            return message_key, row, None, self._gone, self._dropped, source
        projected = transformed(self._rule, name, row)
        if projected is None:
            return None
        return (message_key, *projected, self._rule.op_ts_columns, self._dropped, source)
