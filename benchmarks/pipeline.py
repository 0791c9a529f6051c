"""Whole-pipeline throughput and latency: binlog -> changelog -> Spark sink -> sink topic.

    python benchmarks/pipeline.py [--rows 1000000] [--repeat 1] [--out FILE]

Writes the capture benchmark's workload into ``bench.orders`` once (see capture.py), then per
repeat: (1) capture and the sink started together over that binlog range, exactly-once and
then at-least-once, timed until every row is committed in the sink topic; (2) the sink alone
over the complete changelog of (1); (3) commit-to-visible latency of rows written at a steady
rate while an exactly-once pipeline runs. See benchmarks/README.md for what each figure means.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import secrets
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import yaml
from _common import (
    REPO,
    Measure,
    Services,
    add_service_args,
    baseline_package,
    capture_defaults,
    cpu_seconds,
    log_tail,
    machine_info,
    mysql_conn,
    percentile,
    process_tree,
    ratios,
    read_committed,
    services_from_args,
    setup_logging,
    stop_process,
    system_cpu_seconds,
    table,
    write_json,
)
from capture import DB, TABLE, Workload, make_workload, server_version
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient

from cdc_ingest.capture.positions import PositionStore
from cdc_ingest.kafka.offsets import GroupOffsets

log = logging.getLogger("benchmarks.pipeline")

PARALLELISM = 2
POLL_S = 0.25
STALL_S = 120.0  # no progress for this long = something is broken
TIMELINE_S = 1.0  # progress samples kept in the JSON
READY_TIMEOUT_S = 180.0
DRAIN_TIMEOUT_S = 60.0  # latency: how long to wait for the last written rows to show up
LATENCY_TABLE = "latency"  # same columns as orders; its own table, so that the latency
# writes never land in the binlog range a later repeat's capture reads from gtid_before

_LOG_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")
_BATCH = re.compile(
    r"batch (\d+): (\d+) rows in, (\d+) out, (\d+) skipped, (\d+) bytes in ([\d.]+) s"
)
# the sink's head start (decision 0017): what the driver wrote before Spark's first batch
_HEAD_START = re.compile(
    r"head start: (\d+) rows in, (\d+) out, (\d+) skipped, (\d+) bytes in ([\d.]+) s"
)


# -- configuration ---------------------------------------------------------------------------


@dataclass
class Settings:
    """What the pipelines run with (from the command line); goes into the JSON as is."""

    max_offsets: int | None  # pipeline.max-offsets-per-trigger (None: no limit)
    trigger: str  # pipeline.trigger.interval for the throughput runs
    latency_trigger: str
    latency_capture_interval: str  # source capture.transaction.max-interval (latency run)
    latency_rate: float
    latency_seconds: float
    latency_warmup_s: float
    latency_rows_per_tx: int


def pipeline_yaml(
    svc: Services, name: str, server_id: int, state: Path, *, gtid: str, guarantee: str,
    sink_topic: str, trigger: str | None, max_offsets: int | None,
    changelog_topic: str | None = None, capture_interval: str | None = None,
    table: str = TABLE, sink_options: dict[str, Any] | None = None,
    pipeline_options: dict[str, Any] | None = None,
) -> str:  # fmt: skip
    """The pipeline YAML; ``sink_options`` / ``pipeline_options`` are added to (or replace
    keys of) the ``sink`` / ``pipeline`` sections (avro_sink.py: the avro-confluent formats, the
    schema topic of the changelog a sink-alone run reads). ``trigger`` None: not set (the
    configuration's default)."""
    source: dict[str, Any] = {
        "type": "mysql",
        "hostname": svc.cdc["host"],
        "port": svc.mysql_port,
        "username": svc.cdc["user"],
        "password": svc.cdc["password"],
        "tables": f"{DB}.{table}",
        "server-id": server_id,
        "scan.startup.mode": "specific-offset",
        "scan.startup.specific-offset.gtid-set": gtid,
        "heartbeat.interval": "1s",
    }
    if capture_interval:
        source["capture.transaction.max-interval"] = capture_interval
    pipeline: dict[str, Any] = {
        "name": name, "parallelism": PARALLELISM, "state.dir": str(state),
    }  # fmt: skip
    if trigger is not None:
        pipeline["trigger.interval"] = trigger
    if max_offsets:
        pipeline["max-offsets-per-trigger"] = max_offsets
    if changelog_topic:
        pipeline["changelog.topic"] = changelog_topic
    pipeline.update(pipeline_options or {})
    doc = {
        "source": source,
        "sink": {"type": "upsert-kafka", "properties.bootstrap.servers": svc.bootstrap,
                 "sink.delivery-guarantee": guarantee, **(sink_options or {})},
        "route": [{"source-table": f"{DB}.{table}", "sink-table": sink_topic}],
        "pipeline": pipeline,
    }
    return yaml.safe_dump(doc, sort_keys=False)


def _topics(name: str) -> dict[str, str]:
    return {
        "changelog": f"cdc-ingest.{name}.changelog",
        "offsets": f"cdc-ingest.{name}.offsets",
        "sink": f"bench.{name}.orders",
        "group": f"cdc-ingest.{name}.sink",
    }


# -- processes ---------------------------------------------------------------------------------


@dataclass
class Stage:
    """``cdc-ingest capture`` or ``cdc-ingest sink`` as a child process, output to a log."""

    command: str
    log_file: Path
    proc: subprocess.Popen[bytes]

    @classmethod
    def start(cls, command: str, config: Path, workdir: Path,
              program: list[str] | None = None) -> Stage:
        """``program``: what runs instead of ``python -m cdc_ingest.cli`` (read_path.py's
        prototype sink), given the same ``command --config`` arguments."""
        log_file = workdir / f"{config.stem}.{command}.log"
        with log_file.open("ab") as out:
            proc = subprocess.Popen(
                [*(program or [sys.executable, "-m", "cdc_ingest.cli"]), command, "--config",
                 str(config)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=workdir,
            )  # fmt: skip
        return cls(command, log_file, proc)

    def check(self) -> None:
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.command} exited with {self.proc.returncode}:\n"
                               f"{log_tail(self.log_file)}")

    def stop(self) -> int:
        code = stop_process(self.proc, timeout=90.0)
        if code != 0:
            log.warning("%s exited with %s after SIGTERM:\n%s", self.command, code,
                        log_tail(self.log_file))
        return code


def cpu_snapshot(stages: list[Stage], svc: Services) -> dict[str, float]:
    """CPU seconds used so far: capture; the sink split into its Python driver, its JVM and
    the pyspark Python workers; the servers this run started; the machine (all CPUs)."""
    out: dict[str, float] = {}
    for stage in stages:
        tree = process_tree(stage.proc.pid)
        if stage.command == "capture":
            out["capture"] = sum(p.cpu_s for p in tree)
            continue
        for p in tree:
            if p.pid == stage.proc.pid:
                role = "sink driver (python)"
            elif p.name == "java":
                role = "sink JVM"
            else:
                role = "sink python workers"
            out[role] = out.get(role, 0.0) + p.cpu_s
    for server, pid in svc.pids.items():
        if pid:
            tree = process_tree(pid)
            if tree:
                out[server] = sum(p.cpu_s for p in tree)
    out["benchmark process"] = cpu_seconds(os.getpid()) or 0.0  # pollers, writer, consumer
    out["machine busy"], out["machine total"] = system_cpu_seconds()
    out["wall"] = time.time()
    return out


def cpu_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: round(v - before.get(k, 0.0), 2) for k, v in after.items()}


def peak_rss(stages: list[Stage]) -> dict[str, int]:
    out: dict[str, int] = {}
    for stage in stages:
        total = sum(p.rss_bytes or 0 for p in process_tree(stage.proc.pid))
        out[stage.command] = total
    return out


def _log_time(line: str) -> float | None:
    match = _LOG_STAMP.match(line)
    if match is None:
        return None
    return datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()


def first_log_time(log_file: Path, marker: str) -> float | None:
    """Epoch seconds of the first of our log lines (asctime, local) containing ``marker``."""
    if not log_file.is_file():
        return None
    for line in log_file.read_text(errors="replace").splitlines():
        if marker in line:
            stamp = _log_time(line)
            if stamp is not None:
                return stamp
    return None


def sink_batches(log_file: Path) -> list[dict[str, Any]]:
    """The sink's ``batch N: ...`` lines: id, end time (epoch s), rows in/out, seconds."""
    out = []
    for line in log_file.read_text(errors="replace").splitlines():
        match = _BATCH.search(line)
        if match is None:
            continue
        batch, rows_in, rows_out, skipped, nbytes, seconds = match.groups()
        out.append({"batch": int(batch), "end": _log_time(line), "rows_in": int(rows_in),
                    "rows_out": int(rows_out), "skipped": int(skipped),
                    "bytes_out": int(nbytes), "seconds": float(seconds)})
    return out


def head_start(log_file: Path) -> dict[str, Any]:
    """The sink's ``head start: ...`` lines summed (rows in/out, seconds; a restart logs one
    more): what the driver wrote before Spark's first batch, outside foreachBatch."""
    out = {"rows_in": 0, "rows_out": 0, "seconds": 0.0}
    for match in _HEAD_START.finditer(log_file.read_text(errors="replace")):
        out["rows_in"] += int(match.group(1))
        out["rows_out"] += int(match.group(2))
        out["seconds"] += float(match.group(5))
    return out


def batch_summary(batches: list[dict[str, Any]], started_wall: float) -> dict[str, Any]:
    with_rows = [b for b in batches if b["rows_in"]]
    rows = sum(b["rows_in"] for b in with_rows)
    seconds = sum(b["seconds"] for b in with_rows)
    out: dict[str, Any] = {
        "batches": len(with_rows),
        "rows_in": rows,
        "rows_out": sum(b["rows_out"] for b in with_rows),
        "batch_seconds": round(seconds, 3),
        "foreach_batch_rows_per_s": rows / seconds if seconds else None,
        "largest_batch_rows": max((b["rows_in"] for b in with_rows), default=0),
        "batch_seconds_each": [b["seconds"] for b in with_rows],
        "batch_rows_each": [b["rows_in"] for b in with_rows],
    }
    if with_rows and with_rows[0]["end"] is not None:
        first_start = with_rows[0]["end"] - with_rows[0]["seconds"]
        out["first_batch_start_s"] = first_start - started_wall
        if with_rows[-1]["end"] is not None and with_rows[-1]["end"] > first_start:
            out["first_to_last_batch_s"] = with_rows[-1]["end"] - first_start
            out["first_to_last_batch_rows_per_s"] = rows / out["first_to_last_batch_s"]
    return out


# -- Kafka reads -----------------------------------------------------------------------------


def _consumer(bootstrap: str, **extra: Any) -> Consumer:
    return Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"cdc-ingest-bench-{secrets.token_hex(6)}",
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
        "auto.offset.reset": "earliest",
        **extra,
    })  # fmt: skip


def changelog_ends(bootstrap: str, topic: str) -> dict[int, int]:
    """Per partition: the offset after its last committed record (transaction markers take
    offsets too, so this is what the sink commits when it has written everything)."""
    consumer = _consumer(bootstrap, **{"enable.partition.eof": True})
    try:
        meta = consumer.list_topics(topic, timeout=30)
        ends: dict[int, int] = {}
        for p in sorted(meta.topics[topic].partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
            back, last = 16, -1
            while high > low and last < 0:
                consumer.assign([TopicPartition(topic, p, max(low, high - back))])
                deadline = time.monotonic() + 30.0
                # poll, not consume(n, timeout): consume waits for n messages or the timeout
                while (msg := consumer.poll(0.5)) is None or msg.error() is None:
                    if msg is not None:
                        last = max(last, msg.offset())
                    elif time.monotonic() > deadline:
                        raise RuntimeError(f"reading {topic}[{p}]: no end of partition")
                if msg.error().code() != KafkaError._PARTITION_EOF:
                    raise RuntimeError(f"reading {topic}[{p}]: {msg.error()}")
                if high - back <= low:
                    break
                back *= 16
            ends[p] = last + 1 if last >= 0 else 0
        return ends
    finally:
        consumer.close()


def sink_topic_summary(bootstrap: str, topic: str, timeout_s: float = 120.0) -> dict[str, int]:
    """Committed messages of a sink topic: total, tombstones, distinct keys, live keys."""
    alive: dict[bytes, bool] = {}
    tombstones = 0

    def visit(msg: Any) -> None:
        nonlocal tombstones
        value = msg.value()
        tombstones += value is None
        alive[msg.key()] = value is not None

    messages = read_committed(bootstrap, topic, visit, timeout_s)
    return {"messages": messages, "tombstones": tombstones, "keys": len(alive),
            "live_keys": sum(alive.values())}


def delete_topics(bootstrap: str, topics: list[str]) -> None:
    if not topics:
        return
    futures = AdminClient({"bootstrap.servers": bootstrap}).delete_topics(topics)
    for topic, future in futures.items():
        try:
            future.result(30)
        except Exception as exc:  # noqa: BLE001 - cleanup only
            log.warning("could not delete topic %s: %s", topic, exc)


# -- waiting for the pipeline ----------------------------------------------------------------


@dataclass
class Progress:
    """Polls capture's committed position and the sink group's committed offsets."""

    svc: Services
    name: str  # the pipeline whose sink group is watched
    changelog: str
    capture_name: str | None  # the pipeline whose capture position is watched (None: none)
    gtid_after: str
    started: float  # perf_counter at process start
    timeline: list[dict[str, Any]] = field(default_factory=list)
    capture_done_s: float | None = None
    first_sink_commit_s: float | None = None
    ends: dict[int, int] | None = None

    def __post_init__(self) -> None:
        kafka = {"bootstrap.servers": self.svc.bootstrap}
        self._group = GroupOffsets(kafka, f"cdc-ingest.{self.name}.sink")
        self._store = (PositionStore(kafka, f"cdc-ingest.{self.capture_name}.offsets")
                       if self.capture_name else None)
        self._partitions: list[int] = []
        self._last_sample = -TIMELINE_S
        self._watermarks = _consumer(self.svc.bootstrap)
        self.sink_committed_at_capture_done: int | None = None

    def close(self) -> None:
        self._group.close()
        self._watermarks.close()

    def _changelog_end(self) -> int | None:
        """Sum of the changelog's high watermarks (records + transaction markers)."""
        try:
            return sum(self._watermarks.get_watermark_offsets(
                TopicPartition(self.changelog, p), timeout=5)[1] for p in self._partitions)
        except Exception:  # noqa: BLE001 - a progress sample only
            return None

    def _committed(self) -> dict[int, int]:
        if not self._partitions:
            self._partitions = self._group.partitions(self.changelog)
        return self._group.committed(self.changelog, self._partitions) if self._partitions else {}

    def _find_ends(self) -> None:
        began = time.perf_counter()
        self.ends = changelog_ends(self.svc.bootstrap, self.changelog)
        log.info("  changelog ends %s (read in %.2f s)", self.ends, time.perf_counter() - began)

    def wait(self, stages: list[Stage], timeout_s: float) -> float:
        """Seconds from ``started`` until the sink has committed the whole changelog.

        The changelog's ends are read in a thread once capture is done, while the sink's
        offsets are still sampled every POLL_S; the result is the time of the first sample
        at or past the ends, so reading them adds nothing to the figure."""
        finder: threading.Thread | None = None
        if self._store is None:
            self.capture_done_s = 0.0
        after: list[tuple[float, dict[int, int]]] = []  # samples since capture was done
        moved_at, last_state = time.perf_counter(), None
        while True:
            tick = time.perf_counter()
            for stage in stages:
                stage.check()
            if self._store is not None and self.capture_done_s is None:
                position = self._store.load()
                if position is not None and self.svc.server.gtid_reached(
                        position.gtid_set, self.gtid_after):
                    self.capture_done_s = time.perf_counter() - self.started
                    log.info("  capture committed the last GTID after %.1f s",
                             self.capture_done_s)
                capture_state = position.describe() if position else None
            else:
                capture_state = "done"
            if self.capture_done_s is not None and finder is None:
                finder = threading.Thread(target=self._find_ends, daemon=True)
                finder.start()
            committed = self._committed()
            now = time.perf_counter() - self.started
            if committed and self.first_sink_commit_s is None:
                self.first_sink_commit_s = now
            if self.capture_done_s is not None:
                after.append((now, committed))
                if self.sink_committed_at_capture_done is None:
                    self.sink_committed_at_capture_done = sum(committed.values())
            if now - self._last_sample >= TIMELINE_S:
                self._last_sample = now
                self.timeline.append({
                    "t": round(now, 2),
                    "changelog_end": self._changelog_end() if self._partitions else 0,
                    "sink_committed": sum(committed.values()),
                    "capture_done": self.capture_done_s is not None,
                })  # fmt: skip
            if finder is not None and not finder.is_alive():
                if self.ends is None:
                    raise RuntimeError(f"could not read the ends of {self.changelog}")
                ends = self.ends
                for at, sample in after:
                    if all(sample.get(p, 0) >= end for p, end in ends.items()):
                        return at
            state = (capture_state, tuple(sorted(committed.items())))
            if state != last_state:
                moved_at, last_state = time.perf_counter(), state
            elif time.perf_counter() - moved_at > STALL_S or now > timeout_s:
                tails = "\n".join(f"--- {s.command}:\n{log_tail(s.log_file)}" for s in stages)
                raise RuntimeError(f"no progress (capture {capture_state}, sink committed "
                                   f"{committed}, want {self.ends}):\n{tails}")
            time.sleep(max(0.0, POLL_S - (time.perf_counter() - tick)))


# -- 1. and 2.: throughput -------------------------------------------------------------------


def run_throughput(
    svc: Services, wl: Workload, name: str, server_id: int, workdir: Path, st: Settings,
    guarantee: str, timeout_s: float, changelog_of: str | None = None,
    max_offsets: int | None = None, sink_options: dict[str, Any] | None = None,
    pipeline_options: dict[str, Any] | None = None, sink_program: list[str] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Capture + sink (or with ``changelog_of``, the sink alone over that pipeline's complete
    changelog) from process start until the sink group has committed the whole changelog.
    ``sink_options`` / ``pipeline_options``: see :func:`pipeline_yaml`; ``sink_program``: see
    :meth:`Stage.start`."""
    topics = _topics(name)
    changelog = _topics(changelog_of)["changelog"] if changelog_of else topics["changelog"]
    limit = st.max_offsets if max_offsets is None else (max_offsets or None)
    config = workdir / f"{name}.yaml"
    config.write_text(pipeline_yaml(
        svc, name, server_id, workdir / name, gtid=wl.gtid_before, guarantee=guarantee,
        sink_topic=topics["sink"], trigger=st.trigger, max_offsets=limit,
        changelog_topic=changelog if changelog_of else None, sink_options=sink_options,
        pipeline_options=pipeline_options,
    ))  # fmt: skip
    commands = ["sink"] if changelog_of else ["capture", "sink"]
    base = cpu_snapshot([], svc)
    started_wall, started = time.time(), time.perf_counter()
    stages = [Stage.start(c, config, workdir, sink_program if c == "sink" else None)
              for c in commands]
    progress = Progress(svc, name, changelog, None if changelog_of else name, wl.gtid_after,
                        started)
    try:
        seconds = progress.wait(stages, timeout_s)
        cpu = cpu_delta(base, cpu_snapshot(stages, svc))
        rss = peak_rss(stages)
    finally:
        progress.close()
        codes = {s.command: s.stop() for s in stages}
    if any(codes.values()):
        raise RuntimeError(f"{name}: exit codes after SIGTERM {codes}")
    sink = next(s for s in stages if s.command == "sink")
    batches = batch_summary(sink_batches(sink.log_file), started_wall)
    head = head_start(sink.log_file)
    query_at = first_log_time(sink.log_file, "sink query started")
    summary = sink_topic_summary(svc.bootstrap, topics["sink"])
    want = wl.changes
    ok = summary["messages"] == want if guarantee == "exactly-once" else (
        summary["messages"] >= want)
    if not ok or batches["rows_in"] + head["rows_in"] < want:
        raise RuntimeError(f"{name}: sink topic {summary}, sink batches read "
                           f"{batches['rows_in']} rows and the head start "
                           f"{head['rows_in']}; want {want} messages ({guarantee})")
    if summary["live_keys"] != wl.inserted - wl.deleted:
        log.warning("%s: %d live keys in the sink topic, want %d", name, summary["live_keys"],
                    wl.inserted - wl.deleted)
    run = {
        "pipeline": name,
        "guarantee": guarantee,
        "stages": commands,
        "changelog": changelog,
        "max_offsets_per_trigger": limit,
        "trigger_interval": st.trigger,
        "seconds": seconds,
        "rows_per_s": want / seconds,
        "capture_done_s": None if changelog_of else progress.capture_done_s,
        "sink_query_started_s": query_at - started_wall if query_at else None,
        "first_sink_commit_s": progress.first_sink_commit_s,
        "sink_committed_offsets_at_capture_done": (
            None if changelog_of else progress.sink_committed_at_capture_done),
        "changelog_ends": progress.ends,
        "sink_topic": {"topic": topics["sink"], **summary},
        "sink_batches": batches,
        "head_start": head,
        "cpu_s": cpu,
        "rss_bytes_at_end": rss,
        "exit_codes": codes,
        "timeline": progress.timeline,
    }
    if not changelog_of and progress.capture_done_s is not None:
        run["sink_done_after_capture_s"] = seconds - progress.capture_done_s
    at_done, ends = progress.sink_committed_at_capture_done, progress.ends
    if not changelog_of and at_done is not None and ends:
        run["sink_share_done_at_capture_done"] = at_done / sum(ends.values())
    if run["sink_query_started_s"] is not None and seconds > run["sink_query_started_s"]:
        run["rows_per_s_after_sink_start"] = want / (seconds - run["sink_query_started_s"])
    log.info("  %s %s: %.1f s, %.0f rows/s (capture done %s s, sink query at %s s, "
             "%d batches, foreachBatch %.0f rows/s), CPU %s", name, guarantee, seconds,
             run["rows_per_s"], _r(run["capture_done_s"]), _r(run["sink_query_started_s"]),
             batches["batches"], batches["foreach_batch_rows_per_s"] or 0, cpu)
    return run


def _r(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


# -- 3. latency ------------------------------------------------------------------------------


class LatencyConsumer(threading.Thread):
    """Reads the sink topic read_committed as rows arrive: (write seq, arrival time) pairs."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True, name="latency-consumer")
        self.bootstrap, self.topic = bootstrap, topic
        self.seen: list[tuple[int, float]] = []
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            self.error = exc

    def _run(self) -> None:
        # fetch.min.bytes 1 (default): a fetch returns as soon as a commit makes rows
        # visible; the short max wait bounds the error should the broker not wake it then
        consumer = _consumer(self.bootstrap, **{"fetch.wait.max.ms": 20,
                                                "fetch.error.backoff.ms": 5})
        try:
            while not self.stop.is_set():
                meta = consumer.list_topics(self.topic, timeout=10)
                info = meta.topics.get(self.topic)
                if info is not None and info.error is None and info.partitions:
                    break
                time.sleep(0.2)
            else:
                return
            consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING)
                             for p in info.partitions])
            seen = self.seen
            while not self.stop.is_set():
                # poll returns each message as soon as it is there (consume(n, timeout)
                # would hold the first ones until n arrived or the timeout passed)
                msg = consumer.poll(0.05)
                if msg is None or msg.error() is not None or msg.value() is None:
                    continue
                now = time.time()
                note = orjson.loads(msg.value()).get("note") or ""
                if note.startswith("lat "):
                    seen.append((int(note[4:]), now))
        finally:
            consumer.close()


@dataclass
class Writer:
    """Inserts and updates ``bench.latency`` rows at a paced rate: transactions of
    ``rows_per_tx`` rows, alternately an INSERT of new ids and an UPDATE of the rows the
    previous INSERT wrote; each row's ``note`` names its transaction, whose commit time
    (taken when COMMIT returns) is recorded."""

    svc: Services
    rate: float
    rows_per_tx: int
    commits: dict[int, tuple[float, int]] = field(default_factory=dict)  # seq -> (time, rows)
    late_ticks: int = 0

    def run(self, seconds: float) -> tuple[float, float]:
        """Write for ``seconds``; returns (first tick, end) as epoch seconds."""
        conn = mysql_conn(self.svc.admin)
        conn.autocommit(False)
        interval = self.rows_per_tx / self.rate
        next_id = 1
        last_ids: list[int] = []
        try:
            with conn.cursor() as cur:
                t0_wall, t0 = time.time(), time.perf_counter()
                seq = 0
                while True:
                    due = t0 + seq * interval
                    wait = due - time.perf_counter()
                    if wait > 0:
                        time.sleep(wait)
                    elif wait < -interval:
                        self.late_ticks += 1
                    if time.perf_counter() - t0 >= seconds:
                        break
                    seq += 1
                    note = f"lat {seq}"
                    if seq % 2 == 1 or not last_ids:
                        ids = list(range(next_id, next_id + self.rows_per_tx))
                        next_id += self.rows_per_tx
                        values = ",".join(
                            f"({i},{i % 100_000},'new',{i % 1000}.25,'{note}',NOW(6),NOW(3),"
                            f"{i % 128},'{{\"sku\":\"SKU-{i % 9973}\",\"qty\":1}}')"
                            for i in ids
                        )
                        rows = cur.execute(f"INSERT INTO {DB}.{LATENCY_TABLE} VALUES {values}")
                        last_ids = ids
                    else:
                        rows = cur.execute(
                            f"UPDATE {DB}.{LATENCY_TABLE} SET status = 'paid', amount = amount + 1,"
                            f" note = '{note}', updated_at = NOW(3)"
                            f" WHERE id BETWEEN {last_ids[0]} AND {last_ids[-1]}"
                        )
                    conn.commit()
                    self.commits[seq] = (time.time(), rows)
                return t0_wall, time.time()
        finally:
            conn.close()


def fresh_table_like_orders(svc: Services, table: str) -> str:
    """(Re)create ``bench.<table>`` like ``bench.orders``; the GTID after that DDL."""
    conn = mysql_conn(svc.admin)
    try:
        with conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {DB}.{table}")
            cur.execute(f"CREATE TABLE {DB}.{table} LIKE {DB}.{TABLE}")
            return str(svc.server.gtid_state(cur))
    finally:
        conn.close()


def _wait_for_log(stage: Stage, marker: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while first_log_time(stage.log_file, marker) is None:
        stage.check()
        if time.monotonic() > deadline:
            raise RuntimeError(f"no '{marker}' from {stage.command} in {timeout_s:.0f} s:\n"
                               f"{log_tail(stage.log_file)}")
        time.sleep(0.2)


def run_latency(
    svc: Services, name: str, server_id: int, workdir: Path, st: Settings
) -> dict[str, Any]:
    """An exactly-once pipeline from the binlog head; rows written at ``latency_rate`` for
    ``latency_warmup_s`` (not counted) then ``latency_seconds``; commit-to-visible times."""
    topics = _topics(name)
    config = workdir / f"{name}.yaml"
    config.write_text(pipeline_yaml(
        svc, name, server_id, workdir / name, gtid=fresh_table_like_orders(svc, LATENCY_TABLE),
        guarantee="exactly-once", sink_topic=topics["sink"], trigger=st.latency_trigger,
        max_offsets=None, capture_interval=st.latency_capture_interval, table=LATENCY_TABLE,
    ))  # fmt: skip
    stages = [Stage.start(c, config, workdir) for c in ("capture", "sink")]
    consumer = LatencyConsumer(svc.bootstrap, topics["sink"])
    writer = Writer(svc, st.latency_rate, st.latency_rows_per_tx)
    try:
        _wait_for_log(stages[0], f"capture {name} starts at", READY_TIMEOUT_S)
        _wait_for_log(stages[1], "sink query started", READY_TIMEOUT_S)
        consumer.start()
        result: dict[str, Any] = {}
        measured_from: list[float] = []

        def mark() -> None:
            measured_from.append(time.time())
            result["cpu_before"] = cpu_snapshot(stages, svc)

        timer = threading.Timer(st.latency_warmup_s, mark)
        timer.start()
        t0, t_end = writer.run(st.latency_warmup_s + st.latency_seconds)
        timer.join()
        cpu = cpu_delta(result["cpu_before"], cpu_snapshot(stages, svc))
        written = sum(rows for _, rows in writer.commits.values())
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        while len(consumer.seen) < written and time.monotonic() < deadline:
            for stage in stages:
                stage.check()
            if consumer.error is not None:
                raise RuntimeError(f"latency consumer failed: {consumer.error}")
            time.sleep(0.2)
    finally:
        consumer.stop.set()
        codes = {s.command: s.stop() for s in stages}
    consumer.join(10)
    if any(codes.values()):
        raise RuntimeError(f"{name}: exit codes after SIGTERM {codes}")
    start = measured_from[0]
    measured = {seq for seq, (at, _) in writer.commits.items() if at >= start}
    latencies = sorted(
        max(0.0, seen_at - writer.commits[seq][0]) * 1000
        for seq, seen_at in consumer.seen if seq in measured
    )
    rows = sum(writer.commits[seq][1] for seq in measured)
    last_commit = max((writer.commits[s][0] for s in measured), default=start)
    out = {
        "pipeline": name,
        "trigger_interval": st.latency_trigger,
        "capture_transaction_max_interval": st.latency_capture_interval,
        "rate_target": st.latency_rate,
        "rows_per_tx": st.latency_rows_per_tx,
        "warmup_s": st.latency_warmup_s,
        "rows_written_total": written,
        "rows_seen_total": len(consumer.seen),
        "rows_measured": rows,
        "rows_measured_seen": len(latencies),
        "measured_seconds": last_commit - start,
        "achieved_rows_per_s": rows / (last_commit - start) if last_commit > start else None,
        "late_ticks": writer.late_ticks,
        "p50_ms": percentile(latencies, 50),
        "p95_ms": percentile(latencies, 95),
        "p99_ms": percentile(latencies, 99),
        "max_ms": latencies[-1] if latencies else None,
        "mean_ms": sum(latencies) / len(latencies) if latencies else None,
        "percentiles_ms": {str(q): percentile(latencies, q) for q in range(5, 100, 5)},
        "cpu_s_measured_phase": cpu,
        "sink_batches": batch_summary(sink_batches(stages[1].log_file), t0),
        "writer_span": [t0, t_end],
        "exit_codes": codes,
    }
    for key in ("batch_seconds_each", "batch_rows_each"):
        out["sink_batches"].pop(key, None)  # hundreds of tiny batches: the summary is enough
    if len(latencies) != rows:
        raise RuntimeError(f"latency: {len(latencies)} of {rows} measured rows reached the "
                           f"sink topic within {DRAIN_TIMEOUT_S:.0f} s of the last write")
    log.info("  latency at %.0f rows/s: p50 %.0f ms, p95 %.0f ms, p99 %.0f ms, max %.0f ms; "
             "CPU %s", out["achieved_rows_per_s"] or 0, out["p50_ms"], out["p95_ms"],
             out["p99_ms"], out["max_ms"], cpu)
    return out


# -- driver ----------------------------------------------------------------------------------


def measures_of(runs: list[dict[str, Any]]) -> list[Measure]:
    def samples(part: str, *path: str, scale: float = 1.0) -> list[float]:
        out = []
        for run in runs:
            value: Any = run.get(part)
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            if isinstance(value, (int, float)):
                out.append(value / scale)
        return out

    eo, alo, alone, lat = "e2e_exactly_once", "e2e_at_least_once", "sink_alone", "latency"
    base = "end-to-end, exactly-once"
    out = [
        Measure(base, "rows/s", samples(eo, "rows_per_s"), base, 0,
                "capture + sink from process start to the sink group's offsets at the "
                "changelog end (and capture's position at the last GTID)"),
        Measure("end-to-end, at-least-once", "rows/s", samples(alo, "rows_per_s"), base, 0),
        Measure("sink alone, wall", "rows/s", samples(alone, "rows_per_s"), base, 0,
                "sink process start -> all offsets committed, changelog complete"),
        Measure("sink alone, foreachBatch", "rows/s",
                samples(alone, "sink_batches", "foreach_batch_rows_per_s"), base, 0,
                "sum of batch rows / sum of batch durations (sink log)"),
        Measure("sink alone, first to last batch", "rows/s",
                samples(alone, "sink_batches", "first_to_last_batch_rows_per_s"), base, 0,
                "rows / (end of last batch - start of first batch)"),
        Measure("e2e exactly-once wall time", "s", samples(eo, "seconds")),
        Measure("e2e at-least-once wall time", "s", samples(alo, "seconds")),
        Measure("e2e exactly-once: capture done", "s", samples(eo, "capture_done_s"),
                note="process start -> capture's committed position at the last GTID"),
        Measure("e2e exactly-once: sink query up", "s", samples(eo, "sink_query_started_s"),
                note="process start -> 'sink query started' log line"),
        Measure("e2e exactly-once: first sink batch", "s",
                samples(eo, "sink_batches", "first_batch_start_s")),
        Measure("e2e exactly-once: sink share done when capture done", "%",
                samples(eo, "sink_share_done_at_capture_done", scale=0.01), digits=0,
                note="sink group's committed offsets / changelog end, when capture finished"),
        Measure("e2e exactly-once: sink done after capture", "s",
                samples(eo, "sink_done_after_capture_s"),
                note="wall time - capture done: how far the sink trails capture"),
        Measure("e2e exactly-once: batches", "count", samples(eo, "sink_batches", "batches"),
                digits=0),
        Measure("sink alone wall time", "s", samples(alone, "seconds")),
        Measure("sink alone: first batch starts", "s",
                samples(alone, "sink_batches", "first_batch_start_s")),
        Measure("sink alone: batches", "count", samples(alone, "sink_batches", "batches"),
                digits=0),
        Measure("sink topic messages, exactly-once", "count",
                samples(eo, "sink_topic", "messages"), digits=0),
        Measure("sink topic messages, at-least-once", "count",
                samples(alo, "sink_topic", "messages"), digits=0),
        Measure("sink topic live keys, exactly-once", "count",
                samples(eo, "sink_topic", "live_keys"), digits=0),
    ]
    base_alone = "sink_alone_baseline"
    if samples(base_alone, "rows_per_s"):
        out += [
            Measure("sink alone, wall, baseline code", "rows/s",
                    samples(base_alone, "rows_per_s"), base, 0,
                    "the same sink-alone run with the product code of --baseline-ref"),
            Measure("sink alone vs baseline code", "x",
                    [r[alone]["rows_per_s"] / r[base_alone]["rows_per_s"] for r in runs
                     if "rows_per_s" in r.get(alone, {})
                     and "rows_per_s" in r.get(base_alone, {})], digits=2,
                    note="this checkout's sink alone / the baseline's, per repeat (back to "
                    "back, the order alternating)"),
            Measure("sink alone CPU vs baseline code: sink python workers", "x",
                    [r[alone]["cpu_s"]["sink python workers"]
                     / r[base_alone]["cpu_s"]["sink python workers"] for r in runs
                     if "sink python workers" in r.get(alone, {}).get("cpu_s", {})
                     and "sink python workers" in r.get(base_alone, {}).get("cpu_s", {})],
                    digits=2),
        ]
    for part, label in ((eo, "e2e exactly-once"), (alone, "sink alone"),
                        (base_alone, "sink alone, baseline code")):
        roles = ("capture", "sink driver (python)", "sink JVM", "sink python workers",
                 "kafka", "mariadbd", "benchmark process", "machine busy")
        for role in roles:
            values = samples(part, "cpu_s", role)
            if values:
                out.append(Measure(f"{label} CPU: {role}", "s", values))
    out += [
        Measure("latency p50", "ms", samples(lat, "p50_ms"), digits=0),
        Measure("latency p95", "ms", samples(lat, "p95_ms"), digits=0),
        Measure("latency p99", "ms", samples(lat, "p99_ms"), digits=0),
        Measure("latency max", "ms", samples(lat, "max_ms"), digits=0),
        Measure("latency achieved rate", "rows/s", samples(lat, "achieved_rows_per_s"),
                digits=0),
    ]
    for role in ("capture", "sink driver (python)", "sink JVM", "sink python workers", "kafka",
                 "mariadbd", "benchmark process", "machine busy"):
        phases = [r["latency"]["cpu_s_measured_phase"] for r in runs
                  if "cpu_s_measured_phase" in r.get("latency", {})]
        values = [cpu[role] / cpu["wall"] * 100 for cpu in phases if role in cpu]
        if values:
            out.append(Measure(f"latency run CPU: {role}", "% of 1 CPU", values, digits=0))
    return [m for m in out if m.samples]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description="Whole-pipeline throughput (capture + Spark sink, exactly-once and "
        "at-least-once), sink-alone throughput and commit-to-visible latency.",
    )
    p.add_argument("--baseline-ref", default=None,
                   help="also run the sink-alone arm with the product code of this git ref "
                   "(built into the work dir), back to back with this checkout's")
    p.add_argument("--rows", type=int, default=1_000_000,
                   help="rows inserted; 20%% are then updated and 10%% deleted "
                   "(default %(default)s)")
    p.add_argument("--repeat", type=int, default=1, help="repeats of every measure (default 1)")
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "pipeline.json",
                   help="JSON results file (default %(default)s)")
    p.add_argument("--only", default="eo,alo,sink,latency",
                   help="comma-separated measures to run: eo (end-to-end exactly-once), alo "
                   "(end-to-end at-least-once), sink (sink alone; needs eo), latency "
                   "(default all)")
    p.add_argument("--max-offsets-per-trigger", type=int, default=500_000,
                   help="pipeline.max-offsets-per-trigger of the throughput runs; 0 = no "
                   "limit (default %(default)s)")
    p.add_argument("--trigger-interval", default="0",
                   help="pipeline.trigger.interval of the throughput runs (default 0: "
                   "back-to-back batches)")
    p.add_argument("--sweep-max-offsets", default="",
                   help="comma-separated max-offsets-per-trigger values (0 = no limit): in "
                   "the first repeat, also run the sink alone with each (results under "
                   "'sweep' in the JSON)")
    p.add_argument("--latency-rate", type=float, default=2000.0,
                   help="rows/s the latency writer writes (default %(default)s)")
    p.add_argument("--latency-seconds", type=float, default=60.0)
    p.add_argument("--latency-warmup", type=float, default=15.0,
                   help="seconds written at the rate before measuring (default %(default)s)")
    p.add_argument("--latency-rows-per-tx", type=int, default=20)
    p.add_argument("--latency-trigger-interval", default="0",
                   help="pipeline.trigger.interval of the latency run (default 0)")
    p.add_argument("--latency-capture-interval", default="100ms",
                   help="source capture.transaction.max-interval of the latency run "
                   "(default %(default)s)")
    add_service_args(p, "keep the temp folder (server, capture and sink logs, pipeline YAMLs)")
    p.add_argument("--timeout", type=float, default=1800.0,
                   help="seconds one throughput measurement may take")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    setup_logging()
    only = {part.strip() for part in args.only.split(",") if part.strip()}
    unknown = only - {"eo", "alo", "sink", "latency"}
    if unknown or ("sink" in only and "eo" not in only):
        raise SystemExit(f"--only: unknown {sorted(unknown)} or 'sink' without 'eo'")
    sweep = [int(v) for v in args.sweep_max_offsets.split(",") if v.strip()]
    st = Settings(
        max_offsets=args.max_offsets_per_trigger or None, trigger=args.trigger_interval,
        latency_trigger=args.latency_trigger_interval,
        latency_capture_interval=args.latency_capture_interval,
        latency_rate=args.latency_rate, latency_seconds=args.latency_seconds,
        latency_warmup_s=args.latency_warmup, latency_rows_per_tx=args.latency_rows_per_tx,
    )  # fmt: skip
    wall = time.perf_counter()
    machine = machine_info()
    run_id = secrets.token_hex(3)
    runs: list[dict[str, Any]] = []
    errors: list[str] = []
    sweep_runs: list[dict[str, Any]] = []
    names: list[str] = []
    wl: Workload | None = None
    with services_from_args(args) as svc:
        workdir = svc.home / "pipeline"
        workdir.mkdir()
        try:
            services_s = time.perf_counter() - wall
            version = server_version(svc)
            log.info("writing the workload: %d rows into %s.%s", args.rows, DB, TABLE)
            wl = make_workload(svc, args.rows)
            log.info("workload: %d row changes, %s -> %s", wl.changes, wl.gtid_before,
                     wl.gtid_after)
            runs = [{"repeat": n + 1} for n in range(args.repeat)]
            baseline = (baseline_package(args.baseline_ref, workdir / "baseline")
                        if args.baseline_ref and "sink" in only else None)

            def attempt(run: dict[str, Any], key: str, what: str, measure: Any) -> None:
                """One measure; a failure is recorded (and makes the exit code 1), the
                other measures still run."""
                log.info("repeat %d/%d: %s", run["repeat"], args.repeat, what)
                try:
                    run[key] = measure()
                except Exception as exc:  # reported, and the run goes on
                    log.exception("%s failed", what)
                    errors.append(f"repeat {run['repeat']}: {what}: {exc}")
                    run[key] = {"error": str(exc)}

            # Throughput first, every repeat over the same binlog; the latency runs write
            # more rows (into their own table) afterwards.
            for n, run in enumerate(runs):
                tag = f"pb-{run_id}-{n + 1}"
                server_id = 5600 + 10 * n
                eo, alo, alone = f"{tag}-eo", f"{tag}-alo", f"{tag}-sink"
                if "eo" in only:
                    names.append(eo)
                    attempt(run, "e2e_exactly_once", "end-to-end, exactly-once",
                            partial(run_throughput, svc, wl, eo, server_id, workdir, st,
                                    "exactly-once", args.timeout))
                if "alo" in only:
                    names.append(alo)
                    attempt(run, "e2e_at_least_once", "end-to-end, at-least-once",
                            partial(run_throughput, svc, wl, alo, server_id + 1, workdir, st,
                                    "at-least-once", args.timeout))
                if "error" in run.get("e2e_exactly_once", {"error": "not run"}):
                    continue  # the sink-alone runs read its changelog
                arms = [("sink_alone", alone, None)]
                if baseline is not None:  # alternate which runs first: a trend favours neither
                    arms.append(("sink_alone_baseline", f"{alone}-base",
                                 ["env", f"PYTHONPATH={baseline}", sys.executable, "-m",
                                  "cdc_ingest.cli"]))
                    arms = arms[::1 if n % 2 == 0 else -1]
                for key, arm, program in arms if "sink" in only else []:
                    names.append(arm)
                    what = "sink alone (exactly-once)" + (
                        f", code of {args.baseline_ref}" if program else "")
                    attempt(run, key, what,
                            partial(run_throughput, svc, wl, arm, server_id + 2, workdir, st,
                                    "exactly-once", args.timeout, changelog_of=eo,
                                    sink_program=program))
                for value in sweep if n == 0 else []:
                    name = f"{tag}-sweep{value}"
                    names.append(name)
                    holder: dict[str, Any] = {"repeat": run["repeat"]}
                    attempt(holder, "sweep", f"sweep: sink alone, max-offsets-per-trigger "
                            f"{value or 'unlimited'}",
                            partial(run_throughput, svc, wl, name, server_id + 3, workdir, st,
                                    "exactly-once", args.timeout, changelog_of=eo,
                                    max_offsets=value))
                    if "error" not in holder["sweep"]:
                        sweep_runs.append(holder["sweep"])
            for n, run in enumerate(runs if "latency" in only else []):
                name = f"pb-{run_id}-{n + 1}-lat"
                names.append(name)
                attempt(run, "latency", f"latency at {st.latency_rate:.0f} rows/s",
                        partial(run_latency, svc, name, 5600 + 10 * n + 4, workdir, st))
        finally:
            if args.kafka_bootstrap and not args.keep_topics:
                delete_topics(svc.bootstrap, [t for n in names for k, t in _topics(n).items()
                                              if k != "group"])
            started = list(svc.started)
    total = time.perf_counter() - wall
    assert wl is not None
    measures = measures_of(runs)
    ratio_of = ratios(measures)
    print(f"\npipeline benchmark: {wl.changes:,} row changes ({wl.inserted:,} inserts, "
          f"{wl.updated:,} updates, {wl.deleted:,} deletes), {args.repeat} repeat(s), "
          f"{machine['nproc']} CPUs; parallelism {PARALLELISM}, trigger.interval "
          f"{st.trigger}, max-offsets-per-trigger {st.max_offsets or 'unlimited'}; latency: "
          f"trigger.interval {st.latency_trigger}, capture.transaction.max-interval "
          f"{st.latency_capture_interval}, {st.latency_rows_per_tx} rows per MySQL "
          "transaction")
    print(table(measures, "vs e2e exactly-once"))
    for s in sweep_runs:
        b = s["sink_batches"]
        print(f"sweep: sink alone, max-offsets-per-trigger {s['max_offsets_per_trigger'] or '-'}"
              f": {s['rows_per_s']:,.0f} rows/s wall, {b['foreach_batch_rows_per_s'] or 0:,.0f}"
              f" rows/s foreachBatch, {b['batches']} batches, {s['seconds']:.1f} s")
    print(f"\ntotal wall time {total:.0f} s (workload written in "
          f"{wl.insert_s + wl.update_s + wl.delete_s:.0f} s)")
    write_json(args.out, {
        "benchmark": "pipeline",
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "config": {
            "rows": args.rows, "repeats": args.repeat, "only": sorted(only),
            "pipeline_parallelism": PARALLELISM, "poll_s": POLL_S, **asdict(st),
            "sweep_max_offsets": sweep,
            "capture_options": f"defaults ({capture_defaults()}) for throughput, "
                               "heartbeat.interval 1s",
            "sink": "local[*] (cdc-ingest sink), 2 changelog partitions -> 2 tasks per batch",
        },
        "machine": {**machine, "mysql_server": version},
        "services": {"started": started, "mysql_port": svc.mysql_port,
                     "kafka_bootstrap": svc.bootstrap, "startup_s": services_s},
        "workload": {**asdict(wl), "changes": wl.changes},
        "results": {m.name: m.as_json(ratio_of[m.name]) for m in measures},
        "runs": runs,
        "sweep": sweep_runs,
        "errors": errors,
        "total_wall_s": total,
    })
    print(f"wrote {args.out}")
    for error in errors:
        print(f"FAILED: {error}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
