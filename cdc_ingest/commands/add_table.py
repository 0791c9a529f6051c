"""``cdc-ingest add-table``: a running pipeline takes in tables newly selected by its edited
pipeline file, with their existing rows or from now on (capture/add_table.py)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from cdc_ingest.capture.add_table import file_digest
from cdc_ingest.capture.signal_format import ADD_TABLE
from cdc_ingest.commands.snapshot import named_tables, signal_and_wait
from cdc_ingest.config.loader import read_pipeline
from cdc_ingest.errors import ConfigProblem
from cdc_ingest.kafka.signals import send_one
from cdc_ingest.mysql import Catalog, connection_settings


def request_add_table(config_path: Path, names: list[str], echo: Callable[[str], None],
                      wait_s: float, with_rows: bool) -> str:
    """Check the edited file and the tables, write the signal with the file's digest, then
    wait for capture's answer (commands/snapshot.py ``signal_and_wait``); returns its id."""
    data, defn = read_pipeline(config_path)
    catalog = Catalog(connection_settings(defn.source), retries=0)
    try:
        existing = set(catalog.tables())
    finally:
        catalog.close()
    tables = named_tables(defn, names, existing, [], ConfigProblem(
        "", f"is not selected by {config_path}", "add it to source.tables (and keep it out "
        "of source.tables.exclude) first, then run add-table"))
    listed = ", ".join(f"{db}.{table}" for db, table in tables)

    def send(kafka: dict[str, Any]) -> tuple[str, str]:
        signal_id = uuid.uuid4().hex[:12]
        value = orjson.dumps({"type": ADD_TABLE, "id": signal_id,
                              "tables": [f"{db}.{table}" for db, table in tables],
                              "snapshot": with_rows, "config_sha256": file_digest(data),
                              "requested_ms": int(time.time() * 1000)})
        send_one(kafka, defn.signal_topic, signal_id.encode(), value)
        then = ("their rows are snapshotted while the binlog goes on" if with_rows
                else "their changes from then on are captured, not their earlier rows")
        return signal_id, (
            f"add-table of {listed} requested (request {signal_id}). The running capture "
            f"takes it within a few seconds (if none runs, the next start does): {then}. "
            "Keep the pipeline file as it is until capture answers.")

    return signal_and_wait(defn, send, echo, wait_s, "added")
