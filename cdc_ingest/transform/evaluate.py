"""Expression trees (:mod:`.parse`) -> Python closures over one row.

Compiled once per rule; a closure takes a :class:`Scope` (the row's columns, its metadata)
and returns a value of :mod:`.functions`' kinds. Comparisons follow Flink CDC's generated
code: ``=``, ``<``, ``>`` ... are FALSE when a side is NULL and ``<>`` is their negation;
``AND``, ``OR``, ``NOT`` are three-valued; ``||`` and ``CONCAT`` spell NULL ``null``. The
operators themselves are in :mod:`.operators`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from cdc_ingest.transform.functions import FUNCTIONS, NONDETERMINISTIC, NULL_AWARE, text
from cdc_ingest.transform.operators import arithmetic, cast, compare, equals, like
from cdc_ingest.transform.parse import ExpressionError, Node


class Scope(Protocol):
    def column(self, name: str) -> Any: ...
    def meta(self, name: str) -> Any: ...


Compiled = Callable[[Scope], Any]


def _null_aware(name: str, args: list[Compiled]) -> Compiled:
    if name == "CONCAT":
        def concat(s: Scope) -> Any:
            # Flink CDC's concat is Java's String.join: a NULL part is spelled "null"
            return "".join("null" if v is None else text(v) for v in (f(s) for f in args))
        return concat
    if name == "CONCAT_WS":
        def concat_ws(s: Scope) -> Any:
            sep, *rest = [f(s) for f in args]
            return None if sep is None else text(sep).join(text(v) for v in rest
                                                            if v is not None)
        return concat_ws
    if name == "COALESCE":
        return lambda s: next((v for v in (f(s) for f in args) if v is not None), None)
    if name == "IF":
        test, yes, no = args
        return lambda s: yes(s) if test(s) is True else no(s)
    if name == "IFNULL":
        first, second = args
        return lambda s: v if (v := first(s)) is not None else second(s)
    if name == "NULLIF":
        first, second = args
        return lambda s: None if equals(v := first(s), second(s)) else v
    left, right = args  # MOD
    return lambda s: arithmetic("%", left(s), right(s))


_ARITY = {"CONCAT": (1, 999), "CONCAT_WS": (2, 999), "COALESCE": (1, 999), "IF": (3, 3),
          "IFNULL": (2, 2), "NULLIF": (2, 2), "MOD": (2, 2)}


def compile_node(node: Node) -> Compiled:
    kind = node[0]
    if kind == "lit":
        value = node[1]
        return lambda s: value
    if kind == "col":
        name = node[1]
        if name.upper() in NONDETERMINISTIC:
            raise _nondeterministic(name)
        return lambda s: s.column(name)
    if kind == "meta":
        name = node[1]
        return lambda s: s.meta(name)
    if kind == "call":
        return _call(node[1], [compile_node(a) for a in node[2]])
    if kind in ("and", "or"):
        return _logic(kind, compile_node(node[1]), compile_node(node[2]))
    if kind == "not":
        inner = compile_node(node[1])
        return lambda s: None if (v := inner(s)) is None else not v
    if kind == "neg":
        inner = compile_node(node[1])
        return lambda s: arithmetic("-", 0, v) if (v := inner(s)) is not None else None
    if kind == "arith":
        op, left, right = node[1], compile_node(node[2]), compile_node(node[3])
        return lambda s: arithmetic(op, left(s), right(s))
    if kind == "cmp":
        return _comparison(node[1], compile_node(node[2]), compile_node(node[3]))
    return _special(node)


def _nondeterministic(name: str) -> ExpressionError:
    return ExpressionError(
        f"{name.upper()} gives another value at every evaluation, so a replay after a "
        "failure or `cdc-ingest verify` could not reproduce it; it is not supported")


def _call(name: str, args: list[Compiled]) -> Compiled:
    if name in NONDETERMINISTIC:
        raise _nondeterministic(name)
    if name in NULL_AWARE:
        low, high = _ARITY[name]
    elif name in FUNCTIONS:
        _, low, high = FUNCTIONS[name]
    else:
        raise ExpressionError(f"unknown function {name}() (docs/transform.md lists the "
                              "supported ones)")
    if not low <= len(args) <= high:
        raise ExpressionError(f"{name}() takes {low}{'' if low == high else f' to {high}'} "
                              f"arguments, not {len(args)}")
    if name in NULL_AWARE:
        return _null_aware(name, args)
    fn = FUNCTIONS[name][0]

    def call(s: Scope) -> Any:
        values = [f(s) for f in args]
        return None if any(v is None for v in values) else fn(*values)
    return call


def _logic(kind: str, left: Compiled, right: Compiled) -> Compiled:
    stop = kind == "or"  # OR stops at TRUE, AND at FALSE

    def logic(s: Scope) -> Any:
        a = left(s)
        if a is stop:
            return stop
        b = right(s)
        if b is stop:
            return stop
        return None if a is None or b is None else not stop
    return logic


def _comparison(op: str, left: Compiled, right: Compiled) -> Compiled:
    if op == "=":
        return lambda s: equals(left(s), right(s))
    if op == "<>":
        return lambda s: not equals(left(s), right(s))
    test = {"<": lambda c: c < 0, "<=": lambda c: c <= 0, ">": lambda c: c > 0,
            ">=": lambda c: c >= 0}[op]

    def comparison(s: Scope) -> bool:
        a, b = left(s), right(s)
        return a is not None and b is not None and test(compare(a, b))
    return comparison


def _special(node: Node) -> Compiled:
    kind = node[0]
    if kind == "is":
        word, inner, negate = node[1], compile_node(node[2]), node[3]
        want = {"NULL": None, "UNKNOWN": None, "TRUE": True, "FALSE": False}[word]
        return lambda s: (inner(s) is want) != negate
    if kind == "distinct":
        left, right, negate = compile_node(node[1]), compile_node(node[2]), node[3]

        def distinct(s: Scope) -> bool:
            a, b = left(s), right(s)
            same = (a is None and b is None) or equals(a, b)
            return same if negate else not same
        return distinct
    if kind == "between":
        value, low, high, negate = (compile_node(node[1]), compile_node(node[2]),
                                    compile_node(node[3]), node[4])

        def between(s: Scope) -> bool:
            v, lo, hi = value(s), low(s), high(s)
            if v is None or lo is None or hi is None:
                return False
            inside = compare(v, lo) >= 0 and compare(v, hi) <= 0
            return inside != negate
        return between
    if kind == "in":
        value, items, negate = compile_node(node[1]), [compile_node(n) for n in node[2]], node[3]

        def within(s: Scope) -> bool:
            v = value(s)
            found = any(equals(v, item(s)) for item in items)
            return found != negate
        return within
    if kind == "like":
        value, pattern, negate = compile_node(node[1]), compile_node(node[2]), node[4]
        escape = compile_node(node[3]) if node[3] is not None else None

        def matches(s: Scope) -> Any:
            v, p = value(s), pattern(s)
            e = escape(s) if escape is not None else None
            if v is None or p is None or (escape is not None and e is None):
                return None if escape is not None else False
            return like(text(v), text(p), None if e is None else text(e)) != negate
        return matches
    if kind == "case":
        return _case(node)
    if kind == "cast":
        inner, target = compile_node(node[1]), node[2]
        return lambda s: cast(inner(s), target)
    raise ExpressionError(f"cannot evaluate {kind}")


def _case(node: Node) -> Compiled:
    operand = compile_node(node[1]) if node[1] is not None else None
    whens = [(compile_node(t), compile_node(r)) for t, r in node[2]]
    default = compile_node(node[3])

    def case(s: Scope) -> Any:
        subject = operand(s) if operand is not None else None
        for test, result in whens:
            hit = equals(subject, test(s)) if operand is not None else test(s) is True
            if hit:
                return result(s)
        return default(s)
    return case


__all__ = ["Compiled", "Scope", "compile_node"]
