"""Where a first start begins, from ``scan.startup.mode`` and its options."""

from __future__ import annotations

from dataclasses import dataclass

from cdc_ingest.capture.catalog import Catalog
from cdc_ingest.errors import ConfigError, ConfigProblem
from cdc_ingest.model import Position


@dataclass(frozen=True)
class StartupSpec:
    mode: str = "latest-offset"
    file: str | None = None
    pos: int | None = None
    gtid_set: str | None = None
    skip_rows: int = 0
    timestamp_ms: int | None = None


def resolve_start(spec: StartupSpec, catalog: Catalog) -> Position:
    if spec.mode in ("latest-offset", "initial", "snapshot"):
        # initial/snapshot: the binlog phase starts where the snapshot starts.
        return catalog.latest()
    if spec.mode == "earliest-offset":
        return catalog.earliest()
    if spec.mode == "specific-offset":
        if spec.gtid_set:
            return Position(gtid_set=spec.gtid_set, rows_done=spec.skip_rows)
        if spec.file and spec.pos is not None:
            return catalog.at(spec.file, spec.pos)
    if spec.mode == "timestamp" and spec.timestamp_ms is not None:
        # Transactions older than the timestamp are skipped by the reader (see Capture).
        return catalog.earliest()
    raise ConfigError(
        ConfigProblem("source.scan.startup.mode", f"'{spec.mode}' lacks its options",
                      "see the scan.startup.* options")
    )
