"""cdc-ingest against Debezium on the same machine, the same binlog range and the same Kafka.

    python benchmarks/compare.py [--server mariadb|mysql] [--rows 1000000] [--repeat 1]
                                 [--only alo,eo,eo-nohs,first,debezium,floor]

Starts (or reuses) one MariaDB (``--server mysql``: the project's Oracle MySQL 9.7) and one
Kafka broker. Positions Debezium's connector for that server (MariaDB's or MySQL's, Kafka
Connect standalone, ``snapshot.mode=no_data``; see _debezium.py) at the binlog head, then
writes the capture benchmark's workload into ``bench.orders`` once (see capture.py), then per
repeat, one after the other over that binlog range and in an order rotated by one each
repeat: (a) cdc-ingest end to end at-least-once and (b) exactly-once (capture + Spark sink,
as pipeline.py measures them), (b') ``eo-nohs``: (b) with ``pipeline.head-start: false``
(Spark's own path, the one a cluster uses), (c) Debezium resuming from its stored offset
until its output topic holds every row change, (e) ``first``: ``cdc-ingest start`` from the
spawn to the first sink-topic message read_committed, with the backlog and with an empty one
(see _first.py); then (d) plain python-mysql-replication decoding (capture.py's baseline) as
the floor. Prints a table (medians, min-max over the repeats, ratios to Debezium with the
min-max of the per-repeat ratios) and writes JSON. See the compare.py section of
benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import secrets
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import asdict
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import _debezium as dbz
import orjson
from _common import (
    CLOCK_TICKS,
    MARIADB,
    REPO,
    SERVERS,
    Measure,
    Services,
    add_service_args,
    capture_defaults,
    cpu_seconds,
    log_tail,
    machine_info,
    peak_rss_bytes,
    ratio_samples,
    ratios,
    read_committed,
    services_from_args,
    setup_logging,
    system_cpu_seconds,
    table,
    wait_child,
    write_json,
)
from _first import (
    START_ROLE,
    ensure_group_coordinator,
    run_first_backlog,
    run_first_empty,
)
from capture import DB, TABLE, Workload, library_decode, make_workload, server_version
from confluent_kafka import Consumer, KafkaException, TopicPartition
from pipeline import PARALLELISM, Settings, _topics, delete_topics, run_throughput

import cdc_ingest

log = logging.getLogger("benchmarks.compare")

MEASURES = ("alo", "eo", "eo-nohs", "first", "debezium", "floor")
ROTATED = MEASURES[:-1]  # the floor (no Kafka) comes last in every repeat
# server-id of each cdc-ingest measure's capture in repeat 1 (+10 per repeat); `first`'s
# empty-backlog runs take the next two
SERVER_IDS = {"alo": 5803, "eo": 5802, "first": 5805, "eo-nohs": 5808}
FLOOR_CHILD = "--floor-child"
POLL_S = 0.25  # Debezium's output topic end offsets
SAMPLE_S = 0.5  # memory samples of the measured processes
GRACE_S = 3.0  # after Debezium is done: how long to watch for records beyond the workload
STALL_S = 120.0
MAX_OFFSETS = 500_000  # pipeline.py's defaults for its throughput runs
TRIGGER = "0"
MARKER_SQL = f"DROP DATABASE IF EXISTS {DB}"  # make_workload's first statement anyway

ALO = "cdc-ingest e2e at-least-once"
EO = "cdc-ingest e2e exactly-once"
EO_NOHS = "cdc-ingest e2e exactly-once, head-start false"
DBZ = "debezium (Connect standalone)"
FLOOR = "library decode (floor)"
FIRST = "cdc-ingest start exactly-once"
LABELS = {"alo": ALO, "eo": EO, "eo-nohs": EO_NOHS, "first": FIRST, "debezium": DBZ,
          "floor": FLOOR}
NO_HEAD_START = {"head-start": False}  # eo-nohs: pipeline options
CDC_ROLES = ("capture", "sink driver (python)", "sink JVM", "sink python workers")
# CPU per million row changes, by role (whichever a measure has)
CPU_ROLES = (*CDC_ROLES, START_ROLE, "Connect JVM", "floor (python)", "kafka",
             *(s.process for s in SERVERS.values()))
EMPTY_RUNS = {"empty_trigger_0": TRIGGER, "empty_default_trigger": None}
EMPTY_LABELS = {"empty_trigger_0": f"empty backlog, first output (trigger.interval {TRIGGER})",
                "empty_default_trigger": "empty backlog, first output (default trigger)"}
TIMELINE_PHASES = ("capture starts", "sink query started", "first batch with rows: start",
                   "first batch with rows: end")  # the backlog run's, in the table


# -- memory of the measured processes ----------------------------------------------------------


def _stat(pid: str) -> tuple[int, str] | None:
    """(ppid, comm) from /proc/<pid>/stat."""
    with suppress(OSError, IndexError, ValueError):
        raw = Path(f"/proc/{pid}/stat").read_text()
        return int(raw.rsplit(")", 1)[1].split()[1]), raw[raw.index("(") + 1 : raw.rindex(")")]
    return None


def _status_kib(pid: int, key: str) -> int:
    with suppress(OSError, ValueError, IndexError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1])
    return 0


def _cmdline(pid: int) -> str:
    with suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
            errors="replace")
    return ""


def measured_processes() -> dict[int, str]:
    """The processes a measure runs, by role: this process's children that are cdc-ingest
    stages (``start``, or capture and the sink), Kafka Connect or the floor child, and their
    descendants (under ``start``: capture, the sink and theirs, by command line; the servers
    this run started are children too, and are left out)."""
    children: dict[int, list[int]] = {}
    comm: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (found := _stat(entry)) is not None:
            children.setdefault(found[0], []).append(int(entry))
            comm[int(entry)] = found[1]
    roles: dict[int, str] = {}
    for child in children.get(os.getpid(), []):
        kind = _kind(_cmdline(child))
        if kind is None:
            continue
        todo = [(child, kind, child)]  # (pid, the stage it runs under, that stage's pid)
        while todo:
            pid, kind, root = todo.pop()
            if kind == START_ROLE and pid != root:  # capture and sink under `start`
                kind, root = _kind(_cmdline(pid)) or kind, pid
            todo.extend((c, kind, root) for c in children.get(pid, []))
            if kind != "sink":
                roles[pid] = kind
            elif pid == root:
                roles[pid] = "sink driver (python)"
            else:
                roles[pid] = "sink JVM" if comm.get(pid) == "java" else "sink python workers"
    return roles


def _kind(cmd: str) -> str | None:
    for marker, kind in (("cdc_ingest.cli capture", "capture"), ("cdc_ingest.cli sink", "sink"),
                         ("cdc_ingest.cli start", START_ROLE), (dbz.CONNECT_MAIN, "Connect JVM"),
                         (FLOOR_CHILD, "floor (python)")):
        if marker in cmd:
            return kind
    return None


class MemorySampler(threading.Thread):
    """Every SAMPLE_S: resident memory of the measured processes. Keeps the largest sum of
    VmRSS seen at once (total and per role) and each process's last VmHWM (its own peak)."""

    def __init__(self) -> None:
        super().__init__(daemon=True, name="memory-sampler")
        self.stop_event = threading.Event()
        self.peak_total_kib = 0
        self.peak_by_role_kib: dict[str, int] = {}
        self.hwm_kib: dict[int, tuple[str, int]] = {}

    def sample(self) -> None:
        total, by_role = 0, {}
        for pid, role in measured_processes().items():
            rss = _status_kib(pid, "VmRSS:")
            total += rss
            by_role[role] = by_role.get(role, 0) + rss
            hwm = _status_kib(pid, "VmHWM:")
            if hwm:
                self.hwm_kib[pid] = (role, max(hwm, self.hwm_kib.get(pid, (role, 0))[1]))
        self.peak_total_kib = max(self.peak_total_kib, total)
        for role, rss in by_role.items():
            self.peak_by_role_kib[role] = max(self.peak_by_role_kib.get(role, 0), rss)

    def run(self) -> None:
        while not self.stop_event.wait(SAMPLE_S):
            self.sample()

    def finish(self) -> dict[str, Any]:
        self.stop_event.set()
        self.join(10)
        hwm_by_role: dict[str, int] = {}
        for role, hwm in self.hwm_kib.values():
            hwm_by_role[role] = hwm_by_role.get(role, 0) + hwm
        mib = 1024.0
        return {
            "peak_rss_mib": round(self.peak_total_kib / mib, 1),
            "peak_rss_mib_by_role": {k: round(v / mib, 1)
                                     for k, v in self.peak_by_role_kib.items()},
            "sum_of_vmhwm_mib_by_role": {k: round(v / mib, 1) for k, v in hwm_by_role.items()},
            "processes_seen": len(self.hwm_kib),
        }


def per_million(cpu: dict[str, float], changes: int) -> dict[str, float]:
    """CPU seconds per million row changes of each role in ``cpu`` that is in CPU_ROLES."""
    return {role: round(cpu[role] / (changes / 1e6), 2) for role in CPU_ROLES if role in cpu}


def _server_cpu(svc: Services) -> dict[str, float]:
    out = {name: cpu_seconds(pid) for name, pid in svc.pids.items() if pid}
    return {name: value for name, value in out.items() if value is not None}


# -- (a), (b): cdc-ingest end to end -------------------------------------------------------------


def run_cdc_ingest(svc: Services, wl: Workload, name: str, server_id: int, workdir: Path,
                   guarantee: str, timeout_s: float,
                   pipeline_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """pipeline.py's end-to-end measure (capture + Spark sink as two processes, process start
    -> the sink group has committed the whole changelog), with memory sampled meanwhile.
    ``pipeline_options``: more ``pipeline`` options (eo-nohs: ``head-start: false``)."""
    st = Settings(max_offsets=MAX_OFFSETS, trigger=TRIGGER, latency_trigger="0",
                  latency_capture_interval="100ms", latency_rate=0.0, latency_seconds=0.0,
                  latency_warmup_s=0.0, latency_rows_per_tx=0)
    sampler = MemorySampler()
    sampler.start()
    try:
        run = run_throughput(svc, wl, name, server_id, workdir, st, guarantee, timeout_s,
                             pipeline_options=pipeline_options)
    finally:
        memory = sampler.finish()
    cpu = run["cpu_s"]
    total = sum(cpu.get(role, 0.0) for role in CDC_ROLES)
    run.pop("timeline", None)  # pipeline.json keeps it; here the figures are enough
    return {
        **run,
        "rows": wl.changes,
        "first_output_s": run.get("first_sink_commit_s"),
        "cpu_total_s": total,
        "cpu_s_per_1k_rows": total / (wl.changes / 1000),
        "cpu_s_per_million_changes": per_million(cpu, wl.changes),
        "kafka_cpu_s": cpu.get("kafka"),
        f"{svc.server.process}_cpu_s": cpu.get(svc.server.process),
        "machine_busy_s": cpu.get("machine busy"),
        **memory,
    }


# -- first output: `cdc-ingest start` -----------------------------------------------------------


def run_first(svc: Services, wl: Workload, name: str, server_id: int, workdir: Path,
              timeout_s: float, errors: list[str]) -> dict[str, Any]:
    """``cdc-ingest start`` over the workload's backlog (spawn -> first message
    read_committed, and -> the whole changelog written), then on an empty backlog with one
    row inserted after the spawn, with TRIGGER and with the default trigger interval. A
    failed empty run is recorded in ``errors``; the backlog run's figures are the measure's."""
    sampler = MemorySampler()
    sampler.start()
    try:
        run = run_first_backlog(svc, wl, name, server_id, workdir, TRIGGER, MAX_OFFSETS,
                                timeout_s)
    finally:
        memory = sampler.finish()
    cpu = run["cpu_s"]
    total = sum(cpu.get(role, 0.0) for role in (*CDC_ROLES, START_ROLE))
    out: dict[str, Any] = {
        **run,
        "cpu_total_s": total,
        "cpu_s_per_1k_rows": total / (wl.changes / 1000),
        "cpu_s_per_million_changes": per_million(cpu, wl.changes),
        "kafka_cpu_s": cpu.get("kafka"),
        f"{svc.server.process}_cpu_s": cpu.get(svc.server.process),
        "machine_busy_s": cpu.get("machine busy"),
        **memory,
    }
    log.info("  first output %.2f s after start, whole backlog %.1f s; timeline %s",
             run["first_output_s"] or -1, run["seconds"], run["timeline_s"])
    for n, (key, trigger) in enumerate(EMPTY_RUNS.items()):
        log.info("  empty backlog, trigger.interval %s", trigger or "default")
        try:
            out[key] = run_first_empty(svc, f"{name}-e{n}", server_id + 1 + n, workdir,
                                       trigger)
            log.info("  first output %.2f s after start (row committed %.2f s); timeline %s",
                     out[key]["first_output_s"], out[key]["insert_committed_s"],
                     out[key]["timeline_s"])
        except Exception as exc:  # recorded; the other run still goes
            log.exception("empty backlog (%s) failed", key)
            errors.append(f"{FIRST}: {key}: {exc}")
            out[key] = {"error": str(exc)}
    return out


# -- (c): Debezium -----------------------------------------------------------------------------


def _end_offsets(consumer: Consumer, topic: str, tries: int = 1) -> dict[int, int] | None:
    """High watermark per partition (= records: Debezium's producer is not transactional);
    None while the topic does not exist or its leader is not known yet (just created)."""
    for attempt in range(tries):
        if attempt:
            time.sleep(0.5)
        try:
            meta = consumer.list_topics(topic, timeout=10)
            info = meta.topics.get(topic)
            if info is None or info.error is not None or not info.partitions:
                continue
            return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                    for p in info.partitions}
        except KafkaException as exc:
            log.debug("end offsets of %s: %s", topic, exc)
    return None


def output_summary(bootstrap: str, topic: str) -> dict[str, Any]:
    """Every record of Debezium's output topic: totals, tombstones, JSON ``null`` values,
    updated rows (the workload sets status 'updated'), keys, live keys, one sample."""
    alive: dict[bytes, bool] = {}
    counts = {"tombstones": 0, "json_null_values": 0, "updated_rows": 0}
    sample: dict[str, Any] = {}

    def visit(msg: Any) -> None:
        value = msg.value()
        if value is None:
            counts["tombstones"] += 1
        elif value == b"null":
            counts["json_null_values"] += 1
        else:
            row = orjson.loads(value)
            counts["updated_rows"] += row.get("status") == "updated"
            if not sample:
                sample.update(key=msg.key().decode(), value=value.decode(),
                              partition=msg.partition())
        alive[msg.key()] = value is not None and value != b"null"

    messages = read_committed(bootstrap, topic, visit)
    return {"messages": messages, **counts, "keys": len(alive),
            "live_keys": sum(alive.values()), "sample": sample}


def run_debezium(svc: Services, wl: Workload, connect: dbz.ConnectStandalone,
                 timeout_s: float) -> dict[str, Any]:
    """Start Connect (it resumes at the stored offset, before the workload); time from
    process start until the output topic's end offsets hold every row change."""
    want = wl.changes
    consumer = Consumer({"bootstrap.servers": svc.bootstrap,
                         "group.id": f"cdc-ingest-bench-{secrets.token_hex(6)}"})
    server_before, (busy_before, _) = _server_cpu(svc), system_cpu_seconds()
    bench_before = cpu_seconds(os.getpid()) or 0.0
    sampler = MemorySampler()
    timeline: list[tuple[float, int]] = []
    first_output: float | None = None
    try:
        connect.start()
        sampler.start()
        moved_at, last = connect.started, -1
        while True:
            tick = time.perf_counter()
            connect.check()
            ends = _end_offsets(consumer, connect.topic)
            total = sum(ends.values()) if ends else max(last, 0)  # keep it over a hiccup
            now = time.perf_counter()
            if total and first_output is None:
                first_output = now - connect.started
            if total != last:
                moved_at, last = now, total
                timeline.append((round(now - connect.started, 2), total))
            if total >= want:
                seconds = now - connect.started
                break
            if now - moved_at > STALL_S or now - connect.started > timeout_s:
                raise dbz.DebeziumError(
                    f"Debezium's {connect.topic} holds {total} of {want} records after "
                    f"{now - connect.started:.0f} s:\n{connect.log_errors()}\n"
                    f"{log_tail(connect.log_file)}")
            time.sleep(max(0.0, POLL_S - (time.perf_counter() - tick)))
        sampler.sample()
        jvm_cpu = cpu_seconds(connect.pid) or 0.0
        jvm_hwm = peak_rss_bytes(connect.pid)
        server_after, (busy_after, _) = _server_cpu(svc), system_cpu_seconds()
        bench_after = cpu_seconds(os.getpid()) or 0.0
        time.sleep(GRACE_S)  # anything beyond the workload would show up now
        ends_after = _end_offsets(consumer, connect.topic, tries=10) or {}
        # other topics of this connector: the heartbeats of its positioning run, nothing new
        others = {t: _end_offsets(consumer, t, tries=10)
                  for t in consumer.list_topics(timeout=10).topics
                  if connect.prefix in t and t != connect.topic}
    finally:
        memory = sampler.finish()
        code = connect.stop()
        consumer.close()
    summary = output_summary(svc.bootstrap, connect.topic)
    acknowledged = connect.acknowledged()
    problems = []
    if sum(ends_after.values()) != want or summary["messages"] > want:
        problems.append(f"{summary['messages']} records ({sum(ends_after.values())} by end "
                        f"offsets {GRACE_S:.0f} s after done), want {want}")
    elif summary["messages"] < want:
        # the topic is compacted (as cdc-ingest's): on a large run the log cleaner drops
        # superseded records of rolled segments; the per-key checks below still hold
        log.info("Debezium's topic: %d of %d records left after log compaction",
                 summary["messages"], want)
    if summary["tombstones"] != wl.deleted:
        problems.append(f"{summary['tombstones']} tombstones, want {wl.deleted}")
    if summary["updated_rows"] != wl.updated:
        problems.append(f"{summary['updated_rows']} updated rows, want {wl.updated}")
    if summary["live_keys"] != wl.inserted - wl.deleted:
        problems.append(f"{summary['live_keys']} live keys, want {wl.inserted - wl.deleted}")
    if problems:
        raise dbz.DebeziumError(f"Debezium's output topic {connect.topic}: "
                                + "; ".join(problems))
    if acknowledged != want:
        log.warning("Connect's log counts %d acknowledged records, the topic holds %d",
                    acknowledged, want)
    server_cpu = {k: round(server_after.get(k, 0.0) - v, 2) for k, v in server_before.items()}
    return {
        "topic": connect.topic,
        "rows": want,
        "seconds": seconds,
        "rows_per_s": want / seconds,
        "first_output_s": first_output,
        "rows_per_s_after_first_output": (
            want / (seconds - first_output) if first_output and seconds > first_output
            else None),
        "cpu_total_s": jvm_cpu,
        "cpu_s_per_1k_rows": jvm_cpu / (want / 1000),
        "cpu_s_per_million_changes": per_million({"Connect JVM": jvm_cpu, **server_cpu}, want),
        "jvm_vmhwm_mib": round((jvm_hwm or 0) / 2**20, 1),
        "kafka_cpu_s": server_cpu.get("kafka"),
        f"{svc.server.process}_cpu_s": server_cpu.get(svc.server.process),
        "machine_busy_s": round(busy_after - busy_before, 2),
        "benchmark_process_cpu_s": round(bench_after - bench_before, 2),
        "end_offsets_when_done": ends,
        "end_offsets_after_grace": ends_after,
        "other_topics_end_offsets": others,
        "output": summary,
        "acknowledged_by_connect": acknowledged,
        "exit_code": code,
        "timeline": timeline[:: max(1, len(timeline) // 200)],
        **memory,
    }


# -- (d): the floor ------------------------------------------------------------------------------


def floor_child(argv: list[str]) -> int:
    """``compare.py --floor-child JSON``: capture.py's library decode in a process of its own
    (so that its CPU and memory are its own); prints one JSON line."""
    spec = json.loads(argv[0])
    svc = Services(admin={"port": spec["cdc"]["port"]}, cdc=spec["cdc"], bootstrap="",
                   home=Path("."), server=SERVERS[spec.get("server", MARIADB.name)])
    wl = Workload(rows=0, inserted=spec["changes"], gtid_before=spec["gtid_before"])
    cpu0 = time.process_time()
    result = library_decode(svc, wl, spec["server_id"])
    result["cpu_s"] = time.process_time() - cpu0
    import resource  # noqa: PLC0415 - only the child needs it

    result["maxrss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))
    return 0


def run_floor(svc: Services, wl: Workload, server_id: int, workdir: Path,
              timeout_s: float) -> dict[str, Any]:
    spec = {"cdc": {**svc.cdc, "port": svc.mysql_port}, "changes": wl.changes,
            "gtid_before": wl.gtid_before, "server_id": server_id,
            "server": svc.server.name}
    out_file = workdir / f"floor-{server_id}.out"
    server_before = _server_cpu(svc)
    with out_file.open("wb") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), FLOOR_CHILD, json.dumps(spec)],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=workdir)
    try:
        done = wait_child(proc, started, timeout_s, poll_s=SAMPLE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    server_after = _server_cpu(svc)
    lines = out_file.read_text(errors="replace").strip().splitlines()
    if done.exit_code != 0 or not lines or not lines[-1].startswith("{"):
        raise RuntimeError(f"the floor child exited with {done.exit_code}:\n"
                           + "\n".join(lines[-30:]))
    result = json.loads(lines[-1])
    server_cpu = {k: round(server_after.get(k, 0.0) - v, 2) for k, v in server_before.items()}
    return {
        **result,
        "cpu_total_s": result["cpu_s"],
        "cpu_s_per_1k_rows": result["cpu_s"] / (wl.changes / 1000),
        "cpu_s_per_million_changes": per_million({"floor (python)": result["cpu_s"],
                                                  **server_cpu}, wl.changes),
        "process_cpu_s": done.cpu_s,  # with interpreter start-up and imports
        "process_seconds": done.seconds,
        "peak_rss_mib": round(done.maxrss_bytes / 2**20, 1),
        "kafka_cpu_s": server_cpu.get("kafka"),
        f"{svc.server.process}_cpu_s": server_cpu.get(svc.server.process),
    }


# -- driver --------------------------------------------------------------------------------------


def measures_of(runs: list[dict[str, Any]], only: list[str],
                server_process: str = MARIADB.process) -> list[Measure]:
    """Every figure of every measure, one sample per repeat that has it (each Measure knows
    its samples' repeats, so a ratio to Debezium has a per-repeat spread too)."""

    def found(get: Callable[[dict[str, Any]], Any]) -> tuple[list[float], list[int]]:
        values, repeats = [], []
        for run in runs:
            with suppress(KeyError, TypeError, AttributeError):
                value = get(run)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    values.append(value)
                    repeats.append(int(run["repeat"]))
        return values, repeats

    def measure(name: str, unit: str, get: Callable[[dict[str, Any]], Any],
                ratio_to: str | None = None, digits: int = 1) -> Measure:
        values, repeats = found(get)
        return Measure(name, unit, values, ratio_to, digits, repeats=repeats)

    def part(*keys: str) -> Callable[[dict[str, Any]], Any]:
        """run -> run[keys[0]][keys[1]]..."""
        def get(run: dict[str, Any]) -> Any:
            value: Any = run
            for key in keys:
                value = value[key]
            return value
        return get

    parts = [p for p in MEASURES if p in only]
    out = [measure(LABELS[p], "rows/s", part(p, "rows_per_s"), DBZ, 0) for p in parts]
    out += [measure(f"{LABELS[p]}: wall time", "s", part(p, "seconds")) for p in parts]
    out += [measure(f"{LABELS[p]}: first output", "s", part(p, "first_output_s"))
            for p in parts if p != "floor"]
    if "first" in parts:
        out += [measure(f"{FIRST}: {EMPTY_LABELS[key]}", "s",
                        part("first", key, "first_output_s"), digits=2) for key in EMPTY_RUNS]
        out += [measure(f"{FIRST}: {phase}", "s", part("first", "timeline_s", phase), digits=2)
                for phase in TIMELINE_PHASES]
    out += [measure(f"{LABELS[p]}: CPU per 1k rows", "s", part(p, "cpu_s_per_1k_rows"),
                    DBZ + ": CPU per 1k rows", 3) for p in parts]
    out += [measure(f"{LABELS[p]}: CPU", "s", part(p, "cpu_total_s")) for p in parts]
    for p in ("alo", "eo", "eo-nohs", "first"):
        if p in parts:
            out += [measure(f"{LABELS[p]}: CPU {role}", "s", part(p, "cpu_s", role))
                    for role in (*CDC_ROLES, START_ROLE)]
    out += [measure(f"{LABELS[p]}: peak RSS", "MiB", part(p, "peak_rss_mib"), digits=0)
            for p in parts]
    for server in ("kafka", server_process):
        out += [measure(f"{LABELS[p]}: {server} CPU", "s", part(p, f"{server}_cpu_s"))
                for p in parts]
    out += [measure(f"{LABELS[p]}: machine busy", "s", part(p, "machine_busy_s"))
            for p in parts if p != "floor"]
    return [m for m in out if m.samples]


def cpu_per_million(runs: list[dict[str, Any]], only: list[str]) -> dict[str, dict[str, float]]:
    """Per measure and role: the median over repeats of CPU seconds per million changes."""
    out: dict[str, dict[str, float]] = {}
    for key in [p for p in MEASURES if p in only]:
        per_role: dict[str, list[float]] = {}
        for run in runs:
            for role, value in run.get(key, {}).get("cpu_s_per_million_changes", {}).items():
                per_role.setdefault(role, []).append(value)
        if per_role:
            out[key] = {role: round(statistics.median(v), 1) for role, v in per_role.items()}
    return out


SHORT_ROLES = {"sink driver (python)": "driver", "sink JVM": "JVM",
               "sink python workers": "workers", START_ROLE: "start", "Connect JVM": "Connect",
               "floor (python)": "decode"}


def _cpu_line(roles: dict[str, float]) -> str:
    return ", ".join(f"{SHORT_ROLES.get(role, role)} {value:.1f}" for role, value in roles.items())


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description="cdc-ingest (end to end, at-least-once and exactly-once) against Debezium "
        "(its MariaDB or MySQL connector in Kafka Connect standalone) and plain "
        "python-mysql-replication decoding, over the same binlog range on the same machine.",
    )
    p.add_argument("--server", choices=sorted(SERVERS), default=MARIADB.name,
                   help="the binlog source and Debezium's connector: a private MariaDB and "
                   "the MariaDB connector, or the project's local Oracle MySQL 9.7 "
                   "(cdc_ingest.services.MySQL) and the MySQL connector; with --mysql-port, "
                   "the kind of that server (default %(default)s)")
    p.add_argument("--rows", type=int, default=1_000_000,
                   help="rows inserted; 20%% are then updated and 10%% deleted "
                   "(default %(default)s)")
    p.add_argument("--repeat", type=int, default=1,
                   help="repeats of every measure, repeat i starting the rotated order of the "
                   "measures at the i-th (mod n); the table and JSON give the median and the "
                   "min-max of each measure and of each ratio to Debezium (default 1)")
    p.add_argument("--sizes", default=None,
                   help="comma-separated workload sizes in row changes, e.g. 300k,1M,5M: one "
                   "run per size (services started afresh for each, --rows ignored), each "
                   "written to --out with the size in its name, then a table across sizes "
                   "written to --out")
    p.add_argument("--only", default=",".join(MEASURES),
                   help="comma-separated measures: alo, eo (cdc-ingest end to end), eo-nohs "
                   "(eo with pipeline.head-start false: Spark's own path), first "
                   "(cdc-ingest start: first output with the backlog and with an empty one), "
                   "debezium, floor (library decode) (default all)")
    p.add_argument("--out", type=Path, default=None,
                   help="JSON results file (default benchmarks/results/compare.json, "
                   "compare-mysql.json with --server mysql)")
    add_service_args(p, "keep the temp folder (server, capture, sink and Kafka Connect logs, "
                     "configs, Debezium offsets)")
    p.add_argument("--timeout", type=float, default=1800.0,
                   help="seconds one measurement may take (default %(default)s)")
    return p


def results_path(server: str) -> Path:
    """The default --out: one file per server kind, MariaDB's keeps its old name."""
    suffix = "" if server == MARIADB.name else f"-{server}"
    return REPO / "benchmarks" / "results" / f"compare{suffix}.json"


def _debezium_config(connect: dbz.ConnectStandalone) -> dict[str, Any]:
    worker = {k: v for k, v in connect.worker_config().items()
              if k not in ("listeners", "bootstrap.servers", "offset.storage.file.filename")}
    connector = {k: v for k, v in connect.connector_config().items()
                 if not k.startswith("database.") or k in (
                     "database.include.list", "database.ssl.mode", "database.server.id")}
    return {"debezium": dbz.DEBEZIUM_VERSION, "kafka_connect": dbz.CONNECT_VERSION,
            "connector_artifact": connect.connector.artifact,
            "jvm_options": list(dbz.JVM_OPTIONS), "user": dbz.USER,
            "grants": connect.connector.grants,
            "worker": worker, "connector": connector,
            "positioning": {"heartbeat.interval.ms": "1000", "offset.flush.interval.ms": "1000",
                            "marker": MARKER_SQL}}


def parse_size(text: str) -> int:
    """``300k`` / ``1M`` / ``5000`` -> a number of row changes."""
    text = text.strip().lower().replace("_", "")
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def rows_for(changes: int) -> int:
    """Rows inserted for a workload of about ``changes`` row changes (inserts, then 20%
    updated and 10% deleted: 1.3 changes per row)."""
    return max(1, round(changes / 1.3))


def _sizes(args: argparse.Namespace) -> int:
    """One run per size in this invocation (services afresh for each), then a table across
    sizes: the figure a user meets on a short run or a restart is never averaged away by a
    long one."""
    summary: list[dict[str, Any]] = []
    failed = 0
    for label in [part for part in args.sizes.split(",") if part.strip()]:
        changes = parse_size(label)
        out = args.out.with_name(f"{args.out.stem}-{label.strip()}{args.out.suffix}")
        one = argparse.Namespace(**{**vars(args), "rows": rows_for(changes), "out": out,
                                    "sizes": None})
        log.info("size %s: %d rows (%d changes)", label, one.rows, changes)
        failed |= _run(one)
        doc = json.loads(out.read_text())
        results = doc["results"]

        def median(name: str, results: dict[str, Any] = results,
                   key: str = "median") -> float | None:
            value = results.get(name, {}).get(key)
            return float(value) if value is not None else None

        row: dict[str, Any] = {"size": label.strip(), "changes": doc["workload"]["changes"],
                               "server": args.server, "file": str(out)}
        for key in ("eo", "eo-nohs", "alo", "first", "debezium"):
            field = key.replace("-", "_")
            row[f"{field}_rows_per_s"] = median(LABELS[key])
            if args.repeat > 1:  # the spread over the repeats
                row[f"{field}_rows_per_s_min"] = median(LABELS[key], key="min")
                row[f"{field}_rows_per_s_max"] = median(LABELS[key], key="max")
            row[f"{field}_first_output_s"] = median(f"{LABELS[key]}: first output")
        for key in EMPTY_RUNS:
            row[f"first_{key}_s"] = median(f"{FIRST}: {EMPTY_LABELS[key]}")
        row["cpu_s_per_million_changes"] = doc.get("cpu_s_per_million_changes", {})
        dbz_rate = row["debezium_rows_per_s"]
        for key in ("eo", "eo-nohs", "alo", "first"):
            field = key.replace("-", "_")
            rate = row[f"{field}_rows_per_s"]
            row[f"{field}_vs_debezium"] = rate / dbz_rate if rate and dbz_rate else None
            if args.repeat > 1:  # the per-repeat ratios' spread
                row[f"{field}_vs_debezium_min"] = median(LABELS[key], key="ratio_min")
                row[f"{field}_vs_debezium_max"] = median(LABELS[key], key="ratio_max")
        summary.append(row)

    def fmt(value: float | None, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    print("\ncompare across sizes (medians; ratios within each size's run; first output in s: "
          "start = `cdc-ingest start` to the first message read_committed, empty = an empty "
          "backlog and one row, trigger 0 / default; eo, alo = the sink group's first commit)")
    print(f"{'changes':>10}  {'eo rows/s':>10}  {'eo/dbz':>7}  {'nohs rows/s':>11}  "
          f"{'nohs/dbz':>8}  {'alo/dbz':>7}  "
          f"{'start/dbz':>9}  {'dbz rows/s':>10}  {'first: start':>12}  {'empty':>11}  "
          f"{'eo':>5}  {'alo':>5}  {'dbz':>5}")
    for row in summary:
        empty = "/".join(fmt(row[f"first_{key}_s"], ".1f") for key in EMPTY_RUNS)
        print(f"{row['changes']:>10,}  {fmt(row['eo_rows_per_s'], ',.0f'):>10}  "
              f"{fmt(row['eo_vs_debezium'], '.2f'):>7}  "
              f"{fmt(row['eo_nohs_rows_per_s'], ',.0f'):>11}  "
              f"{fmt(row['eo_nohs_vs_debezium'], '.2f'):>8}  "
              f"{fmt(row['alo_vs_debezium'], '.2f'):>7}  "
              f"{fmt(row['first_vs_debezium'], '.2f'):>9}  "
              f"{fmt(row['debezium_rows_per_s'], ',.0f'):>10}  "
              f"{fmt(row['first_first_output_s'], '.1f'):>12}  {empty:>11}  "
              f"{fmt(row['eo_first_output_s'], '.1f'):>5}  "
              f"{fmt(row['alo_first_output_s'], '.1f'):>5}  "
              f"{fmt(row['debezium_first_output_s'], '.1f'):>5}")
    if args.repeat > 1:
        print(f"ratios to Debezium, min-max of the {args.repeat} repeats' own ratios:")
        for row in summary:
            print(f"{row['size']:>10}  " + "; ".join(
                f"{key}: {fmt(row.get(f'{key}_vs_debezium_min'), '.2f')}-"
                f"{fmt(row.get(f'{key}_vs_debezium_max'), '.2f')}"
                for key in ("eo", "eo_nohs", "alo", "first")))
    print("CPU s per million row changes (medians):")
    for row in summary:
        cpu = row["cpu_s_per_million_changes"]
        print(f"{row['size']:>10}  "
              + "; ".join(f"{key}: {_cpu_line(roles)}" for key, roles in cpu.items()))
    write_json(args.out, {"benchmark": "compare-sizes", "server": args.server,
                          "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
                          "sizes": summary})
    print(f"wrote {args.out}")
    return failed


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.out is None:
        args.out = results_path(args.server)
    setup_logging()
    if args.sizes:
        return _sizes(args)
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    only = [part.strip() for part in args.only.split(",") if part.strip()]
    unknown = set(only) - set(MEASURES)
    if unknown or not only:
        raise SystemExit(f"--only: unknown {sorted(unknown)}; choose from {','.join(MEASURES)}")
    wall = time.perf_counter()
    machine = machine_info()
    connector = dbz.CONNECTORS[args.server]
    try:  # fails early, before any service starts
        libs = dbz.fetch_jars(connector) if "debezium" in only else None
    except dbz.DebeziumError as exc:
        log.error("%s", exc)
        return 2
    run_id = secrets.token_hex(3)
    runs: list[dict[str, Any]] = [{"repeat": n + 1} for n in range(args.repeat)]
    errors: list[str] = []
    topics: list[str] = []
    connects: list[dbz.ConnectStandalone] = []
    positioning: list[dict[str, Any]] = []
    wl: Workload | None = None
    with services_from_args(args) as svc:
        workdir = svc.home / "compare"
        workdir.mkdir()
        try:
            services_s = time.perf_counter() - wall
            version = server_version(svc)
            coordinator = ensure_group_coordinator(svc.bootstrap)
            log.info("group coordinator: %s", coordinator)
            if libs is not None:
                user = dbz.create_user(svc.admin, connector)
                for n in range(args.repeat):
                    connect = dbz.ConnectStandalone(
                        workdir / f"debezium-{n + 1}", libs, svc.bootstrap, user,
                        server_id=8400 + n, prefix=f"dbz-{run_id}-{n + 1}", database=DB,
                        table=TABLE, connector=connector)
                    connects.append(connect)
                    topics += [connect.topic, f"__debezium-heartbeat.{connect.prefix}"]
                    log.info("positioning Debezium %d/%d (no-data snapshot, heartbeats) at "
                             "the binlog head", n + 1, args.repeat)
                    try:
                        positioning.append(connect.position(svc.admin, MARKER_SQL))
                        log.info("  stored offset %s after %.1f s", positioning[-1]["offset"],
                                 positioning[-1]["seconds"])
                    except Exception as exc:
                        log.exception("positioning Debezium failed")
                        errors.append(f"positioning Debezium {n + 1}: {exc}")
                        positioning.append({"error": str(exc)})
            log.info("writing the workload: %d rows into %s.%s", args.rows, DB, TABLE)
            wl = make_workload(svc, args.rows)
            log.info("workload: %d row changes, %s -> %s", wl.changes, wl.gtid_before,
                     wl.gtid_after)

            def attempt(run: dict[str, Any], key: str, measure: Callable[[], dict[str, Any]],
                        ) -> None:
                log.info("repeat %d/%d: %s", run["repeat"], args.repeat, LABELS[key])
                try:
                    run[key] = measure()
                    log.info("  %s: %.1f s, %.0f rows/s, %.3f CPU s per 1k rows",
                             LABELS[key], run[key]["seconds"], run[key]["rows_per_s"],
                             run[key]["cpu_s_per_1k_rows"])
                except Exception as exc:  # recorded; the other measures still run
                    log.exception("%s failed", LABELS[key])
                    errors.append(f"repeat {run['repeat']}: {LABELS[key]}: {exc}")
                    run[key] = {"error": str(exc)}

            for n, run in enumerate(runs):
                # a, b, b', e, c in this order in the first repeat, rotated by one in each
                # next one (the first measure after a fresh broker pays for its JIT warm-up)
                order = [m for m in ROTATED if m in only]
                order = order[n % len(order):] + order[:n % len(order)] if order else []
                run["order"] = order
                for key in order:
                    if key == "debezium":
                        if "error" in positioning[n]:
                            run["debezium"] = {"error": "not positioned"}
                        else:
                            attempt(run, "debezium", partial(run_debezium, svc, wl,
                                                             connects[n], args.timeout))
                        continue
                    name = f"cmp-{run_id}-{n + 1}-{key}"
                    pipelines = [name] + ([f"{name}-e0", f"{name}-e1"] if key == "first"
                                          else [])
                    for pipeline in pipelines:
                        topics += [t for k, t in _topics(pipeline).items() if k != "group"]
                    server_id = SERVER_IDS[key] + 10 * n
                    if key == "first":
                        attempt(run, key, partial(run_first, svc, wl, name, server_id,
                                                  workdir, args.timeout, errors))
                        continue
                    guarantee = "at-least-once" if key == "alo" else "exactly-once"
                    attempt(run, key, partial(
                        run_cdc_ingest, svc, wl, name, server_id, workdir, guarantee,
                        args.timeout, NO_HEAD_START if key == "eo-nohs" else None))
                if "floor" in only:
                    attempt(run, "floor", partial(run_floor, svc, wl, 6800 + n, workdir,
                                                  args.timeout))
        finally:
            for connect in connects:
                connect.stop()
            if args.kafka_bootstrap and not args.keep_topics:
                delete_topics(svc.bootstrap, topics)
            started = list(svc.started)
    total = time.perf_counter() - wall
    assert wl is not None
    measures = measures_of(runs, only, svc.server.process)
    ratio_of, per_repeat = ratios(measures), ratio_samples(measures)
    orders = ", ".join("/".join(run.get("order", [])) for run in runs)
    print(f"\ncompare benchmark on {svc.server.label} {version}: {wl.changes:,} row changes "
          f"({wl.inserted:,} inserts, {wl.updated:,} updates, {wl.deleted:,} deletes), "
          f"{args.repeat} repeat(s) (orders {orders}), "
          f"{machine['nproc']} CPUs; cdc-ingest parallelism {PARALLELISM}; Debezium "
          f"{dbz.DEBEZIUM_VERSION} ({connector.server.label} connector) on Kafka Connect "
          f"{dbz.CONNECT_VERSION}")
    print(table(measures, "vs debezium", spread=True))
    cpu_1m = cpu_per_million(runs, only)
    print("\nCPU s per million row changes (medians):")
    for key, roles in cpu_1m.items():
        print(f"  {key:<9} {_cpu_line(roles)}")
    print(f"\ntotal wall time {total:.0f} s (workload written in "
          f"{wl.insert_s + wl.update_s + wl.delete_s:.0f} s)")
    config_of = _debezium_config(connects[0]) if connects else None
    write_json(args.out, {
        "benchmark": "compare",
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "server": {"name": svc.server.name, "label": svc.server.label, "version": version},
        "config": {
            "rows": args.rows, "repeats": args.repeat, "only": only,
            "order": "rotated: repeat i runs the measures of " + "/".join(ROTATED)
                     + " (those in only) starting at the i-th (mod n); the floor last",
            "cdc_ingest": {"pipeline_parallelism": PARALLELISM, "max_offsets_per_trigger":
                           MAX_OFFSETS, "trigger_interval": TRIGGER,
                           "processes": "alo, eo, eo-nohs: cdc-ingest capture + cdc-ingest "
                                        "sink (local[*]); first: cdc-ingest start",
                           "eo-nohs_pipeline_options": NO_HEAD_START,
                           "capture_options": f"defaults ({capture_defaults()}), "
                                              "heartbeat.interval 1s"},
            "debezium": config_of,
            "poll_s": POLL_S, "memory_sample_s": SAMPLE_S, "grace_s": GRACE_S,
            "first": {"backlog": "the eo pipeline (workload's binlog range) under "
                                 "`cdc-ingest start`",
                      "empty": "specific-offset at the binlog head over an empty table, one "
                               "row inserted right after the spawn",
                      "empty_triggers": {k: v or "default (not set)"
                                         for k, v in EMPTY_RUNS.items()},
                      "first_output": "spawn (perf_counter just before Popen) -> first "
                                      "sink-topic message read by a read_committed consumer",
                      "metadata_poll_s": 0.05, "consumer_poll_s": 0.05},
        },
        "product_code": {"cdc_ingest": str(Path(cdc_ingest.__file__).resolve().parent),
                         "PYTHONPATH": os.environ.get("PYTHONPATH")},
        "broker_group_coordinator": coordinator,
        "machine": {**machine, "mysql_server": version, "java": dbz.java_version(),
                    "clock_ticks": CLOCK_TICKS},
        "services": {"started": started, "mysql_port": svc.mysql_port,
                     "kafka_bootstrap": svc.bootstrap, "startup_s": services_s},
        "workload": {**asdict(wl), "changes": wl.changes},
        "debezium_positioning": positioning,
        "results": {m.name: m.as_json(ratio_of[m.name], per_repeat[m.name])
                    for m in measures},
        "cpu_s_per_million_changes": cpu_1m,
        "runs": runs,
        "errors": errors,
        "total_wall_s": total,
    })
    print(f"wrote {args.out}")
    for error in errors:
        print(f"FAILED: {error}")
    return 1 if errors else 0


if __name__ == "__main__":
    if sys.argv[1:2] == [FLOOR_CHILD]:
        sys.exit(floor_child(sys.argv[2:]))
    sys.exit(main())
