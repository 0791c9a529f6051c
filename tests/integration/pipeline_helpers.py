"""Run the real `cdc-ingest` CLI against the test services and read what it wrote."""

from __future__ import annotations

import decimal
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

from cdc_ingest.kafka import read_topic
from tests.integration.flavors import gtid_now

__all__ = ["changelog", "cli", "default_sigint", "gtid_now", "rows_of", "sink_topic",
           "start_capture", "start_command", "stop", "wait_for", "wait_quietly",
           "write_pipeline", "written_batches"]


def write_pipeline(
    path: Path,
    server: Any,
    kafka: Any,
    name: str,
    tables: str,
    source: dict[str, Any] | None = None,
    pipeline: dict[str, Any] | None = None,
    user: str = "cdc",
    sink: dict[str, Any] | None = None,
    routes: list[dict[str, Any]] | None = None,
    transforms: list[dict[str, Any]] | None = None,
) -> Path:
    creds = server.cdc if user == "cdc" else {"user": user, "password": user}
    doc = {
        "source": {
            "type": "mysql",
            "hostname": "127.0.0.1",
            "port": server.port,
            "username": creds["user"],
            "password": "${TEST_MYSQL_PASSWORD}",
            "tables": tables,
            "server-id": 5400 + abs(hash(name)) % 1000,
            "scan.startup.mode": "latest-offset",
            "heartbeat.interval": "1s",
            **(source or {}),
        },
        "sink": {"type": "upsert-kafka", "properties.bootstrap.servers": kafka.bootstrap,
                 **(sink or {})},
        "pipeline": {"name": name, "parallelism": 2, "state.dir": str(path.parent / name),
                     "trigger.interval": "500ms", **(pipeline or {})},
    }
    if routes:
        doc["route"] = routes
    if transforms:
        doc["transform"] = transforms
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    os.environ["TEST_MYSQL_PASSWORD"] = creds.get("password") or creds.get("passwd") or ""
    return path


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cdc_ingest.cli", *args],
        capture_output=True, text=True, timeout=timeout, check=False,
    )


def start_capture(config: Path, log: Path) -> subprocess.Popen[bytes]:
    return start_command("capture", config, log)


def default_sigint() -> None:
    """``preexec_fn`` of a child a test may stop with SIGINT: SIGINT's default disposition
    in it, whatever the suite inherited. A shell starts a script's background job (`nohup
    pytest ... &`) with SIGINT ignored, every process below inherits that, and an ignored
    SIGINT would leave the child running."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_command(command: str, config: Path, log: Path,
                  *extra: str) -> subprocess.Popen[bytes]:
    """`cdc-ingest <command> --config <config> [extra]` in the background, output appended
    to log; SIGINT stops it however the suite was started (:func:`default_sigint`)."""
    handle = log.open("ab")
    return subprocess.Popen(
        [sys.executable, "-m", "cdc_ingest.cli", command, "--config", str(config), *extra],
        stdout=handle, stderr=subprocess.STDOUT,
        preexec_fn=default_sigint,  # noqa: PLW1509 - no threads of ours fork meanwhile
    )


def sink_topic(kafka: Any, topic: str) -> list[Any]:
    """Every committed message of a sink topic (cdc_ingest.kafka.Message), offset order."""
    messages = list(read_topic({"bootstrap.servers": kafka.bootstrap}, topic))
    return sorted(messages, key=lambda m: (m.partition, m.offset))


def child_pids(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (a sink's: its Spark JVM)."""
    kids: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids += [int(k) for k in (task / "children").read_text().split()]
        except OSError:
            continue  # the thread ended
    return kids


def process_alive(pid: int) -> bool:
    """False once ``pid`` has exited (a zombie no one reaped counts as exited)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def catches_sigterm(pid: int) -> bool:
    """True once the process has a SIGTERM handler (its SigCgt mask in /proc)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = next((line.split()[1] for line in status.splitlines()
                   if line.startswith("SigCgt:")), "0")
    return bool(int(caught, 16) & (1 << (signal.SIGTERM - 1)))


def stop(proc: subprocess.Popen[bytes], timeout: float = 30) -> int:
    """SIGTERM a cdc-ingest command and its exit code. A command just started is given the
    moment it takes to catch the signal (interpreter start-up, well under a second): a
    SIGTERM before that kills any process, and is not what this asks about."""
    if proc.poll() is None:
        wait_for(lambda: proc.poll() is not None or catches_sigterm(proc.pid), timeout=30,
                 what=f"pid {proc.pid} to catch SIGTERM")
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout)


def changelog(
    kafka: Any, name: str, parse_float: Callable[[str], Any] = decimal.Decimal
) -> list[dict[str, Any]]:
    """Every committed changelog record, in offset order per partition, decimals exact."""
    records = []
    for msg in read_topic({"bootstrap.servers": kafka.bootstrap}, f"cdc-ingest.{name}.changelog"):
        body = json.loads(msg.value, parse_float=parse_float)
        body["_partition"] = msg.partition
        body["_offset"] = msg.offset
        body["_key"] = msg.key
        records.append(body)
    records.sort(key=lambda r: (r["_partition"], r["_offset"]))
    return records


POLL_S = (0.05, 0.1, 0.2, 0.4, 0.5)  # a wait looks again soon at first, then every 0.5 s


def _pauses() -> Iterator[float]:
    yield from POLL_S[:-1]
    while True:
        yield POLL_S[-1]


def wait_for(predicate: Callable[[], Any], timeout: float = 60, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    for pause in _pauses():
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(pause)
    raise AssertionError("unreachable")


def stop_between(proc: subprocess.Popen[bytes], count: Callable[[], int], low: int,
                 high: int, run_for: float = 0.1, settle: float = 0.3,
                 timeout: float = 180) -> int:
    """Run ``proc`` in slices of ``run_for`` seconds, SIGSTOPped between them, until
    ``count()`` (read while it is stopped, so it cannot move) is strictly between ``low``
    and ``high``; returns that count with ``proc`` still stopped (SIGKILL it, or SIGCONT).
    A slice is far shorter than the work it cuts, so the stop lands inside on purpose rather
    than by a poll's luck; overshooting ``high`` in one slice fails loudly. Each stop waits
    ``settle`` seconds before counting: a commit sent just before it lands meanwhile."""
    deadline = time.monotonic() + timeout
    os.kill(proc.pid, signal.SIGSTOP)
    while True:
        time.sleep(settle)
        seen = count()
        if low < seen < high:
            return seen
        if seen >= high:
            raise AssertionError(f"one slice of {run_for}s went from <= {low} to {seen}, "
                                 f"past {high}: make the slice shorter")
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"never stopped between {low} and {high} (at {seen}; "
                                 f"exit {proc.poll()})")
        os.kill(proc.pid, signal.SIGCONT)
        time.sleep(run_for)
        os.kill(proc.pid, signal.SIGSTOP)


def written_batches(log: Path) -> int:
    """How many batches a sink's log says wrote rows (its head start's writes count as one,
    docs/decisions/0017)."""
    return len(re.findall(r"(?:batch \d+|head start): [1-9]\d* rows in",
                          log.read_text()))


def wait_quietly(predicate: Callable[[], Any], timeout: float) -> None:
    """Wait until ``predicate()`` holds or ``timeout`` passes, without failing."""
    deadline = time.monotonic() + timeout
    pauses = _pauses()
    while not predicate() and time.monotonic() < deadline:
        time.sleep(next(pauses))


def rows_of(records: list[dict[str, Any]], table: str | None = None) -> list[dict[str, Any]]:
    return [r for r in records if r["op"] != "DDL" and (table is None or r["table"] == table)]


def kill_capture_mid_snapshot(procs: dict[str, subprocess.Popen[bytes]], config: Path,
                              log: Path, taken: str) -> str:
    """SIGKILL ``procs["capture"]`` once its log says ``taken`` (a request or a rename
    taken) and 3 snapshot chunks were read after it, start it again, and wait until that
    snapshot is done. Returns capture's log; ``taken`` must be in it once: what started the
    snapshot is taken once, whatever the kill."""
    wait_for(lambda: taken in log.read_text(), 60, f"{taken!r} in capture's log")
    wait_for(lambda: len(re.findall(r"snapshot chunk of \S+ read",
                                    log.read_text().split(taken, 1)[1])) >= 3, 120,
             f"3 snapshot chunks read after {taken!r}")
    procs["capture"].send_signal(signal.SIGKILL)
    procs["capture"].wait(30)
    procs["capture"] = start_command("capture", config, log)
    wait_for(lambda: log.read_text().count("snapshot done") >= 2, 120,
             "the snapshot to finish after the kill")
    text = log.read_text()
    assert text.count(taken) == 1, f"{taken!r} was taken twice"
    return text
