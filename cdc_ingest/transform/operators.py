"""The operators of transform expressions: comparison, arithmetic, CAST, LIKE (Flink CDC's
``ComparisonFunctions``, ``ArithmeticFunctions``, ``CastingFunctions``)."""

from __future__ import annotations

import decimal
import re
from decimal import Decimal
from typing import Any

from cdc_ingest.transform.functions import EvaluationError, number, text

_EXACT = decimal.Context(prec=200, traps=[decimal.InvalidOperation, decimal.DivisionByZero])


def _is_number(value: Any) -> bool:
    return isinstance(value, int | Decimal | float) and not isinstance(value, bool)


def compare(a: Any, b: Any) -> int:
    if _is_number(a) and _is_number(b):
        return (a > b) - (a < b)
    if _is_number(a) or _is_number(b):
        p, q = number(a, "a comparison"), number(b, "a comparison")
        return (p > q) - (p < q)
    if type(a) is type(b) and isinstance(a, str | bool):
        return (a > b) - (a < b)
    x, y = text(a), text(b)
    return (x > y) - (x < y)


def equals(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return False
    try:
        return compare(a, b) == 0
    except EvaluationError:
        return False


def arithmetic(op: str, a: Any, b: Any) -> Any:
    if a is None or b is None:
        return None
    x: Any = number(a, f"'{op}'")
    y: Any = number(b, f"'{op}'")
    if isinstance(x, float) or isinstance(y, float):
        x, y = float(x), float(y)
    elif isinstance(x, int) and isinstance(y, int):
        if op in "/%" and y == 0:
            raise EvaluationError(f"division by zero ({a} {op} {b})")
        if op == "/":
            quotient = abs(x) // abs(y)
            return quotient if (x >= 0) == (y >= 0) else -quotient
        if op == "%":
            rest = abs(x) % abs(y)
            return rest if x >= 0 else -rest
    else:
        x, y = Decimal(x), Decimal(y)
        try:
            if op == "/":
                exponent = x.as_tuple().exponent
                scale = Decimal(1).scaleb(min(exponent, 0) if isinstance(exponent, int) else 0)
                return _EXACT.divide(x, y).quantize(scale, rounding=decimal.ROUND_DOWN,
                                                    context=_EXACT)
            if op == "%":
                return _EXACT.remainder(x, y)
        except ArithmeticError:
            raise EvaluationError(f"division by zero ({a} {op} {b})") from None
        return {"+": _EXACT.add, "-": _EXACT.subtract, "*": _EXACT.multiply}[op](x, y)
    if op in "/%" and y == 0:
        raise EvaluationError(f"division by zero ({a} {op} {b})")
    return {"+": x + y, "-": x - y, "*": x * y}[op] if op in "+-*" else (
        x / y if op == "/" else x % y)


def cast(value: Any, target: tuple[str, tuple[int, ...]]) -> Any:
    if value is None:
        return None
    name, args = target
    if name in ("INT", "INTEGER", "BIGINT", "SMALLINT", "TINYINT"):
        if isinstance(value, bool):
            return int(value)
        return int(number(value, f"CAST AS {name}"))
    if name in ("DECIMAL", "NUMERIC", "DEC"):
        scale = args[1] if len(args) > 1 else 0
        exact = Decimal(str(number(value, "CAST AS DECIMAL")))
        return exact.quantize(Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_UP,
                              context=_EXACT)
    if name in ("DOUBLE", "FLOAT", "REAL"):
        return float(number(value, f"CAST AS {name}"))
    if name in ("STRING", "VARCHAR", "CHAR", "TEXT"):
        return text(value)
    if name == "BOOLEAN":
        if isinstance(value, str):
            lowered = value.strip().lower()
            if lowered in ("true", "false"):
                return lowered == "true"
            raise EvaluationError(f"CAST AS BOOLEAN of {value!r}")
        return bool(number(value, "CAST AS BOOLEAN"))
    raise EvaluationError(f"CAST AS {name} is not supported")


def like(value: str, pattern: str, escape: str | None) -> bool:
    if escape is None:  # Flink CDC: a Java regular expression, found anywhere
        return re.search(pattern, value) is not None
    out, chars = [], iter(pattern)
    for ch in chars:
        if ch == escape:
            out.append(re.escape(next(chars, "")))
        elif ch == "%":
            out.append(".*")
        elif ch == "_":
            out.append(".")
        else:
            out.append(re.escape(ch))
    return re.fullmatch("".join(out), value, re.DOTALL) is not None
