"""Transform rules applied to one row image: projection, filter, soft delete.

A rule is kept as plain text (:class:`RuleSpec`, what the Spark job ships to its tasks) and
compiled where it runs (:class:`Rule`). Rows stay in their output JSON form: a projected
source column is copied as its raw JSON text, byte for byte; only computed columns are
decoded, evaluated and encoded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import msgspec
import orjson

from cdc_ingest.routing.selectors import TableSelector
from cdc_ingest.transform.evaluate import Compiled, compile_node
from cdc_ingest.transform.functions import EvaluationError
from cdc_ingest.transform.parse import (
    ExpressionError,
    parse_expression,
    parse_projection,
)

_ROW = msgspec.json.Decoder(dict[str, msgspec.Raw])
_VALUE = msgspec.json.Decoder(float_hook=Decimal)


@dataclass(frozen=True)
class RuleSpec:
    """One ``transform:`` entry as the sink needs it (plain data: it travels to tasks)."""

    source_table: str
    projection: str | None = None
    filter: str | None = None
    primary_keys: tuple[str, ...] = ()
    soft_delete: bool = False
    metadata: tuple[str, ...] = ()  # source.metadata.list: names that mean metadata (op_ts)


def encode(value: Any) -> bytes:
    """A computed value as output JSON: DECIMAL exact (``8.00``), floats as Java prints."""
    if isinstance(value, Decimal):
        return format(value, "f").encode()
    if isinstance(value, float):
        if not math.isfinite(value):
            raise EvaluationError(f"the result {value} is not a JSON number")
        return repr(value).encode()
    if isinstance(value, list):
        return b"[" + b",".join(encode(v) for v in value) + b"]"
    return orjson.dumps(value)


def lookup(raw: dict[str, msgspec.Raw], name: str) -> msgspec.Raw:
    """A column of the row by name; a name in another case when it is the only match (MySQL
    column names are case-insensitive)."""
    hit = raw.get(name)
    if hit is not None:
        return hit
    folded = [k for k in raw if k.lower() == name.lower()]
    if len(folded) != 1:
        raise EvaluationError(f"the row has no column {name!r}")
    return raw[folded[0]]


class _RowScope:
    """What an expression sees: computed columns first (a filter may use them), then the
    source row, then the metadata."""

    __slots__ = ("computed", "meta_values", "raw", "values")

    def __init__(self, raw: dict[str, msgspec.Raw], meta: dict[str, Any]) -> None:
        self.raw = raw
        self.values: dict[str, Any] = {}
        self.computed: dict[str, Any] = {}
        self.meta_values = meta

    def column(self, name: str) -> Any:
        if name in self.computed:
            return self.computed[name]
        if name in self.values:
            return self.values[name]
        value = self.values[name] = _VALUE.decode(lookup(self.raw, name))
        return value

    def meta(self, name: str) -> Any:
        return self.meta_values[name]


_KINDS = frozenset({"lit", "col", "meta", "call", "and", "or", "not", "neg", "arith", "cmp",
                    "is", "distinct", "between", "in", "like", "case", "cast"})


def _is_node(value: Any) -> bool:
    return isinstance(value, tuple) and bool(value) and value[0] in _KINDS


def _metadata(value: Any, names: tuple[str, ...]) -> Any:
    """An expression tree with the columns named in ``source.metadata.list`` read as
    metadata."""
    if _is_node(value):
        if value[0] == "col":
            return ("meta", value[1]) if value[1] in names else value
        if value[0] == "lit":
            return value
        return (value[0], *(_metadata(part, names) for part in value[1:]))
    if isinstance(value, tuple):
        return tuple(_metadata(part, names) for part in value)
    return value


def uses_metadata(value: Any, name: str) -> bool:
    if _is_node(value) and value[0] in ("meta", "col", "lit"):
        return value[0] == "meta" and value[1] == name
    if isinstance(value, tuple):
        return any(uses_metadata(part, name) for part in value)
    return False


def _projection(text: str, metadata: tuple[str, ...]) -> list[tuple[str, Any]]:
    """(output name, tree with metadata names resolved, or None for ``*``) per item."""
    return [(name, None if node is None else _metadata(node, metadata))
            for name, node in parse_projection(text)]


def compile_projection(text: str, metadata: tuple[str, ...] = ()
                       ) -> list[tuple[str, Compiled | None, str | None]]:
    """(output name, computed expression or None, source column or None) per item;
    ``("*", None, None)`` is the wildcard. A plain column (renamed or not) is copied."""
    return [_compiled(name, node) for name, node in _projection(text, metadata)]


def _compiled(name: str, node: Any) -> tuple[str, Compiled | None, str | None]:
    if node is None:
        return ("*", None, None)
    if node[0] == "col":
        return (name, None, node[1])
    return (name, compile_node(node), None)


class Rule:
    """A compiled rule. :meth:`row` projects one row image and tells whether it passes."""

    def __init__(self, spec: RuleSpec) -> None:
        self.spec = spec
        self.selector = TableSelector.parse(spec.source_table, "transform.source-table")
        trees = _projection(spec.projection, spec.metadata) if spec.projection else None
        condition = (_metadata(parse_expression(spec.filter), spec.metadata) if spec.filter
                     else None)
        self.items = None if trees is None else [_compiled(n, t) for n, t in trees]
        self.filter = compile_node(condition) if condition is not None else None
        # what verify needs: columns computed from op_ts (MySQL's rows cannot tell it), and
        # whether __data_event_type__ can change what a row is written as
        self.op_ts_columns = frozenset(
            name for name, tree in trees or () if tree is not None
            and uses_metadata(tree, "op_ts"))
        self.uses_event_type = uses_metadata((tuple(t for _, t in trees or ()), condition),
                                             "__data_event_type__")
        self._kept: dict[tuple[str, ...], list[str]] = {}

    def dropped_keys(self, keys: tuple[str, ...]) -> list[str]:
        """The key columns the projection does not write as they are (computed, taken from
        another column, or left out), worked out once per key."""
        hit = self._kept.get(keys)
        if hit is None:
            hit = self._kept[keys] = [k for k in keys if not self._keeps(k)]
        return hit

    def _keeps(self, key: str) -> bool:
        if self.items is None:
            return True
        kept = False
        for name, compiled, source in self.items:  # a later item of a name replaces it
            if name == "*":
                kept = True
            elif name == key:
                kept = compiled is None and source is not None and source.lower() == key.lower()
        return kept

    def row(self, raw_row: bytes, meta: dict[str, Any]) -> tuple[bytes, bool]:
        """(projected row JSON, whether it passes the filter). Raises EvaluationError."""
        raw = _ROW.decode(raw_row)
        scope = _RowScope(raw, meta)
        if self.items is None:
            out_bytes = raw_row
        else:
            out: dict[str, Any] = {}
            for name, compiled, source in self.items:
                if name == "*":
                    for column, value in raw.items():
                        out[column] = orjson.Fragment(bytes(value))
                elif compiled is None:
                    assert source is not None
                    out[name] = orjson.Fragment(bytes(lookup(raw, source)))
                else:
                    try:
                        value = compiled(scope)
                    except EvaluationError as exc:
                        raise EvaluationError(f"column {name}: {exc}") from None
                    scope.computed[name] = value
                    out[name] = orjson.Fragment(encode(value))
            out_bytes = orjson.dumps(out)
        if self.filter is None:
            return out_bytes, True
        try:
            return out_bytes, self.filter(scope) is True
        except EvaluationError as exc:
            raise EvaluationError(f"filter: {exc}") from None


def check_rule(spec: RuleSpec) -> None:
    """Compile ``spec`` once; raises ExpressionError naming what is wrong (config time)."""
    Rule(spec)


__all__ = ["EvaluationError", "ExpressionError", "Rule", "RuleSpec", "check_rule", "encode"]
