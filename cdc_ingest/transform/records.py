"""Transform rules applied to changelog records, before the sink serializes them.

For each row record of a table a rule matches (the first rule whose ``source-table`` matches
``db.table``, as in Flink CDC), :meth:`Transformer.apply` takes the record as the serde
decoded it (once) and projects ``before`` and ``after``,
evaluates the filter on each (metadata ``__data_event_type__`` is ``+I``, ``-U``/``+U`` or
``-D`` for the image it sees) and decides the record, as Flink CDC's PostTransformOperator:

- an insert or delete passes when its row passes;
- an update whose both images pass stays an update; only ``before`` passes: a delete of
  ``before``; only ``after``: an insert of ``after``; neither: dropped;
- ``converter-after-transform: SOFT_DELETE`` turns the resulting delete into an insert of
  the deleted row.

The record's key (``pk``) is capture's, which already follows the rule's ``primary-keys``
(capture keys the table by them). A key column the projection drops or computes would make
the key disagree with the value: that stops the sink, naming the table and the fix.
"""

from __future__ import annotations

from typing import Any

import msgspec

from cdc_ingest.errors import SinkError
from cdc_ingest.model.changelog import SNAPSHOT_POS, FullRecord
from cdc_ingest.transform.functions import EvaluationError
from cdc_ingest.transform.rules import Rule, RuleSpec

_KEY = msgspec.json.Decoder(dict[str, msgspec.Raw])
_NULL = b"null"


class Transformer:
    """The pipeline's rules; :meth:`apply` is called for every changelog row record."""

    def __init__(self, specs: tuple[RuleSpec, ...]) -> None:
        self._rules = [Rule(spec) for spec in specs]
        self._tables: dict[tuple[str, str], Rule | None] = {}

    def __bool__(self) -> bool:
        return bool(self._rules)

    def rule(self, db: str, table: str) -> Rule | None:
        """The first rule whose source-table matches, cached per table."""
        hit = self._tables.get((db, table), False)
        if hit is False:
            hit = self._tables[(db, table)] = next(
                (r for r in self._rules if r.selector.matches(db, table)), None)
        return hit  # type: ignore[return-value]

    def apply(self, record: FullRecord) -> FullRecord | None:
        """A row record as the rule makes it: itself (no rule), rewritten, or None (filtered
        out). The caller decoded it and handles DDL records itself."""
        if record.db is None or record.table is None:
            return record
        rule = self.rule(record.db, record.table)
        if rule is None:
            return record
        try:
            return self._apply(rule, record)
        except EvaluationError as exc:
            raise SinkError(
                f"transform of {record.db}.{record.table} ({rule.spec.source_table}) failed "
                f"at binlog {record.pos or '?'}: {exc}. Fix the rule's projection or filter "
                "for such rows, then start again: nothing after this row was written."
            ) from None

    def _apply(self, rule: Rule, record: FullRecord) -> FullRecord | None:
        meta: dict[str, Any] = {
            "__namespace_name__": None, "__schema_name__": record.db,
            "__table_name__": record.table,
            # Flink CDC's op_ts: the binlog event time; 0 for a snapshot row
            "op_ts": 0 if record.pos == SNAPSHOT_POS else record.ts_ms}
        op = record.op
        before = after = None
        passed_before = passed_after = False
        if op in ("+U", "-D"):
            meta["__data_event_type__"] = "-U" if op == "+U" else "-D"
            before, passed_before = rule.row(bytes(record.before), meta)
        if op in ("+I", "+U"):
            meta["__data_event_type__"] = op
            after, passed_after = rule.row(bytes(record.after), meta)
        if op == "+U" and not (passed_before and passed_after):
            if passed_before:
                op, after = "-D", None
            elif passed_after:
                op, before = "+I", None
            else:
                return None
        elif (op == "+I" and not passed_after) or (op == "-D" and not passed_before):
            return None
        if op == "-D" and rule.spec.soft_delete:
            op, before, after = "+I", None, before
        self._check_key(rule, record)
        # the key and the typed layout stay (include-schema, ISO-8601 with a filter-only rule)
        return msgspec.structs.replace(record, op=op, before=msgspec.Raw(before or _NULL),
                                       after=msgspec.Raw(after or _NULL))

    @staticmethod
    def _check_key(rule: Rule, record: FullRecord) -> None:
        if rule.items is None:
            return
        wrong = rule.dropped_keys(tuple(_KEY.decode(bytes(record.pk))))
        if wrong:
            raise SinkError(
                f"transform of {record.db}.{record.table} ({rule.spec.source_table}): the "
                f"projection does not keep the key column(s) {wrong} as they are, so the "
                f"message key would not match its value (binlog {record.pos or '?'}). Fix: "
                "project the key columns unchanged (plain names, or `*`), or key the table "
                "by other columns with primary-keys."
            )
