"""``cdc-ingest verify --repair``: the keys that differ written again, exactly once, while
writes go on; nothing else in the topics touched.

1. A verify pass (quiet) finds the differences, each confirmed against binlog positions
   (verify/settle.py); verify/repair.py says which keys of which table to read again.
2. One repair request goes into the pipeline's signal topic with those keys per table.
   Capture takes it (capture/signals.py) and reads each table's keys again as key chunks
   (capture/snapshot/repair.py): a row MySQL has is written again as a snapshot row, a key
   it has not as a delete (the sink tombstones it); the binlog after each chunk is filtered
   by its keys up to its high watermark, as after any snapshot chunk, so every later change
   of those keys follows once. The request and the rows it causes commit together: a kill
   anywhere carries it out once.
3. Once capture has carried it out and the sink has passed MySQL's binlog head, verify runs
   again (shown), and its verdict is the command's. A request capture refused (a snapshot is
   paused) exits 15 with capture's reason.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from cdc_ingest import exit_codes
from cdc_ingest.capture.notifications import REFUSED
from cdc_ingest.capture.positions import PositionStore
from cdc_ingest.capture.signals import send_repair
from cdc_ingest.capture.snapshot.state import SnapshotState
from cdc_ingest.commands.snapshot import SignalRefused, answer_to
from cdc_ingest.config import PipelineDef
from cdc_ingest.errors import CdcIngestError
from cdc_ingest.kafka import TopicAdmin, TopicSpec, read_topic
from cdc_ingest.kafka.consumer import Message
from cdc_ingest.mysql import connection_settings
from cdc_ingest.verify.clock import PipelineClock
from cdc_ingest.verify.repair import MAX_REPAIR, repair_keys
from cdc_ingest.verify.run import SETTLE_MARGIN_S, run_verify, verify_pipeline

log = logging.getLogger(__name__)

POLL_S = 1.0


class RepairNotDone(CdcIngestError):
    """Capture did not carry the repair out in time (not running, or far behind)."""

    exit_code = exit_codes.NOT_CAUGHT_UP


def refusal(notes: Iterable[Message], request: str) -> str | None:
    """Why capture refused ``request`` (its Signal notification says REFUSED), or None."""
    for message in notes:
        note = answer_to(message, request)
        if note is not None:
            if note.get("type") == REFUSED:
                return str(note.get("additional_data", {}).get("reason"))
            return None
    return None


def _carried_out(kafka: dict[str, Any], defn: PipelineDef, offset: int) -> bool:
    """Capture has taken the request at ``offset`` and read every key of it."""
    position = PositionStore(kafka, defn.pipeline.offsets_topic).load()
    if position is None or position.signals <= offset:
        return False
    state = position.snapshot
    return state is None or not SnapshotState.from_json(state).repairs


def run_repair(defn: PipelineDef, echo: Callable[[str], None], max_diffs: int,
               timeout_s: float) -> None:
    """See the module's docstring; raises like ``verify`` when differences stay."""
    quiet: list[str] = []
    results = verify_pipeline(defn, quiet.append, MAX_REPAIR)
    keys = repair_keys(defn, results, echo)
    if not keys:
        echo("verify --repair: nothing to repair by key; verifying")
        run_verify(defn, echo, max_diffs)
        return
    kafka = defn.kafka_config()
    TopicAdmin(kafka).ensure(TopicSpec(defn.signal_topic, 1,
                                       defn.sink.topic_replication_factor or -1,
                                       {"cleanup.policy": "compact"}))
    request, offset = send_repair(kafka, defn.signal_topic, keys)
    listed = ", ".join(f"{len(k)} of {db}.{t}" for (db, t), k in keys.items())
    echo(f"verify --repair: request {request}: key(s) to read again: {listed}")
    deadline = time.monotonic() + timeout_s
    while not _carried_out(kafka, defn, offset):
        if time.monotonic() > deadline:
            raise RepairNotDone(
                f"capture did not carry out repair request {request} within {timeout_s:.0f} s "
                "(it waits in the signal topic; capture takes it when it runs). Fix: start "
                "the pipeline (cdc-ingest start), then verify again.")
        time.sleep(POLL_S)
    refused = refusal(read_topic(kafka, defn.notification_topic), request)
    if refused is not None:  # e.g. while a snapshot is paused: nothing was read again
        raise SignalRefused(f"capture refused repair request {request}: {refused}")
    clock = PipelineClock(connection_settings(defn.source), kafka,
                          defn.pipeline.offsets_topic, defn.pipeline.changelog_topic,
                          defn.sink_group_id)
    try:
        head = clock.head()
        stall = defn.source.heartbeat_interval.total_seconds() + SETTLE_MARGIN_S
        if not clock.wait_past(head, max(1.0, deadline - time.monotonic()), stall_s=stall):
            raise RepairNotDone(f"the sink did not write repair request {request}'s rows "
                                f"within {timeout_s:.0f} s. Fix: see cdc-ingest status, "
                                "then verify again.")
    finally:
        clock.close()
    echo("verify --repair: capture read the keys again and the sink wrote them; verifying")
    run_verify(defn, echo, max_diffs)
