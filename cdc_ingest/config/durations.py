"""Durations written as Flink writes them: ``500ms``, ``30s``, ``5min``, ``1h``, ``1 s``.

A bare integer (``500`` or ``"500"``) is milliseconds, like Flink's ``Duration`` options.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, PlainSerializer

from cdc_ingest.config.problems import problem

_MS_PER_UNIT = {
    **dict.fromkeys(("ms", "milli", "millis", "millisecond", "milliseconds"), 1),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1_000),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 60_000),
    **dict.fromkeys(("h", "hour", "hours"), 3_600_000),
    **dict.fromkeys(("d", "day", "days"), 86_400_000),
}
_DURATION = re.compile(r"\s*(\d+)\s*([A-Za-z]*)\s*")
_FIX = "write a whole number with a unit: 500ms, 30s, 5min, 1h (a bare number is milliseconds)"


def parse_duration(value: Any) -> timedelta:
    """Parse a duration; raises a config problem that never echoes the value."""
    if isinstance(value, timedelta):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise problem("must not be negative", _FIX)
        return timedelta(milliseconds=value)
    if not isinstance(value, str):
        raise problem("is not a duration", _FIX)
    match = _DURATION.fullmatch(value)
    if match is None:
        raise problem("is not a duration", _FIX)
    amount, unit = match.groups()
    factor = _MS_PER_UNIT.get(unit.lower() or "ms")
    if factor is None:
        raise problem("has an unknown time unit", f"use ms, s, min, h or d; {_FIX}")
    return timedelta(milliseconds=int(amount) * factor)


def _positive(value: timedelta) -> timedelta:
    if value <= timedelta(0):
        raise problem("must be longer than zero", _FIX)
    return value


def format_duration(value: timedelta) -> str:
    """The shortest exact spelling, for messages and docs: ``30s``, ``1500ms``."""
    ms = round(value.total_seconds() * 1000)
    for unit, factor in (("h", 3_600_000), ("min", 60_000), ("s", 1_000)):
        if ms and ms % factor == 0:
            return f"{ms // factor}{unit}"
    return f"{ms}ms"


# JSON dumps use the YAML spelling, so a dumped definition reads back in.
_AS_TEXT = PlainSerializer(format_duration, return_type=str, when_used="json")

Duration = Annotated[timedelta, BeforeValidator(parse_duration), _AS_TEXT]
"""A duration of zero or more (zero usually means "disabled")."""

PositiveDuration = Annotated[
    timedelta, BeforeValidator(parse_duration), AfterValidator(_positive), _AS_TEXT
]
"""A duration that must be longer than zero."""
