"""Helpers shared by the benchmark scripts: services, process stats, summaries, output.

The scripts are run as ``python benchmarks/<name>.py``, which puts this folder on
``sys.path``; import this module as ``_common``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime
from importlib import metadata
from pathlib import Path
from types import FrameType
from typing import Any

import confluent_kafka
import pymysql

from cdc_ingest.config import MySqlSourceDef, format_duration
from cdc_ingest.mysql.flavor import Flavor
from cdc_ingest.mysql.gtid import lacking
from cdc_ingest.services import KafkaBroker, MariaDB, MySQL

log = logging.getLogger("benchmarks")

REPO = Path(__file__).resolve().parents[1]
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# -- the server kind -----------------------------------------------------------------------


def _rows_of(cur: Any) -> Callable[..., list[tuple[Any, ...]]]:
    """``query(sql, args) -> rows`` over a pymysql cursor, as ``Flavor`` methods take it."""
    def query(sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        cur.execute(sql, args)
        return list(cur.fetchall())
    return query


def _mariadb_seqs(gtid_set: str | None) -> dict[str, int]:
    """MariaDB ``domain-server-seq[,...]`` -> {domain: seq}."""
    out: dict[str, int] = {}
    for raw in (gtid_set or "").split(","):
        part = raw.strip()
        if part:
            domain, _server, seq = part.split("-")
            out[domain] = max(out.get(domain, 0), int(seq))
    return out


@dataclass(frozen=True)
class SqlServer:
    """What the benchmarks need to know of the server kind (``--server``): everything that
    differs between MariaDB and MySQL, on top of the product's ``Flavor`` and GTID helpers."""

    name: str  # "mariadb" | "mysql": the --server value and the results file suffix
    label: str  # "MariaDB" | "MySQL"
    process: str  # the server process's name: "<process> CPU during ..." figures
    flavor: Flavor

    @property
    def mariadb(self) -> bool:
        """``is_mariadb`` / ``mariadb`` of the binlog readers."""
        return self.flavor.mariadb

    def service(self, home: Path) -> MariaDB | MySQL:
        """A private server of this kind (``cdc_ingest.services``) in ``home``."""
        return MariaDB(home) if self.mariadb else MySQL(home)

    def gtid_state(self, cur: Any) -> str:
        """The GTID set of everything in the binlog now: MariaDB ``@@gtid_binlog_pos``
        (``domain-server-seq``), MySQL the executed set (``uuid:1-n``, newlines removed)."""
        return self.flavor.gtid_state(_rows_of(cur))

    def binlog_position(self, cur: Any) -> tuple[str, int]:
        """(file, position) of the binlog's end: ``SHOW MASTER STATUS`` (MariaDB), ``SHOW
        BINARY LOG STATUS`` (MySQL 8.4+)."""
        file, pos = self.flavor.binlog_status(_rows_of(cur))[:2]
        return str(file), int(pos)

    def gtid_reached(self, committed: str | None, target: str) -> bool:
        """Whether the set ``committed`` covers ``target`` (a ``gtid_state``). MariaDB: every
        domain's sequence number reached; MySQL: ``target`` lacks nothing ``committed`` has."""
        if self.mariadb:
            have = _mariadb_seqs(committed)
            return all(have.get(domain, -1) >= seq
                       for domain, seq in _mariadb_seqs(target).items())
        return lacking(committed or "", target) == ""

    def integers(self, cur: Any, db: str, n: int) -> str:
        """A ``FROM`` item with the integers 1..n in column ``seq``: MariaDB's SEQUENCE engine
        table ``seq_1_to_n``; on MySQL a recursive CTE in a derived table (this raises the
        session's ``cte_max_recursion_depth`` on ``cur`` to fit)."""
        if self.mariadb:
            return f"{db}.seq_1_to_{n}"
        cur.execute(f"SET SESSION cte_max_recursion_depth = {max(n, 1000)}")
        return (f"(WITH RECURSIVE ints (seq) AS (SELECT 1 UNION ALL SELECT seq + 1 FROM ints"
                f" WHERE seq < {n}) SELECT seq FROM ints) AS ints")


MARIADB = SqlServer("mariadb", "MariaDB", "mariadbd", Flavor(mariadb=True))
MYSQL = SqlServer("mysql", "MySQL", "mysqld", Flavor(mariadb=False))
SERVERS = {s.name: s for s in (MARIADB, MYSQL)}


# -- services ------------------------------------------------------------------------------


@dataclass
class Services:
    """Connection settings of the MySQL/MariaDB server and Kafka broker a benchmark uses."""

    admin: dict[str, Any]  # pymysql.connect(**admin): a user that may create databases
    cdc: dict[str, Any]  # pymysql.connect(**cdc): the capture user
    bootstrap: str
    home: Path  # a temp folder for this run's files, removed at the end unless kept
    started: list[str] = field(default_factory=list)  # what this run started itself
    pids: dict[str, int] = field(default_factory=dict)  # server pids, when known
    server: SqlServer = MARIADB  # the kind of server ``admin`` and ``cdc`` connect to

    @property
    def mysql_port(self) -> int:
        return int(self.admin["port"])


def _pid_of(pid_file: Path) -> int | None:
    with suppress(FileNotFoundError, ValueError):
        return int(pid_file.read_text().strip())
    return None


@contextmanager
def services(
    *,
    mysql_host: str = "127.0.0.1",
    mysql_port: int | None = None,
    root_password: str = "root",
    cdc_user: str = "cdc",
    cdc_password: str = "cdc",
    kafka_bootstrap: str | None = None,
    keep_home: bool = False,
    server: SqlServer = MARIADB,
) -> Iterator[Services]:
    """``server`` (MariaDB or MySQL) and Kafka: the given ones, or private ones in a temp
    home stopped at the end. A given server must be of the kind ``server`` names.

    Stopping also happens on Ctrl-C and SIGTERM (turned into KeyboardInterrupt here). A
    private MySQL keeps its data inside the shared MySQL root (``cdc_ingest.services.mysql``):
    it is deleted with the home, or kept with it.
    """
    home = Path(tempfile.mkdtemp(prefix="cdc-ingest-bench-"))
    db: MariaDB | MySQL | None = None
    broker: KafkaBroker | None = None
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        if mysql_port is None:
            db = server.service(home / server.name)
            log.info("starting %s in %s", server.label, db.home)
            db.start()
            admin, cdc = dict(db.admin), dict(db.cdc)
        else:
            admin = {"host": mysql_host, "port": mysql_port, "user": "root",
                     "password": root_password}
            cdc = {"host": mysql_host, "port": mysql_port, "user": cdc_user,
                   "password": cdc_password}
        if kafka_bootstrap is None:
            broker = KafkaBroker(home / "kafka")
            log.info("starting Kafka in %s", broker.home)
            broker.start()
            kafka_bootstrap = broker.bootstrap
        _check_kind(admin, server)
        found = Services(admin, cdc, kafka_bootstrap, home, server=server)
        if db is not None:
            found.started.append(f"{server.name} ({db.home})")
            found.pids[server.process] = _pid_of(db.pid_file) or 0
        if broker is not None:
            found.started.append(f"kafka {broker.version} ({broker.home})")
            found.pids["kafka"] = _pid_of(broker.pid_file) or 0
        yield found
    finally:
        for running in (broker, db):
            if running is not None:
                try:
                    if isinstance(running, MySQL):  # its data is in the root, not in home
                        running.stop(wipe=not keep_home)
                    else:
                        running.stop()
                except Exception:  # stop the other one all the same
                    log.exception("could not stop %s", running.home)
        if keep_home:
            log.info("kept the service home %s", home)
            if isinstance(db, MySQL):
                log.info("MySQL's data is in %s (delete it when done)", db.server_dir)
        else:
            shutil.rmtree(home, ignore_errors=True)
        signal.signal(signal.SIGTERM, previous)


def _check_kind(admin: dict[str, Any], server: SqlServer) -> None:
    """Fail early when the server is not of the kind ``--server`` says."""
    with mysql_conn(admin) as conn, conn.cursor() as cur:
        cur.execute("SELECT VERSION()")
        version = str(cur.fetchone()[0])
    if Flavor.of(version).mariadb != server.mariadb:
        raise SystemExit(f"the server on port {admin['port']} is {version}, not "
                         f"{server.label}: pass --server "
                         f"{'mariadb' if Flavor.of(version).mariadb else 'mysql'}")


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def mysql_conn(settings: dict[str, Any], **extra: Any) -> pymysql.Connection[Any]:
    return pymysql.connect(**settings, autocommit=True, **extra)


# -- child processes -----------------------------------------------------------------------


def peak_rss_bytes(pid: int) -> int | None:
    """VmHWM (peak resident set) of a running process, from /proc."""
    with suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return None


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time a process has used so far (all its threads), from /proc."""
    with suppress(OSError, IndexError, ValueError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime
    return None


def main_thread_cpu_seconds(pid: int) -> float | None:
    """CPU time of a process's main thread only (its task with tid == pid)."""
    return cpu_seconds_of(Path(f"/proc/{pid}/task/{pid}/stat"))


def cpu_seconds_of(stat: Path) -> float | None:
    with suppress(OSError, IndexError, ValueError):
        fields = stat.read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return None


@dataclass
class ProcInfo:
    """One process of a process tree, as /proc shows it now."""

    pid: int
    ppid: int
    name: str  # comm, e.g. "java", "python3"
    cmdline: str
    cpu_s: float  # user + system of the process and of its children it has waited for
    rss_bytes: int | None


def _proc_info(pid: int) -> ProcInfo | None:
    with suppress(OSError, IndexError, ValueError):
        raw = Path(f"/proc/{pid}/stat").read_text()
        name = raw[raw.index("(") + 1 : raw.rindex(")")]
        fields = raw.rsplit(")", 1)[1].split()
        cpu = sum(int(fields[i]) for i in (11, 12, 13, 14)) / CLOCK_TICKS
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
            errors="replace").strip()
        rss = None
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
        return ProcInfo(pid, int(fields[1]), name, cmd, cpu, rss)
    return None


def process_tree(pid: int) -> list[ProcInfo]:
    """``pid`` and all its live descendants (a Spark sink: the Python driver, the JVM it
    launched, the pyspark daemon and its Python workers). The CPU of a descendant that
    already exited is in its parent's figure once the parent has waited for it."""
    infos = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            info = _proc_info(int(entry.name))
            if info is not None:
                infos[info.pid] = info
    if pid not in infos:
        return []
    children: dict[int, list[int]] = {}
    for info in infos.values():
        children.setdefault(info.ppid, []).append(info.pid)
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(infos[current])
        todo.extend(children.get(current, []))
    return out


def system_cpu_seconds() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, all CPUs, from /proc/stat."""
    with suppress(OSError, ValueError, IndexError):
        values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        total = sum(values[:8])  # user nice system idle iowait irq softirq steal
        idle = values[3] + values[4]
        return (total - idle) / CLOCK_TICKS, total / CLOCK_TICKS
    return 0.0, 0.0


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 60.0) -> int:
    """SIGTERM and wait; SIGKILL if it does not exit in time. Returns the exit code."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return -int(signal.SIGKILL)


@dataclass
class ChildExit:
    """How a child process ended, from ``wait4``: exit code and its own resource usage."""

    exit_code: int
    seconds: float  # wall time from ``started`` (perf_counter) to the exit being seen
    cpu_s: float  # user + system CPU of the child (all its threads)
    maxrss_bytes: int  # ru_maxrss: the child's peak resident set
    vmhwm_bytes: int | None  # last VmHWM sampled from /proc while it ran


class SchedTracker:
    """Scheduler statistics of a process's threads, from ``/proc/<pid>/task/*/schedstat``:
    seconds on a CPU and seconds runnable but waiting for one (CPU contention). Sample it
    while the process runs; threads that exit keep their last sample."""

    def __init__(self) -> None:
        self._threads: dict[int, tuple[float, float]] = {}

    def sample(self, pid: int) -> None:
        with suppress(OSError):
            for task in Path(f"/proc/{pid}/task").iterdir():
                with suppress(OSError, ValueError, IndexError):
                    on_cpu, waiting = (task / "schedstat").read_text().split()[:2]
                    self._threads[int(task.name)] = (int(on_cpu) / 1e9, int(waiting) / 1e9)

    @property
    def threads(self) -> int:
        return len(self._threads)

    @property
    def on_cpu_s(self) -> float:
        return sum(t[0] for t in self._threads.values())

    @property
    def runqueue_wait_s(self) -> float:
        return sum(t[1] for t in self._threads.values())


def wait_child(proc: subprocess.Popen[bytes], started: float, timeout_s: float,
               poll_s: float = 0.1, on_tick: Callable[[int], None] | None = None) -> ChildExit:
    """Wait for a child that exits on its own, sampling its VmHWM while it runs (and calling
    ``on_tick(pid)`` each ``poll_s``).

    Reaps it with ``os.wait4`` (so the rusage is the child's own) and sets
    ``proc.returncode``. On timeout: SIGTERM/SIGKILL (stop_process) and TimeoutError.
    """
    vmhwm: int | None = None
    deadline = started + timeout_s
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            seconds = time.perf_counter() - started
            proc.returncode = os.waitstatus_to_exitcode(status)
            return ChildExit(proc.returncode, seconds, usage.ru_utime + usage.ru_stime,
                             usage.ru_maxrss * 1024, vmhwm)
        vmhwm = peak_rss_bytes(proc.pid) or vmhwm
        if on_tick is not None:
            on_tick(proc.pid)
        if time.perf_counter() > deadline:
            stop_process(proc)
            raise TimeoutError(f"pid {proc.pid} still running after {timeout_s:.0f} s")
        time.sleep(poll_s)


def log_line_time(log_file: Path, marker: str, last: bool = False) -> float | None:
    """Epoch seconds of the first (or last) log line containing ``marker``; the line must
    start with a logging ``asctime`` (``2024-01-01 12:00:00,123``, local time)."""
    found: float | None = None
    for line in log_file.read_text(errors="replace").splitlines():
        if marker in line:
            try:
                stamp = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
            except ValueError:
                continue
            if not last:
                return stamp
            found = stamp
    return found


def log_tail(path: Path, lines: int = 40) -> str:
    if not path.is_file():
        return f"(no log at {path})"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def profile_threads(out: Path, func: Callable[[], Any]) -> Any:
    """Run ``func`` under cProfile, in this thread and in every thread started meanwhile
    (each thread gets its own profiler: cProfile alone sees only the thread that enabled
    it), and write the merged stats to ``out`` (pstats format), also when ``func`` raises
    (SystemExit included). Threads still running at the end are left out. Next to it,
    ``<out>.threads.json``: each profiled thread's name and profiled seconds."""
    import cProfile  # noqa: PLC0415 - only the profiled child needs it
    import pstats  # noqa: PLC0415
    import threading  # noqa: PLC0415

    finished: list[tuple[str, cProfile.Profile]] = []
    original_run = threading.Thread.run

    def run(thread: threading.Thread) -> None:
        prof = cProfile.Profile()
        prof.enable()
        try:
            original_run(thread)
        finally:
            prof.disable()
            finished.append((thread.name, prof))

    threading.Thread.run = run  # type: ignore[method-assign,assignment]
    main = cProfile.Profile()
    main.enable()
    try:
        return func()
    finally:
        main.disable()
        threading.Thread.run = original_run  # type: ignore[method-assign]
        stats = pstats.Stats(main)
        threads = [{"thread": threading.current_thread().name,
                    "seconds": stats.total_tt}]  # type: ignore[attr-defined]
        for name, prof in list(finished):
            one = pstats.Stats(prof)
            threads.append({"thread": name, "seconds": one.total_tt})  # type: ignore[attr-defined]
            stats.add(one)
        stats.dump_stats(str(out))
        Path(f"{out}.threads.json").write_text(json.dumps(threads, indent=1) + "\n")


# -- kafka ---------------------------------------------------------------------------------


def read_committed(bootstrap: str, topic: str, visit: Callable[[Any], None],
                   timeout_s: float = 120.0) -> int:
    """Every committed record of ``topic`` (read_committed, from the start), passed to
    ``visit`` (a confluent_kafka Message); returns how many there were."""
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"cdc-ingest-bench-{os.getpid()}-{time.monotonic_ns()}",
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
        "auto.offset.reset": "earliest",
        "enable.partition.eof": True,
    })
    try:
        meta = consumer.list_topics(topic, timeout=30)
        partitions = list(meta.topics[topic].partitions)
        consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in partitions])
        pending, count = set(partitions), 0
        deadline = time.monotonic() + timeout_s
        while pending:
            if time.monotonic() > deadline:
                raise RuntimeError(f"reading {topic}: partitions {sorted(pending)} never ended")
            for msg in consumer.consume(10_000, 1.0):
                err = msg.error()
                if err is None:
                    visit(msg)
                    count += 1
                    deadline = time.monotonic() + timeout_s
                elif err.code() == confluent_kafka.KafkaError._PARTITION_EOF:
                    pending.discard(msg.partition())
                else:
                    raise RuntimeError(f"reading {topic}: {err}")
        return count
    finally:
        consumer.close()


# -- summaries and output ------------------------------------------------------------------


def median(samples: Sequence[float]) -> float | None:
    return statistics.median(samples) if samples else None


def percentile(ordered: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100) of an already sorted sequence."""
    if not ordered:
        return None
    rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 100))))
    return ordered[rank - 1]


def _fmt(value: float | None, digits: int) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


@dataclass
class Measure:
    """One figure measured once per repeat; ``ratio_to`` names the baseline measure, if any.

    ``repeats`` (optional) gives the repeat each sample comes from (1, 2, ...): then a ratio
    has a spread too, each sample over its own repeat's baseline sample (:func:`ratio_samples`).
    """

    name: str
    unit: str
    samples: list[float] = field(default_factory=list)
    ratio_to: str | None = None
    digits: int = 1
    note: str = ""
    repeats: list[int] = field(default_factory=list)

    @property
    def median(self) -> float | None:
        return median(self.samples)

    @property
    def spread(self) -> tuple[float, float] | None:
        """(min, max) of the samples."""
        return (min(self.samples), max(self.samples)) if self.samples else None

    def by_repeat(self) -> dict[int, float]:
        """{repeat: sample}; {} when the repeats are not known."""
        if len(self.repeats) != len(self.samples):
            return {}
        return dict(zip(self.repeats, self.samples, strict=True))

    def as_json(self, ratio: float | None,
                ratio_of_repeats: list[float] | None = None) -> dict[str, Any]:
        """``ratio``: of the medians (:func:`ratios`); ``ratio_of_repeats``: the per-repeat
        ratios (:func:`ratio_samples`), written with their min and max when given."""
        spread = self.spread
        out: dict[str, Any] = {"unit": self.unit, "median": self.median,
                               "min": spread[0] if spread else None,
                               "max": spread[1] if spread else None,
                               "samples": self.samples, "ratio_to": self.ratio_to,
                               "ratio": ratio, "note": self.note}
        if self.repeats:
            out["repeats"] = self.repeats
        if ratio_of_repeats:
            out.update(ratio_samples=ratio_of_repeats, ratio_min=min(ratio_of_repeats),
                       ratio_max=max(ratio_of_repeats))
        return out


def ratios(measures: Sequence[Measure]) -> dict[str, float | None]:
    """Median of each measure divided by the median of its baseline measure."""
    by_name = {m.name: m for m in measures}
    out: dict[str, float | None] = {}
    for m in measures:
        base = by_name.get(m.ratio_to or "")
        out[m.name] = (m.median / base.median
                       if base is not None and m.median is not None and base.median else None)
    return out


def ratio_samples(measures: Sequence[Measure]) -> dict[str, list[float]]:
    """Per measure with a baseline: each repeat's sample over the baseline's sample of the
    same repeat, in repeat order (repeats where either is missing are left out); [] when the
    repeats of either are not known."""
    by_name = {m.name: m for m in measures}
    out: dict[str, list[float]] = {}
    for m in measures:
        base = by_name.get(m.ratio_to or "")
        mine, theirs = m.by_repeat(), base.by_repeat() if base is not None else {}
        out[m.name] = [mine[r] / theirs[r] for r in sorted(mine) if theirs.get(r)]
    return out


def table(measures: Sequence[Measure], ratio_header: str, spread: bool = False) -> str:
    """Plain text, aligned: measure, median, samples, ratio (of the medians). ``spread``: also
    the samples' min-max, and the min-max of the per-repeat ratios (:func:`ratio_samples`)."""
    ratio_of = ratios(measures)
    of_repeats = ratio_samples(measures) if spread else {}
    header = ["measure", "median", *(["min-max"] if spread else []), "samples", ratio_header,
              *([f"{ratio_header}: min-max"] if spread else [])]
    rows = [tuple(header)]
    for m in measures:
        ratio = ratio_of[m.name]
        cells = [f"{m.name} ({m.unit})", _fmt(m.median, m.digits)]
        if spread:
            cells.append("-" if m.spread is None or len(m.samples) < 2 else
                         "-".join(_fmt(x, m.digits) for x in m.spread))
        cells += [" ".join(_fmt(s, m.digits) for s in m.samples),
                  "-" if ratio is None else f"{ratio:.2f}x"]
        if spread:
            each = of_repeats.get(m.name) or []
            cells.append(f"{min(each):.2f}-{max(each):.2f}x" if len(each) > 1 else "-")
        rows.append(tuple(cells))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = []
    for n, row in enumerate(rows):
        left = row[0].ljust(widths[0])
        rest = [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        lines.append("  ".join([left, *rest]).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str | None:
    with suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return None


def _mem_total_bytes() -> int | None:
    with suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    return None


def _git(repo: Path, *args: str) -> str | None:
    with suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                             timeout=30, check=False)
        if out.returncode == 0:
            return out.stdout
    return None


def git_state(repo: Path = REPO) -> dict[str, Any]:
    """The commit the measured code is from, and whether the tree was that commit: ``dirty``
    when a tracked file differs from it (staged or not) or an untracked file exists, as
    ``git describe --dirty`` says for tracked files; ``modified`` then lists each
    (``git status --porcelain`` lines: status, path), so a figure measured on a dirty tree
    does not pass for the commit's. Without git: ``commit`` and ``dirty`` None."""
    commit = _git(repo, "rev-parse", "HEAD")
    status = _git(repo, "status", "--porcelain", "--untracked-files=all")
    if commit is None or status is None:
        return {"commit": None, "dirty": None}
    modified = [line for line in status.splitlines() if line.strip()]
    state: dict[str, Any] = {"commit": commit.strip(), "dirty": bool(modified)}
    if modified:
        state["modified"] = modified
    return state


def capture_defaults() -> str:
    """``capture.transaction.max-rows`` and ``max-interval`` as the measured code defaults
    them (its config model), for the ``capture_options`` of a result: the benchmarks leave
    both unset, so a figure written here by hand went stale when a default changed."""
    fields = MySqlSourceDef.model_fields
    rows = fields["capture_transaction_max_rows"].default
    interval = fields["capture_transaction_max_interval"].default
    return f"capture.transaction.max-rows {rows}, max-interval {format_duration(interval)}"


def machine_info(**extra: Any) -> dict[str, Any]:
    return {
        "nproc": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "mem_total_bytes": _mem_total_bytes(),
        "loadavg_at_start": list(os.getloadavg()),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "versions": {
            "cdc-ingest": _version("cdc-ingest"),
            "mysql-replication": _version("mysql-replication"),
            "confluent-kafka": _version("confluent-kafka"),
            "librdkafka": confluent_kafka.libversion()[0],
            "PyMySQL": _version("PyMySQL"),
            "orjson": _version("orjson"),
        },
        "git": git_state(),
        **extra,
    }


def write_json(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, sort_keys=False, default=str) + "\n")


class Stopwatch:
    """``with Stopwatch() as sw: ...`` then ``sw.seconds``."""

    def __init__(self) -> None:
        self.started = 0.0
        self.seconds = 0.0

    def __enter__(self) -> Stopwatch:
        self.started = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.started


def add_service_args(p: argparse.ArgumentParser, keep_home_help: str) -> None:
    """The options every benchmark shares: reuse running services, keep what it made."""
    p.add_argument("--mysql-host", default="127.0.0.1")
    p.add_argument("--mysql-port", type=int, default=None,
                   help="use this server (MariaDB, or the kind --server names where a script "
                   "has it) instead of starting one (database `bench` is dropped and "
                   "recreated!)")
    p.add_argument("--mysql-root-password", default="root")
    p.add_argument("--mysql-user", default="cdc", help="the capture user (default cdc)")
    p.add_argument("--mysql-password", default="cdc")
    p.add_argument("--kafka-bootstrap", default=None,
                   help="use this Kafka instead of starting one (the benchmark's topics are "
                   "deleted at the end unless --keep-topics)")
    p.add_argument("--keep-topics", action="store_true")
    p.add_argument("--keep-home", action="store_true", help=keep_home_help)


def setup_logging() -> None:
    """INFO from the benchmark itself; cdc_ingest's own chatter only from WARNING."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s",
                        stream=sys.stderr)
    logging.getLogger("cdc_ingest").setLevel(logging.WARNING)


def services_from_args(args: argparse.Namespace) -> Any:
    """:func:`services` for the options :func:`add_service_args` declares."""
    return services(
        mysql_host=args.mysql_host, mysql_port=args.mysql_port,
        root_password=args.mysql_root_password, cdc_user=args.mysql_user,
        cdc_password=args.mysql_password, kafka_bootstrap=args.kafka_bootstrap,
        keep_home=args.keep_home, server=SERVERS[getattr(args, "server", MARIADB.name)],
    )


# -- an earlier commit's product code --------------------------------------------------------


def baseline_package(ref: str, into: Path) -> Path:
    """The package as of git ``ref`` installed (``pip install --target``, no dependencies:
    this environment's serve) into a directory for ``PYTHONPATH``, its compiled extensions
    built from that commit's own sources (pip fetches Cython for the build)."""
    source = into / "source"
    source.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", ref, "cdc_ingest", "setup.py", "pyproject.toml",
         "README.md"], capture_output=True, check=True, timeout=120).stdout
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True, timeout=120)
    target = into / "site"
    log.info("building the product code of %s into %s", ref, target)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(target), str(source)], check=True, timeout=900,
                   env={**os.environ, "CDC_INGEST_REQUIRE_EXT": "1"})
    return target


def product_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a product process runs in: this one, with Python's bytecode cache on
    (a user's default; some machines set PYTHONDONTWRITEBYTECODE, which makes every start
    compile the package again, about 0.1 s of capture's start-up here)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, **(extra or {})}


def warm_bytecode() -> None:
    """Compile the package's bytecode cache before anything is timed."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "cdc_ingest")],
                   check=False, timeout=300, env=product_env())
