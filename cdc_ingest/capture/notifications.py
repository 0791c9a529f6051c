"""Notifications: what capture is doing, for operators and their tools, on the pipeline's
notification topic (``<prefix>.notifications``, one partition), in Debezium's notification
format as its Kafka sink channel writes it:

    {"id": "...", "aggregate_type": "Initial Snapshot", "type": "IN_PROGRESS",
     "additional_data": {"connector_name": "shop", "data_collections": "shop.a, shop.b",
                         "current_collection_in_progress": "shop.a", ...},
     "timestamp": "1764672000000"}

The record's key is the pipeline's name. ``additional_data`` is a map of strings, as
Debezium's. Each notification is written in the capture transaction of what it tells of (the
chunk whose rows it counts), so one is never visible before those rows are committed, and
after a crash the work is redone with its notification, never notified twice
(docs/output-contract.md#notifications).

A snapshot's notifications, in order: ``STARTED`` with its first chunk; ``IN_PROGRESS`` with
each chunk (the table, the rows read of it so far, MySQL's estimate of its rows);
``TABLE_SCAN_COMPLETED`` with a table's last chunk (the rows read, ``status`` SUCCEEDED);
``COMPLETED`` with the last chunk of the last table. ``aggregate_type`` is ``Initial
Snapshot`` for the first start's snapshot and ``Incremental Snapshot`` for one taken while the
pipeline runs (requested with ``cdc-ingest snapshot``, a newly added table, a table renamed to
a captured name); ``id`` is the snapshot's: the request's id for a requested one, else made
when the snapshot was planned, the same in every notification of that snapshot.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any, Protocol

import orjson

from cdc_ingest.capture.signal_format import Signal
from cdc_ingest.capture.snapshot.state import Chunk, SnapshotState

INITIAL, INCREMENTAL = "Initial Snapshot", "Incremental Snapshot"
SIGNAL, TAKEN, REFUSED = "Signal", "TAKEN", "REFUSED"
STARTED, IN_PROGRESS, TABLE_SCAN_COMPLETED, COMPLETED, ABORTED = (
    "STARTED", "IN_PROGRESS", "TABLE_SCAN_COMPLETED", "COMPLETED", "ABORTED")
PAUSED, RESUMED = "PAUSED", "RESUMED"  # capture/snapshot_control.py


class NotificationSink(Protocol):
    def notification(self, key: bytes, value: bytes, ts_ms: int) -> None: ...


def new_note(aggregate: str, snapshot_id: str | None = None) -> dict[str, Any]:
    """What a snapshot's state keeps for its notifications (``SnapshotState.note``)."""
    return {"id": snapshot_id or str(uuid.uuid4()), "aggregate": aggregate, "started": False,
            "scanned": 0}


def notification(snapshot_id: str, aggregate: str, kind: str, data: dict[str, str],
                 ts_ms: int) -> bytes:
    """One notification's value."""
    return orjson.dumps({"id": snapshot_id, "aggregate_type": aggregate, "type": kind,
                         "additional_data": data, "timestamp": str(ts_ms)})


def snapshot_note(pipeline: str, note: dict[str, Any], kind: str, data: dict[str, str]
                  ) -> bytes:
    """A notification of the snapshot ``note`` describes (``SnapshotState.note``)."""
    return notification(note["id"], note["aggregate"], kind,
                        {"connector_name": pipeline, **data}, int(time.time() * 1000))


def signal_note(pipeline: str, signal: Signal, took: list[str], why: list[str]) -> bytes:
    """A signal read from the signal topic: ``TAKEN`` (``data_collections``: what it asked
    that capture does; ``reason``: what of it was refused, if anything) or ``REFUSED`` (all
    of it, ``reason`` saying why)."""
    data = {"connector_name": pipeline, "signal_type": signal.type,
            "signal_offset": str(signal.offset)}
    if took:
        data["data_collections"] = ", ".join(took)
    if why:
        data["reason"] = "; ".join(why)
    return notification(signal.id, SIGNAL, TAKEN if took else REFUSED, data,
                        int(time.time() * 1000))


class SnapshotNotes:
    """The notifications of a snapshot's chunks, into the chunk's transaction."""

    def __init__(self, sink: NotificationSink, pipeline: str,
                 estimate: Callable[[str, str], int]) -> None:
        self._sink = sink
        self._pipeline = pipeline
        self._key = pipeline.encode()
        self._estimate = estimate
        self._estimates: dict[tuple[str, str], int] = {}

    def chunk(self, state: SnapshotState, chunk: Chunk, rows: int, ts_ms: int) -> None:
        """``chunk`` (``rows`` rows) goes into the open transaction with ``state``, after
        ``state.chunk_done``; a key chunk (a repair) is not a snapshot's and says nothing."""
        note = state.note
        if note is None or chunk.keys is not None:
            return
        table = f"{chunk.db}.{chunk.table}"
        base = {"connector_name": self._pipeline,
                "data_collections": ", ".join(".".join(t) for t in state.tables)}

        def send(kind: str, data: dict[str, str]) -> None:
            value = notification(note["id"], note["aggregate"], kind, data, ts_ms)
            self._sink.notification(self._key, value, ts_ms)

        if not note["started"]:
            send(STARTED, base)
            note["started"] = True
        note["scanned"] = int(note["scanned"]) + rows
        send(IN_PROGRESS, {**base, "current_collection_in_progress": table,
                           "rows_scanned": str(note["scanned"]),
                           "total_rows_estimate": str(self._table_estimate(chunk))})
        if chunk.upto is None:
            send(TABLE_SCAN_COMPLETED, {**base, "data_collection": table,
                                        "scanned_collection": table,
                                        "total_rows_scanned": str(note["scanned"]),
                                        "status": "SUCCEEDED"})
            note["scanned"] = 0
        if state.done:
            send(COMPLETED, base)
            note["completed"] = True

    def finish(self, state: SnapshotState, ts_ms: int) -> bool:
        """``COMPLETED`` for a done snapshot whose last chunk did not say it (its last table
        was dropped before it was read); True when it was sent (the caller commits)."""
        note = state.note
        if note is None or not state.done or not note["started"] or note.get("completed"):
            return False
        base = {"connector_name": self._pipeline,
                "data_collections": ", ".join(".".join(t) for t in state.tables)}
        self._sink.notification(self._key, notification(note["id"], note["aggregate"],
                                                        COMPLETED, base, ts_ms), ts_ms)
        note["completed"] = True
        return True

    def _table_estimate(self, chunk: Chunk) -> int:
        key = (chunk.db, chunk.table)
        if key not in self._estimates:
            self._estimates[key] = self._estimate(chunk.db, chunk.table)
        return self._estimates[key]
