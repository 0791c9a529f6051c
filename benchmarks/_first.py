"""compare.py's ``first`` measure: ``cdc-ingest start`` as a user runs it, timed from the spawn
to the first sink-topic message a read_committed consumer sees.

Three runs per repeat: the workload's backlog (the binlog range ``eo`` reads; also timed to
the whole changelog written, as pipeline.py decides it), then an empty backlog twice (a
pipeline at the binlog head over an empty table, one row inserted right after the spawn),
with compare.py's trigger interval and with the configuration's default one.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import (
    Services,
    cpu_seconds,
    log_tail,
    mysql_conn,
    process_tree,
    system_cpu_seconds,
)
from capture import DB, TABLE, Workload
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from pipeline import (
    Progress,
    Stage,
    _log_time,
    _topics,
    fresh_table_like_orders,
    pipeline_yaml,
    sink_batches,
    sink_topic_summary,
)

log = logging.getLogger("benchmarks.compare.first")

METADATA_POLL_S = 0.05  # the sink topic may not exist yet: metadata again this often
POLL_S = 0.05  # consumer poll timeout
EMPTY_TABLE = "first_empty"  # its own table: the captures of bench.orders never see its rows
EMPTY_TIMEOUT_S = 180.0
START_ROLE = "start (supervisor)"
# log lines of `start` and its children (one file: the children inherit start's output)
MARKERS = {
    "capture spawned": "starting capture: ",
    "sink spawned": "starting sink: ",
    "capture starts": "capture {name} starts at",
    "sink query started": "sink query started",
    # the sink's head start stopped by Spark's first batch (decision 0017)
    "head start stopped": "head start: ",
}


# -- the broker's group coordinator ------------------------------------------------------------


def ensure_group_coordinator(bootstrap: str, timeout_s: float = 90.0) -> dict[str, Any]:
    """Make sure ``__consumer_offsets`` exists before anything is timed: a user's long-running
    broker has it, a fresh one creates it (and elects its partitions) at the first group
    request, which would otherwise land in whichever measure comes first. Commits an offset
    for a throwaway group on a throwaway topic, then deletes the topic."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    internal = ("__consumer_offsets", "__transaction_state")
    before = admin.list_topics(timeout=30).topics
    out: dict[str, Any] = {f"{t}_existed": t in before for t in internal}
    began = time.perf_counter()
    topic = f"cdc-ingest-bench-warmup-{secrets.token_hex(4)}"
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "enable.auto.commit": False,
                         "group.id": f"cdc-ingest-bench-warmup-{secrets.token_hex(4)}"})
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
                break
            except KafkaException as exc:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no group coordinator after {timeout_s:.0f} s: "
                                       f"{exc}") from exc
                time.sleep(0.2)
    finally:
        consumer.close()
        admin.delete_topics([topic])[topic].result(30)
    after = admin.list_topics(timeout=30).topics
    out.update({f"{t}_exists": t in after for t in internal})
    out["seconds"] = round(time.perf_counter() - began, 2)
    out["how"] = ("an offset committed for a throwaway group on a throwaway topic before any "
                  "measure (a fresh broker creates __consumer_offsets at the first group "
                  "request; __transaction_state is created by the services' readiness probe)")
    return out


# -- the first message -------------------------------------------------------------------------


class FirstMessage(threading.Thread):
    """A read_committed consumer of ``topic`` from its beginning: waits for the topic to
    exist (metadata every METADATA_POLL_S), assigns all its partitions, notes when the first
    message arrives (perf_counter) and stops."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True, name="first-message")
        self.bootstrap, self.topic = bootstrap, topic
        self.topic_seen_at: float | None = None
        self.first_at: float | None = None
        self.first_key: bytes | None = None
        self.stop = threading.Event()
        self.done = threading.Event()
        self.error: BaseException | None = None
        # made before the spawn, so its own start-up is not in the measure
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap,
            "group.id": f"cdc-ingest-bench-{secrets.token_hex(6)}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "fetch.wait.max.ms": 20,
            "fetch.error.backoff.ms": 5,
            "topic.metadata.refresh.interval.ms": 1000,
        })  # fmt: skip

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # noqa: BLE001 - reported by the caller
            self.error = exc
        finally:
            self.consumer.close()
            self.done.set()

    def _run(self) -> None:
        consumer = self.consumer
        while not self.stop.is_set():
            # all topics, not this one: a request for a missing topic must not create it
            info = consumer.list_topics(timeout=5).topics.get(self.topic)
            if (info is not None and info.error is None and info.partitions
                    and all(p.leader >= 0 for p in info.partitions.values())):
                break
            time.sleep(METADATA_POLL_S)
        else:
            return
        self.topic_seen_at = time.perf_counter()
        consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING)
                         for p in info.partitions])
        while not self.stop.is_set():
            msg = consumer.poll(POLL_S)
            if msg is not None and msg.error() is None:
                self.first_at = time.perf_counter()
                self.first_key = msg.key()
                return


# -- processes and their CPU -------------------------------------------------------------------


def start_roles(root: int) -> dict[str, float]:
    """CPU seconds of ``cdc-ingest start``'s tree by role: the supervisor, capture (and
    anything under it), the sink's Python driver, its JVM and its pyspark Python workers."""
    tree = {p.pid: p for p in process_tree(root)}
    out: dict[str, float] = {}
    for p in tree.values():
        role, node = START_ROLE, p
        while node.pid != root:
            if "cdc_ingest.cli capture" in node.cmdline:
                role = "capture"
                break
            if "cdc_ingest.cli sink" in node.cmdline:
                if node is p:
                    role = "sink driver (python)"
                else:
                    role = "sink JVM" if p.name == "java" else "sink python workers"
                break
            node = tree.get(node.ppid, tree[root])
        out[role] = out.get(role, 0.0) + p.cpu_s
    return out


def cpu_now(stage: Stage | None, svc: Services) -> dict[str, float]:
    """As pipeline.cpu_snapshot, for ``start``'s process tree."""
    out = start_roles(stage.proc.pid) if stage is not None else {}
    for server, pid in svc.pids.items():
        if pid:
            out[server] = sum(p.cpu_s for p in process_tree(pid))
    out["benchmark process"] = cpu_seconds(os.getpid()) or 0.0
    out["machine busy"], out["machine total"] = system_cpu_seconds()
    return out


def cpu_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: round(v - before.get(k, 0.0), 2) for k, v in after.items()}


# -- the timeline --------------------------------------------------------------------------------


def log_timeline(log_file: Path, name: str, spawned_wall: float) -> dict[str, Any]:
    """Seconds from the spawn to the first log line of each phase (the lines' own
    timestamps, millisecond resolution), and the first sink batches."""
    out: dict[str, Any] = {}
    text = log_file.read_text(errors="replace") if log_file.is_file() else ""
    for line in text.splitlines():
        for phase, marker in MARKERS.items():
            if phase in out or marker.format(name=name) not in line:
                continue
            if (stamp := _log_time(line)) is not None:
                out[phase] = round(stamp - spawned_wall, 3)
    batches = sink_batches(log_file)
    first = batches[0] if batches else None
    with_rows = next((b for b in batches if b["rows_in"]), None)
    for label, batch in (("first batch", first), ("first batch with rows", with_rows)):
        if batch is not None and batch["end"] is not None:
            out[f"{label}: id"] = batch["batch"]
            out[f"{label}: start"] = round(batch["end"] - batch["seconds"] - spawned_wall, 3)
            out[f"{label}: end"] = round(batch["end"] - spawned_wall, 3)
            out[f"{label}: rows in"] = batch["rows_in"]
    return out


# -- the runs ----------------------------------------------------------------------------------


@dataclass
class StartRun:
    """One ``cdc-ingest start`` of a pipeline whose config is already written."""

    svc: Services
    name: str
    config: Path
    workdir: Path
    stage: Stage | None = None
    spawned: float = 0.0  # perf_counter just before the spawn
    spawned_wall: float = 0.0
    cpu_before: dict[str, float] = field(default_factory=dict)
    loadavg: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def spawn(self) -> FirstMessage:
        watcher = FirstMessage(self.svc.bootstrap, _topics(self.name)["sink"])
        watcher.start()
        self.cpu_before = cpu_now(None, self.svc)
        self.loadavg = os.getloadavg()
        self.spawned_wall, self.spawned = time.time(), time.perf_counter()
        self.stage = Stage.start("start", self.config, self.workdir)
        return watcher

    def since(self, at: float | None) -> float | None:
        return None if at is None else at - self.spawned

    def finish(self, watcher: FirstMessage) -> dict[str, Any]:
        """CPU and the timeline; stops ``start`` (SIGTERM: it stops both children)."""
        assert self.stage is not None
        cpu = cpu_delta(self.cpu_before, cpu_now(self.stage, self.svc))
        watcher.stop.set()
        code = self.stage.stop()
        watcher.join(10)
        if code != 0:
            raise RuntimeError(f"{self.name}: start exited with {code} after SIGTERM")
        return {
            "pipeline": self.name,
            "command": "python -m cdc_ingest.cli start --config <pipeline>.yaml",
            "cpu_s": cpu,
            "timeline_s": {
                **log_timeline(self.stage.log_file, self.name, self.spawned_wall),
                "sink topic in metadata": _r3(self.since(watcher.topic_seen_at)),
                "first message read_committed": _r3(self.since(watcher.first_at)),
            },
            "exit_code": code,
            "loadavg_at_spawn": [round(x, 2) for x in self.loadavg],
        }


def _r3(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def run_first_backlog(svc: Services, wl: Workload, name: str, server_id: int, workdir: Path,
                      trigger: str, max_offsets: int, timeout_s: float,
                      options: dict[str, Any] | None = None) -> dict[str, Any]:
    """``start`` over the workload's binlog range (the ``eo`` measure's pipeline): spawn ->
    first message read_committed, and spawn -> the sink group has committed the whole
    changelog (pipeline.py's Progress, polled every 0.25 s). ``options``: more ``pipeline``
    options (head_start.py: ``head-start``)."""
    topics = _topics(name)
    config = workdir / f"{name}.yaml"
    config.write_text(pipeline_yaml(
        svc, name, server_id, workdir / name, gtid=wl.gtid_before, guarantee="exactly-once",
        sink_topic=topics["sink"], trigger=trigger, max_offsets=max_offsets,
        pipeline_options=options))
    run = StartRun(svc, name, config, workdir)
    watcher = run.spawn()
    assert run.stage is not None
    progress = Progress(svc, name, topics["changelog"], name, wl.gtid_after, run.spawned)
    try:
        seconds = progress.wait([run.stage], timeout_s)
        result = run.finish(watcher)
    finally:
        progress.close()
        watcher.stop.set()
        if run.stage.proc.poll() is None:
            run.stage.stop()
    if watcher.error is not None:
        raise RuntimeError(f"first-message consumer: {watcher.error}")
    first = run.since(watcher.first_at)
    summary = sink_topic_summary(svc.bootstrap, topics["sink"])
    if summary["messages"] != wl.changes:
        raise RuntimeError(f"{name}: sink topic {summary}, want {wl.changes} messages")
    result["timeline_s"]["capture done"] = _r3(progress.capture_done_s)
    result["timeline_s"]["whole changelog written"] = _r3(seconds)
    return {
        **result,
        "backlog": "workload",
        "trigger_interval": trigger,
        "max_offsets_per_trigger": max_offsets,
        "rows": wl.changes,
        "seconds": seconds,
        "rows_per_s": wl.changes / seconds,
        "first_output_s": first,
        "capture_done_s": progress.capture_done_s,
        "first_sink_commit_s": progress.first_sink_commit_s,
        "sink_topic": {"topic": topics["sink"], **summary},
    }


def run_first_empty(svc: Services, name: str, server_id: int, workdir: Path,
                    trigger: str | None, options: dict[str, Any] | None = None,
                    ) -> dict[str, Any]:  # fmt: skip
    """``start`` at the binlog head over an empty table (``specific-offset`` at the GTID after
    its CREATE: nothing pending); one row inserted and committed right after the spawn;
    spawn -> that row's message read_committed. ``trigger`` None: the config's default."""
    topics = _topics(name)
    config = workdir / f"{name}.yaml"
    config.write_text(pipeline_yaml(
        svc, name, server_id, workdir / name, gtid=fresh_table_like_orders(svc, EMPTY_TABLE),
        guarantee="exactly-once", sink_topic=topics["sink"], trigger=trigger, max_offsets=None,
        table=EMPTY_TABLE, pipeline_options=options))
    conn = mysql_conn(svc.admin)  # connected before the spawn
    run = StartRun(svc, name, config, workdir)
    try:
        watcher = run.spawn()
        assert run.stage is not None
        with conn.cursor() as cur:
            cur.execute(f"INSERT INTO {DB}.{EMPTY_TABLE} SELECT * FROM {DB}.{TABLE} LIMIT 1")
        conn.commit()
        inserted = time.perf_counter()
        deadline = time.monotonic() + EMPTY_TIMEOUT_S
        while not watcher.done.wait(0.2):
            run.stage.check()
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name}: no message {EMPTY_TIMEOUT_S:.0f} s after start:\n"
                                   f"{log_tail(run.stage.log_file)}")
        if watcher.error is not None or watcher.first_at is None:
            raise RuntimeError(f"first-message consumer: {watcher.error}")
        result = run.finish(watcher)
    finally:
        conn.close()
        if run.stage is not None and run.stage.proc.poll() is None:
            run.stage.stop()
    summary = sink_topic_summary(svc.bootstrap, topics["sink"])
    if summary["messages"] != 1:
        raise RuntimeError(f"{name}: sink topic {summary}, want 1 message")
    first = run.since(watcher.first_at)
    result["timeline_s"]["row committed in MySQL"] = _r3(run.since(inserted))
    return {
        **result,
        "backlog": "empty",
        "startup": "specific-offset at the binlog head (GTID after the empty table's CREATE)",
        "trigger_interval": trigger if trigger is not None else "default (not set)",
        "rows": 1,
        "seconds": first,
        "first_output_s": first,
        "insert_committed_s": run.since(inserted),
        "sink_topic": {"topic": topics["sink"], **summary},
    }
