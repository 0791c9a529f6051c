"""Helpers shared by the benchmark scripts: services, process stats, summaries, output.

The scripts are run as ``python benchmarks/<name>.py``, which puts this folder on
``sys.path``; import this module as ``_common``.
"""

from __future__ import annotations

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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from types import FrameType
from typing import Any

import confluent_kafka
import pymysql

from cdc_ingest.services import KafkaBroker, MariaDB

log = logging.getLogger("benchmarks")

REPO = Path(__file__).resolve().parents[1]
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


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
) -> Iterator[Services]:
    """MariaDB and Kafka: the given ones, or private ones in a temp home stopped at the end.

    Stopping also happens on Ctrl-C and SIGTERM (turned into KeyboardInterrupt here).
    """
    home = Path(tempfile.mkdtemp(prefix="cdc-ingest-bench-"))
    db: MariaDB | None = None
    broker: KafkaBroker | None = None
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        if mysql_port is None:
            db = MariaDB(home / "mariadb")
            log.info("starting MariaDB in %s", db.home)
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
        found = Services(admin, cdc, kafka_bootstrap, home)
        if db is not None:
            found.started.append(f"mariadb ({db.home})")
            found.pids["mariadbd"] = _pid_of(db.pid_file) or 0
        if broker is not None:
            found.started.append(f"kafka {broker.version} ({broker.home})")
            found.pids["kafka"] = _pid_of(broker.pid_file) or 0
        yield found
    finally:
        for server in (broker, db):
            if server is not None:
                try:
                    server.stop()
                except Exception:  # stop the other one all the same
                    log.exception("could not stop %s", server.home)
        if keep_home:
            log.info("kept the service home %s", home)
        else:
            shutil.rmtree(home, ignore_errors=True)
        signal.signal(signal.SIGTERM, previous)


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


def log_tail(path: Path, lines: int = 40) -> str:
    if not path.is_file():
        return f"(no log at {path})"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


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
    """One figure measured once per repeat; ``ratio_to`` names the baseline measure, if any."""

    name: str
    unit: str
    samples: list[float] = field(default_factory=list)
    ratio_to: str | None = None
    digits: int = 1
    note: str = ""

    @property
    def median(self) -> float | None:
        return median(self.samples)

    def as_json(self, ratio: float | None) -> dict[str, Any]:
        return {"unit": self.unit, "median": self.median, "samples": self.samples,
                "ratio_to": self.ratio_to, "ratio": ratio, "note": self.note}


def ratios(measures: Sequence[Measure]) -> dict[str, float | None]:
    """Median of each measure divided by the median of its baseline measure."""
    by_name = {m.name: m for m in measures}
    out: dict[str, float | None] = {}
    for m in measures:
        base = by_name.get(m.ratio_to or "")
        out[m.name] = (m.median / base.median
                       if base is not None and m.median is not None and base.median else None)
    return out


def table(measures: Sequence[Measure], ratio_header: str) -> str:
    """Plain text, aligned: measure, median, samples, ratio."""
    ratio_of = ratios(measures)
    rows = [("measure", "median", "samples", ratio_header)]
    for m in measures:
        ratio = ratio_of[m.name]
        rows.append((
            f"{m.name} ({m.unit})",
            _fmt(m.median, m.digits),
            " ".join(_fmt(s, m.digits) for s in m.samples),
            "-" if ratio is None else f"{ratio:.2f}x",
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
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


def _git_commit() -> str | None:
    with suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"],
                             capture_output=True, text=True, timeout=10, check=False)
        if out.returncode == 0:
            return out.stdout.strip()
    return None


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
        "git_commit": _git_commit(),
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
