"""Value types of the MySQL source: startup mode, server-id range, time zone, key columns."""

from __future__ import annotations

import re
import zoneinfo
from enum import StrEnum
from functools import lru_cache
from typing import Annotated, Any, NamedTuple

from pydantic import BeforeValidator, PlainSerializer, PlainValidator

from cdc_ingest.config.problems import problem
from cdc_ingest.config.types import FrozenDict, choice
from cdc_ingest.errors import ConfigError
from cdc_ingest.routing.selectors import TableSelector

_SERVER_ID = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?")
_MAX_SERVER_ID = 2**32 - 1
_OFFSET_ZONE = re.compile(r"(?:UTC|GMT)?[+-]\d{1,2}(?::?\d{2})?")


class StartupMode(StrEnum):
    """``scan.startup.mode``: where capture starts the first time (docs/architecture.md,
    "Snapshot")."""

    INITIAL = "initial"
    SNAPSHOT = "snapshot"
    LATEST_OFFSET = "latest-offset"
    EARLIEST_OFFSET = "earliest-offset"
    SPECIFIC_OFFSET = "specific-offset"
    TIMESTAMP = "timestamp"


class ServerIdRange(NamedTuple):
    """``server-id``: one id (``5400``) or an inclusive range (``5400-5404``)."""

    first: int
    last: int

    @property
    def size(self) -> int:
        return self.last - self.first + 1

    def __str__(self) -> str:
        return str(self.first) if self.first == self.last else f"{self.first}-{self.last}"


def _server_id(value: Any) -> ServerIdRange:
    if isinstance(value, ServerIdRange):
        return value
    match = _SERVER_ID.fullmatch(str(value)) if not isinstance(value, bool) else None
    fix = "write one number (5400) or a range (5400-5404), unique among the server's replicas"
    if match is None:
        raise problem("is not a server id or range", fix)
    first = int(match.group(1))
    last = int(match.group(2) or first)
    if not 1 <= first <= last <= _MAX_SERVER_ID:
        raise problem(f"must be between 1 and {_MAX_SERVER_ID}, low end first", fix)
    return ServerIdRange(first, last)


@lru_cache(maxsize=1)
def _known_zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def _time_zone(value: Any) -> str:
    text = str(value).strip()
    zones = _known_zones()
    # Without a tz database on this machine we cannot tell; MySQL will, at connect time.
    if text in ("UTC", "Z") or _OFFSET_ZONE.fullmatch(text) or not zones or text in zones:
        return text
    raise problem("is not a known time zone", "use an IANA name (Asia/Shanghai) or +08:00")


@lru_cache(maxsize=256)
def selector(text: str, option: str) -> TableSelector:
    """Parsed selectors, shared: definitions are parsed often in tests and by every process."""
    return TableSelector.parse(text, option)


def checked_selector(value: str, option: str) -> str:
    """A selector text as a validator takes it: parsed (and cached), or the problem."""
    try:
        selector(value, option)
    except ConfigError as exc:
        raise problem(exc.problems[0].message, exc.problems[0].fix) from None
    return value


def _selector_field(option: str) -> PlainValidator:
    def parse(value: Any) -> TableSelector:
        if isinstance(value, TableSelector):
            return value
        if not isinstance(value, str | int):
            raise problem("must be a table selector text", "e.g. shop.\\.*, app.order_[0-9]+")
        try:
            return selector(str(value), option)
        except ConfigError as exc:
            first = exc.problems[0]
            raise problem(first.message, first.fix) from None

    return PlainValidator(parse)


def _columns(value: Any) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(c, str) for c in items):
        return ()
    return tuple(c.strip() for c in items if c.strip())


def _key_columns(value: Any) -> FrozenDict[str, tuple[str, ...]]:
    fix = "map each table to its key columns, e.g. app.audit_log: id,created_at"
    if not isinstance(value, dict):
        raise problem("must be a mapping of table to key columns", fix)
    result: dict[str, tuple[str, ...]] = {}
    for table, columns in value.items():
        try:
            selector(str(table), "tables.key-columns")
        except ConfigError as exc:
            raise problem(f"entry '{table}': {exc.problems[0].message}", fix) from None
        result[str(table)] = _columns(columns)
        if not result[str(table)]:
            raise problem(f"entry '{table}' names no column", fix)
    return FrozenDict(result)


_AS_TEXT = PlainSerializer(str, return_type=str, when_used="json")

ServerId = Annotated[ServerIdRange, PlainValidator(_server_id), _AS_TEXT]
TimeZone = Annotated[str, BeforeValidator(_time_zone)]
Tables = Annotated[TableSelector, _selector_field("tables"), _AS_TEXT]
ExcludedTables = Annotated[TableSelector, _selector_field("tables.exclude"), _AS_TEXT]
KeyColumns = Annotated[FrozenDict[str, tuple[str, ...]], PlainValidator(_key_columns)]
StartupModeOption = Annotated[StartupMode, choice(StartupMode)]


METADATA = ("op_ts",)


def _metadata_list(value: Any) -> tuple[str, ...]:
    parts = value if isinstance(value, list | tuple) else str(value or "").split(",")
    names = tuple(str(n).strip() for n in parts if str(n).strip())
    unknown = [n for n in names if n not in METADATA]
    if unknown:
        raise problem(f"names metadata the MySQL source does not have: {', '.join(unknown)}",
                      f"use {', '.join(METADATA)} (Flink CDC's MySQL pipeline source has "
                      "no other)")
    return names


MetadataList = Annotated[tuple[str, ...], PlainValidator(_metadata_list),
                         PlainSerializer(",".join, return_type=str)]
