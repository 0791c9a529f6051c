"""The typed layout a changelog row names (``"layout"``), looked up in the schema topic.

Capture writes each typed layout (capture/typed_layout.py) to the schema topic in the Kafka
transaction that holds its first rows, so a committed row's layout is always there to read.
A task reads the topic again only for a layout it has not seen; what it read stays for the
life of the Python worker.
"""

from __future__ import annotations

import threading
from typing import Any

from cdc_ingest.errors import SinkError
from cdc_ingest.kafka import read_topic
from cdc_ingest.model.changelog import older_capture
from cdc_ingest.model.schema_topic import SchemaTopic, fold

_READ = SchemaTopic()  # layouts only: what tasks of this worker have read
_LOCK = threading.Lock()


def typed_layout(kafka: dict[str, Any], topic: str, layout: str | None, table: str,
                 pos: str) -> list[dict[str, Any]]:
    """The columns of ``layout`` (``[{"name","type","nullable","default","comment"}]``)."""
    if layout is None:
        raise SinkError(older_capture(
            f"the change of {table} at binlog {pos}", "layout", "debezium-json.include-schema"
            ".enabled or timestamp-format.standard: ISO-8601 (the column types)"))
    found = _READ.layouts.get(layout)
    if found is None:
        with _LOCK:
            found = _READ.layouts.get(layout)
            if found is None:
                _read(kafka, topic)
                found = _READ.layouts.get(layout)
    if found is None:
        raise SinkError(
            f"a change of {table} at binlog {pos} names column types (layout {layout}) that "
            f"the schema topic {topic} does not hold: it is not the schema topic of the "
            "pipeline whose capture wrote this changelog (a sink reading another pipeline's "
            "pipeline.changelog.topic must set pipeline.schema.topic to that pipeline's "
            "too), or it was deleted or its records removed by hand. Fix: point "
            "pipeline.schema.topic at the changelog's own schema topic; if that is gone, start "
            "a new pipeline (a new pipeline.name), whose capture writes the types again")
    return [dict(c) for c in found["columns"]]


def table_timestamps(kafka: dict[str, Any], topic: str, db: str, table: str
                     ) -> frozenset[bytes]:
    """The columns of ``db.table`` that are timestamps in any of its typed layouts."""
    with _LOCK:
        _read(kafka, topic)
        return frozenset(name.encode() for name in _READ.timestamps(db, table))


def _read(kafka: dict[str, Any], topic: str) -> None:
    # settled: the row's transaction is committed, but its marker may reach the schema
    # topic's partition a moment after the changelog's
    fold(read_topic(kafka, topic, settled=True), into=_READ)
    _READ.tables.clear()  # a task needs only the layouts


class SchemaTopicLayouts:
    """The typed layouts of one schema topic, as a format asks for them
    (:class:`cdc_ingest.formats.lookups.Layouts`)."""

    def __init__(self, kafka: dict[str, Any], topic: str) -> None:
        self._kafka, self._topic = kafka, topic

    def columns(self, layout: str | None, table: str, pos: str) -> list[dict[str, Any]]:
        return typed_layout(self._kafka, self._topic, layout, table, pos)

    def timestamps(self, db: str, table: str) -> frozenset[bytes]:
        return table_timestamps(self._kafka, self._topic, db, table)
