"""Durations in Flink's spelling."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from pydantic_core import PydanticCustomError

from cdc_ingest.config import format_duration, parse_duration


@pytest.mark.parametrize(("text", "expected"), [
    ("500ms", timedelta(milliseconds=500)),
    ("30s", timedelta(seconds=30)),
    ("5min", timedelta(minutes=5)),
    ("1h", timedelta(hours=1)),
    ("1 s", timedelta(seconds=1)),
    ("2d", timedelta(days=2)),
    ("10 SEC", timedelta(seconds=10)),
    ("3 minutes", timedelta(minutes=3)),
    ("250", timedelta(milliseconds=250)),
    (1500, timedelta(milliseconds=1500)),
    (0, timedelta(0)),
    (timedelta(seconds=2), timedelta(seconds=2)),
])
def test_parse(text: Any, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("bad", ["", "1.5s", "-1s", "s", "5 parsecs", True, 1.5, -3, None])
def test_rejects(bad: Any) -> None:
    with pytest.raises(PydanticCustomError):
        parse_duration(bad)


@pytest.mark.parametrize(("value", "text"), [
    (timedelta(seconds=30), "30s"), (timedelta(minutes=5), "5min"),
    (timedelta(milliseconds=1500), "1500ms"), (timedelta(hours=2), "2h"), (timedelta(0), "0ms"),
])
def test_format(value: timedelta, text: str) -> None:
    assert format_duration(value) == text
    assert parse_duration(text) == value
