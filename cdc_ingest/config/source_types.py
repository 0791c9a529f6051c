"""Value types of the MySQL source: startup mode, server-id range, time zone, key columns."""

from __future__ import annotations

import re
import zoneinfo
from enum import StrEnum
from functools import lru_cache
from typing import Annotated, Any, NamedTuple

from pydantic import BeforeValidator, PlainSerializer, PlainValidator

from cdc_ingest.config.problems import Found, problem
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

    def capture_ids(self, snapshot_readers: int) -> range:
        """The ids capture replicates as: the binlog reader takes ``first``, snapshot reader
        *i* ``first + 1 + i``. A range holds them all (:func:`capture_id_problems` refuses a
        smaller one); a single id is the binlog reader's, and the readers take the ids right
        after it."""
        return range(self.first, self.first + 1 + snapshot_readers)


_PARALLELISM = "scan.incremental.snapshot.parallelism"


def capture_id_problems(ids: ServerIdRange, snapshot_readers: int, *,
                        implied_by: int | None = None) -> Found:
    """``server-id`` problems of capture with ``snapshot_readers`` snapshot readers; the
    parallelism is ``implied_by`` ``pipeline.parallelism`` (that value) when not set.

    A range must hold 1 binlog reader + the snapshot readers. A single id with the
    parallelism set above 1 is refused as well (as it always was: asking for parallel
    readers asks for a range); with the parallelism implied, or 1, a single id lends its
    readers the ids right after it, up to the largest server id."""
    needed = 1 + snapshot_readers
    if ids.size == 1:
        if implied_by is not None or snapshot_readers == 1:
            return _past_the_last_id(ids, needed)
        message = (f"is a single id; with {_PARALLELISM} {snapshot_readers} capture needs "
                   f"{needed} ({_readers(snapshot_readers)})")
    elif ids.size >= needed:
        return []
    else:
        message = (f"the range {ids} has {ids.size} ids; capture needs {needed} "
                   f"({_readers(snapshot_readers)})")
    first = min(ids.first, _MAX_SERVER_ID - needed + 1)
    fewer = max(ids.size - 1, 1)  # a single id serves one snapshot reader
    lower = (f"lower {_PARALLELISM} to {fewer}" if implied_by is None else
             f"set {_PARALLELISM}: {fewer}, which now follows pipeline.parallelism: "
             f"{implied_by}")
    verb = "widen it to" if ids.size > 1 else "write the range"
    return [(("server-id",), message, f"{verb} {first}-{first + needed - 1}, or {lower}")]


def _readers(snapshot_readers: int) -> str:
    plural = "s" if snapshot_readers > 1 else ""
    return f"1 binlog reader + {snapshot_readers} snapshot reader{plural}"


def _past_the_last_id(ids: ServerIdRange, needed: int) -> Found:
    last = ids.first + needed - 1
    if last <= _MAX_SERVER_ID:
        return []
    first = _MAX_SERVER_ID - needed + 1
    return [(("server-id",), f"leaves the snapshot readers ids above {_MAX_SERVER_ID} "
             f"(capture needs {needed}: {_readers(needed - 1)})",
             f"write the range {first}-{_MAX_SERVER_ID}, or a lower id")]


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
