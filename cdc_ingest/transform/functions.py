"""Built-in functions of transform expressions, with Flink CDC's meaning (its
``SystemFunctionUtils`` and docs/core-concept/transform.md); NULL in, NULL out unless said.

Values are what a column's output JSON decodes to (docs/changelog-format.md): ``int``,
``Decimal`` (every number with a fraction or an exponent, so DECIMAL stays exact), ``str``
(dates and times too, in their output spelling), ``bool``, ``list`` (SET) or ``None``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import date, datetime
from decimal import ROUND_CEILING, ROUND_DOWN, ROUND_FLOOR, ROUND_HALF_UP, Decimal
from typing import Any


class EvaluationError(ValueError):
    """An expression that cannot be evaluated for a row (division by zero, a string where a
    number must be); the caller names the table, column and position."""


def _utf16(text: str) -> int:
    """Java's String.length(): UTF-16 code units (an emoji counts 2)."""
    return len(text.encode("utf-16-le")) // 2


def number(value: Any, what: str) -> int | Decimal | float:
    if isinstance(value, bool) or not isinstance(value, int | Decimal | float):
        if isinstance(value, str):
            try:
                return Decimal(value.strip())
            except ArithmeticError:
                pass
        raise EvaluationError(f"{what} needs a number, got {value!r}")
    return value


def integer(value: Any, what: str) -> int:
    got = number(value, what)
    return int(got)


def text(value: Any) -> str:
    """A value as the string Flink would make of it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, list):
        return ",".join(text(v) for v in value)
    return str(value)


def temporal(value: Any, what: str) -> datetime:
    """A DATE / DATETIME / TIMESTAMP value in its output spelling, as a datetime."""
    if not isinstance(value, str):
        raise EvaluationError(f"{what} needs a date or time, got {value!r}")
    raw = value.rstrip("Z")
    try:
        if len(raw) == 10:
            return datetime.combine(date.fromisoformat(raw), datetime.min.time())
        return datetime.fromisoformat(raw)
    except ValueError:
        raise EvaluationError(f"{what} needs a date or time, got {value!r}") from None


_UNITS: dict[str, Callable[[datetime], int]] = {
    "YEAR": lambda d: d.year,
    "QUARTER": lambda d: (d.month - 1) // 3 + 1,
    "MONTH": lambda d: d.month,
    "WEEK": lambda d: d.isocalendar()[1],
    "DAY": lambda d: d.day,
    "DAYOFMONTH": lambda d: d.day,
    "DOY": lambda d: d.timetuple().tm_yday,
    "DAYOFYEAR": lambda d: d.timetuple().tm_yday,
    "DOW": lambda d: d.isoweekday() % 7 + 1,
    "DAYOFWEEK": lambda d: d.isoweekday() % 7 + 1,
    "HOUR": lambda d: d.hour,
    "MINUTE": lambda d: d.minute,
    "SECOND": lambda d: d.second,
}


def extract(unit: str, value: Any) -> int:
    if unit not in _UNITS:
        raise EvaluationError(f"EXTRACT has no unit {unit}")
    return _UNITS[unit](temporal(value, unit))


def _extractor(unit: str) -> Callable[[Any], int]:
    return lambda value: extract(unit, value)


def _substr(s: str, start: Any, length: Any = None) -> str:
    begin = integer(start, "SUBSTR")
    begin = begin - 1 if begin > 0 else (len(s) + begin if begin < 0 else 0)
    begin = max(begin, 0)
    if length is None:
        return s[begin:]
    return s[begin:begin + max(integer(length, "SUBSTR"), 0)]


def _pad(s: str, size: Any, fill: str, left: bool) -> str | None:
    n = integer(size, "LPAD/RPAD")
    if n < 0:
        return None
    if len(s) >= n:
        return s[:n]
    if not fill:
        return None
    padding = (fill * n)[: n - len(s)]
    return padding + s if left else s + padding


def _locate(needle: str, hay: str, start: Any = 1) -> int:
    begin = integer(start, "LOCATE")
    if begin < 1:
        return 0
    return hay.find(needle, begin - 1) + 1


def _java_replacement(rep: str) -> str:
    """Java's ``$1`` group references in a replacement, as Python's ``\\g<1>``."""
    return re.sub(r"\\(.)|\$(\d+)",
                  lambda m: m.group(1).replace("\\", "\\\\") if m.group(1) is not None
                  else f"\\g<{m.group(2)}>", rep)


def _regexp_extract(s: str, pattern: str, group: Any = 0) -> str | None:
    found = re.search(pattern, s)
    if found is None:
        return None
    return found.group(integer(group, "REGEXP_EXTRACT"))


def _round(value: Any, places: Any = 0) -> Any:
    num = number(value, "ROUND")
    digits = integer(places, "ROUND")
    if isinstance(num, int) and digits >= 0:
        return num
    exact = Decimal(num) if not isinstance(num, Decimal) else num
    rounded = exact.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    if isinstance(num, float):
        return float(rounded)
    return int(rounded) if isinstance(num, int) else rounded


def _rounding(mode: str) -> Callable[[Any], Any]:
    def apply(value: Any) -> Any:
        num = number(value, mode)
        if isinstance(num, int):
            return num
        if isinstance(num, float):
            return float(math.ceil(num) if mode == ROUND_CEILING else math.floor(num))
        return num.quantize(Decimal(1), rounding=mode)
    return apply


def _trim(chars: str | None, left: bool, right: bool) -> Callable[..., str]:
    def apply(s: Any, strip: Any = None) -> str:
        these = chars if strip is None else text(strip)
        value = text(s)
        if left:
            value = value.lstrip(these)
        if right:
            value = value.rstrip(these)
        return value
    return apply


# name -> (function, fewest args, most args); each gets non-NULL args only
FUNCTIONS: dict[str, tuple[Callable[..., Any], int, int]] = {
    "UPPER": (lambda s: text(s).upper(), 1, 1),
    "LOWER": (lambda s: text(s).lower(), 1, 1),
    "CHAR_LENGTH": (lambda s: _utf16(text(s)), 1, 1),
    "CHARACTER_LENGTH": (lambda s: _utf16(text(s)), 1, 1),
    "TRIM": (_trim(" ", True, True), 1, 1),
    "BTRIM": (_trim(" ", True, True), 1, 2),
    "LTRIM": (_trim(" ", True, False), 1, 2),
    "RTRIM": (_trim(" ", False, True), 1, 2),
    "SUBSTR": (lambda s, *a: _substr(text(s), *a), 2, 3),
    "SUBSTRING": (lambda s, *a: _substr(text(s), *a), 2, 3),
    "REPLACE": (lambda s, a, b: text(s).replace(text(a), text(b)), 3, 3),
    "LPAD": (lambda s, n, f: _pad(text(s), n, text(f), True), 3, 3),
    "RPAD": (lambda s, n, f: _pad(text(s), n, text(f), False), 3, 3),
    "REPEAT": (lambda s, n: text(s) * max(integer(n, "REPEAT"), 0), 2, 2),
    "LEFT": (lambda s, n: text(s)[:max(integer(n, "LEFT"), 0)], 2, 2),
    "RIGHT": (lambda s, n: text(s)[len(text(s)) - max(integer(n, "RIGHT"), 0):]
              if integer(n, "RIGHT") > 0 else "", 2, 2),
    "LOCATE": (lambda a, b, *s: _locate(text(a), text(b), *s), 2, 3),
    "POSITION": (lambda a, b, *s: _locate(text(a), text(b), *s), 2, 3),
    "INSTR": (lambda a, b: text(a).find(text(b)) + 1, 2, 2),
    "STARTSWITH": (lambda a, b: text(a).startswith(text(b)), 2, 2),
    "ENDSWITH": (lambda a, b: text(a).endswith(text(b)), 2, 2),
    "REGEXP_REPLACE": (lambda s, p, r: re.sub(text(p), _java_replacement(text(r)), text(s)),
                       3, 3),
    "REGEXP_EXTRACT": (lambda s, p, *g: _regexp_extract(text(s), text(p), *g), 2, 3),
    "ABS": (lambda x: abs(number(x, "ABS")), 1, 1),
    "CEIL": (_rounding(ROUND_CEILING), 1, 1),
    "CEILING": (_rounding(ROUND_CEILING), 1, 1),
    "FLOOR": (_rounding(ROUND_FLOOR), 1, 1),
    "ROUND": (_round, 1, 2),
    "EXTRACT": (extract, 2, 2),
    **{unit: (_extractor(unit), 1, 1)
       for unit in ("YEAR", "QUARTER", "MONTH", "WEEK", "DAYOFYEAR", "DAYOFMONTH",
                    "DAYOFWEEK", "HOUR", "MINUTE", "SECOND")},
}

# Functions that see NULL arguments themselves (the evaluator handles them by name)
NULL_AWARE = frozenset({"CONCAT", "CONCAT_WS", "COALESCE", "IF", "IFNULL", "NULLIF", "MOD"})

# A value that differs at every evaluation cannot be reproduced by a replay after a failure
# nor checked by `verify`: refused, with this reason.
NONDETERMINISTIC = frozenset({
    "NOW", "CURRENT_TIMESTAMP", "LOCALTIMESTAMP", "LOCALTIME", "CURRENT_TIME",
    "CURRENT_DATE", "UUID", "RAND", "RAND_INTEGER", "UNIX_TIMESTAMP", "PROCTIME",
})

__all__ = ["FUNCTIONS", "NONDETERMINISTIC", "NULL_AWARE", "ROUND_DOWN", "EvaluationError",
           "integer", "number", "text"]
