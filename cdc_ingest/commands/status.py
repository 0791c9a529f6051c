"""``cdc-ingest status``: where capture and the sink stand, and how far behind each is.

Capture: the committed position (offsets topic) against the binlog head. Sink: per changelog
partition, the records after the sink group's committed offset. A part that cannot be reached
is reported with its error instead of stopping the others.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import pymysql

from cdc_ingest.capture.add_table import not_captured_yet
from cdc_ingest.capture.positions import PositionStore
from cdc_ingest.capture.snapshot.state import SnapshotState
from cdc_ingest.config import PipelineDef
from cdc_ingest.errors import PURGED_FIX, CdcIngestError, PositionPurgedError, SourceError
from cdc_ingest.kafka import TopicAdmin, read_topic
from cdc_ingest.kafka.errors import KafkaClientError
from cdc_ingest.kafka.offsets import GroupOffsets
from cdc_ingest.kafka.signals import TopicEnd
from cdc_ingest.model import Position
from cdc_ingest.mysql import Catalog, connect, connection_settings


@dataclass
class CaptureStatus:
    position: Position | None = None
    head: Position | None = None
    behind_bytes: int | None = None
    behind_seconds: float | None = None
    error: str | None = None
    purged: str | None = None  # why the committed position cannot be resumed
    snapshot: str | None = None  # an unfinished snapshot in the committed position
    requests_waiting: int = 0  # signals (`cdc-ingest snapshot`, `add-table`, ...) not taken yet
    not_captured_yet: list[str] = field(default_factory=list)  # the file selects them, capture not
    exit_code: int = 0  # of what went wrong (0: nothing)
    # each table's committed totals, read with the position (shown by ``status --tables``)
    table_totals: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass
class PartitionLag:
    """``end_offset``: after the partition's last committed record; ``lag``: records at or
    after the group's committed offset (all of them when it has none)."""

    partition: int
    end_offset: int | None = None
    committed: int | None = None
    lag: int = 0
    last_sink_event_ms: int | None = None


@dataclass
class SinkStatus:
    changelog_topic: str
    group: str
    partitions: list[PartitionLag] = field(default_factory=list)
    error: str | None = None

    @property
    def lag(self) -> int:
        return sum(p.lag for p in self.partitions)

    @property
    def last_event_ms(self) -> int | None:
        times = [p.last_sink_event_ms for p in self.partitions if p.last_sink_event_ms]
        return max(times) if times else None


def _bytes_behind(defn: PipelineDef, position: Position, head: Position) -> int | None:
    if not position.file or position.pos is None or head.file is None or head.pos is None:
        return None
    if position.file == head.file:
        return max(head.pos - position.pos, 0)
    conn = connect(connection_settings(defn.source), retries=0)
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW BINARY LOGS")
            sizes = [(str(r[0]), int(r[1])) for r in cur.fetchall()]
    finally:
        conn.close()
    names = [name for name, _ in sizes]
    if position.file not in names or head.file not in names:
        return None
    start, end = names.index(position.file), names.index(head.file)
    return sum(size for _, size in sizes[start:end]) - position.pos + head.pos


def capture_status(defn: PipelineDef, kafka: dict[str, Any]) -> CaptureStatus:
    status = CaptureStatus()
    try:
        store = PositionStore(kafka, defn.pipeline.offsets_topic)
        status.position = store.load()
        status.table_totals = store.table_totals
        status.snapshot = _snapshot_progress(status.position)
        status.requests_waiting = _requests_waiting(defn, kafka, status.position)
        catalog = Catalog(connection_settings(defn.source), retries=0)
        try:
            status.head = catalog.latest()
            if status.position is not None:
                status.purged = catalog.purged_before(status.position)
                status.not_captured_yet = not_captured_yet(defn, status.position.tables,
                                                           catalog.tables())
        finally:
            catalog.close()
        if status.position is not None and status.purged is None:
            behind = _bytes_behind(defn, status.position, status.head)
            status.behind_bytes = behind
            if behind == 0:
                status.behind_seconds = 0.0
            elif status.position.ts_ms:
                status.behind_seconds = max(time.time() - status.position.ts_ms / 1000, 0.0)
    except CdcIngestError as exc:
        status.error, status.exit_code = str(exc), exc.exit_code
    except pymysql.MySQLError as exc:
        status.error, status.exit_code = str(exc), SourceError.exit_code
    if status.purged is not None:
        status.exit_code = PositionPurgedError.exit_code
    return status


def _snapshot_progress(position: Position | None) -> str | None:
    if position is None or position.snapshot is None:
        return None
    state = SnapshotState.from_json(position.snapshot)
    if state.done:
        return None
    if state.rekey is not None:
        return f"re-key of {state.rekey.get('db')}.{state.rekey.get('table')} unfinished"
    if state.repairs:
        return (("paused, " if state.paused else "")
                + f"repair: {sum(len(r[2]) for r in state.repairs)} key(s) of "
                f"{len({tuple(r[:2]) for r in state.repairs})} table(s) to read again")
    tables = [".".join(t) for t in state.tables]
    if state.table >= len(tables):
        return None
    return (("paused (cdc-ingest resume-snapshot reads on): " if state.paused else "")
            + f"table {state.table + 1} of {len(tables)} ({tables[state.table]}), "
            f"{len(state.chunks)} chunk(s) committed")


def _requests_waiting(defn: PipelineDef, kafka: dict[str, Any],
                      position: Position | None) -> int:
    if TopicAdmin(kafka).partitions(defn.signal_topic) is None:
        return 0
    end = TopicEnd(kafka, defn.signal_topic)
    try:
        return max(end.end() - (position.signals if position is not None else 0), 0)
    finally:
        end.close()


def sink_status(defn: PipelineDef, kafka: dict[str, Any]) -> SinkStatus:
    topic = defn.pipeline.changelog_topic
    status = SinkStatus(topic, defn.sink_group_id)
    try:
        group = GroupOffsets(kafka, defn.sink_group_id)
        try:
            partitions = group.partitions(topic)
            committed = group.committed(topic, partitions)
            lags = {p: PartitionLag(p, committed=committed.get(p)) for p in partitions}
        finally:
            group.close()
        # One pass over the changelog: exact rows (transaction markers take offsets too).
        for msg in read_topic(kafka, topic):
            lag = lags.setdefault(msg.partition, PartitionLag(msg.partition))
            lag.end_offset = max(lag.end_offset or 0, msg.offset + 1)
            if lag.committed is None or msg.offset >= lag.committed:
                lag.lag += 1
            elif msg.timestamp_ms > (lag.last_sink_event_ms or 0):
                lag.last_sink_event_ms = msg.timestamp_ms
        status.partitions = [lags[p] for p in sorted(lags)]
    except CdcIngestError as exc:
        status.error = str(exc)
    return status


@dataclass
class PipelineStatus:
    pipeline: str
    capture: CaptureStatus
    sink: SinkStatus

    def as_dict(self) -> dict[str, Any]:
        capture = asdict(self.capture)
        capture.pop("table_totals")  # `--tables` shows them, as "tables"
        sink = asdict(self.sink)
        sink["lag"] = self.sink.lag
        sink["last_event_ms"] = self.sink.last_event_ms
        sink["last_event"] = utc_text(self.sink.last_event_ms)
        if self.capture.position is not None:
            capture["position"]["ts"] = utc_text(self.capture.position.ts_ms)
        if self.capture.head is not None:  # its ts_ms is only when it was asked
            capture["head"] = {k: capture["head"][k] for k in ("gtid_set", "file", "pos")}
        return {"pipeline": self.pipeline, "capture": capture, "sink": sink}


def pipeline_status(defn: PipelineDef) -> PipelineStatus:
    kafka = defn.kafka_config()
    return PipelineStatus(defn.name, capture_status(defn, kafka), sink_status(defn, kafka))


def utc_text(ms: int | None) -> str | None:
    if not ms:
        return None
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _where(position: Position) -> str:
    parts = [f"gtid {position.gtid_set}"] if position.gtid_set else []
    if position.file:
        parts.append(f"binlog {position.file}:{position.pos}")
    if position.tx_gtid:
        parts.append(f"inside {position.tx_gtid} after {position.rows_done} rows")
    return ", ".join(parts) or "(empty)"


def _capture_lines(capture: CaptureStatus) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    if capture.position is None:
        rows.append(("capture position", "none committed yet"))
    else:
        when = utc_text(capture.position.ts_ms) or "?"
        rows.append(("capture position", f"{_where(capture.position)} (last event {when})"))
    if capture.head is not None:
        rows.append(("binlog head", _where(capture.head)))
    if capture.behind_bytes is not None or capture.behind_seconds is not None:
        size = "?" if capture.behind_bytes is None else f"{capture.behind_bytes} bytes"
        secs = "?" if capture.behind_seconds is None else f"{capture.behind_seconds:.1f} s"
        rows.append(("capture behind", f"{size}, {secs}"))
    if capture.snapshot:
        rows.append(("snapshot", capture.snapshot))
    if capture.requests_waiting:
        rows.append(("requests", f"{capture.requests_waiting} signal(s) not "
                     "taken yet (capture takes them within seconds while it runs)"))
    if capture.not_captured_yet:
        rows.append(("not captured yet", f"{', '.join(capture.not_captured_yet)}: selected by "
                     "the pipeline file, not by the running capture; cdc-ingest add-table "
                     "takes them in (docs/operations.md)"))
    if capture.purged:
        rows.append(("capture PURGED", f"the committed position cannot be resumed: "
                     f"{capture.purged}. Fix: {PURGED_FIX}"))
    if capture.error:
        rows.append(("capture error", capture.error))
    return rows


def render_text(status: PipelineStatus) -> list[str]:
    """Plain aligned lines."""
    sink = status.sink
    head = [("pipeline", status.pipeline), *_capture_lines(status.capture),
            ("changelog", sink.changelog_topic), ("sink group", sink.group)]
    width = max(len(name) for name, _ in head) + 2
    lines = [f"{name:<{width}}{value}" for name, value in head]
    table = [("partition", "end offset", "committed", "lag (rows)")]
    for p in sink.partitions:
        table.append((str(p.partition), _num(p.end_offset), _num(p.committed), str(p.lag)))
    table.append(("total", "", "", str(sink.lag)))
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    lines += ["  " + "  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True))
              for row in table]
    lines.append(f"{'last sink event':<{width}}{utc_text(sink.last_event_ms) or 'none yet'}")
    if sink.error:
        lines.append(f"{'sink error':<{width}}{sink.error}")
    return lines


def caught_up(status: PipelineStatus) -> bool:
    """Capture has committed a position at the binlog head and the sink has written every
    record capture committed (nothing wrong on either side)."""
    capture, sink = status.capture, status.sink
    return (capture.position is not None and capture.behind_bytes == 0 and not capture.error
            and capture.snapshot is None and not sink.error and sink.lag == 0)


def exit_code(status: PipelineStatus) -> int:
    """0 when nothing is wrong; else the exit code of what is (:mod:`cdc_ingest.exit_codes`:
    ``POSITION_PURGED`` a purged position, ``SOURCE`` the login rejected, ``TRANSIENT`` MySQL
    unreachable, ``KAFKA_OR_SINK`` Kafka)."""
    if status.capture.exit_code:
        return status.capture.exit_code
    return KafkaClientError.exit_code if status.sink.error else 0


def _num(value: int | None) -> str:
    return "-" if value is None else str(value)
