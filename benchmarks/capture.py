"""Capture throughput: binlog -> committed changelog records, against plain library decoding.

    python benchmarks/capture.py [--server mariadb|mysql] [--rows 1000000] [--repeat 3]

Writes a workload into ``bench.orders`` once (inserts, then updates of 20% of the rows, then
deletes of 10%, in ~5000-row statements), then, once per repeat and over that same binlog
range: runs ``cdc-ingest capture`` until its committed position covers the workload; reads
the range with a plain python-mysql-replication ``BinLogStreamReader``; reads it with our own
``BinlogReader`` (no Kafka). Against MariaDB (default) or MySQL (``--server mysql``): what
differs between them is ``_common.SqlServer``. See benchmarks/README.md for what each figure
means.
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from _common import (
    MARIADB,
    REPO,
    SERVERS,
    Measure,
    Services,
    Stopwatch,
    add_service_args,
    baseline_package,
    cpu_seconds,
    log_tail,
    machine_info,
    main_thread_cpu_seconds,
    mysql_conn,
    peak_rss_bytes,
    product_env,
    ratios,
    read_committed,
    services_from_args,
    setup_logging,
    stop_process,
    table,
    warm_bytecode,
    write_json,
)
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from confluent_kafka.admin import AdminClient
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import HeartbeatLogEvent
from pymysqlreplication.row_event import (
    DeleteRowsEvent,
    PartialUpdateRowsEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)

from cdc_ingest.capture.binlog import BinlogReader, Replica
from cdc_ingest.capture.decoder import DECODER_ENV
from cdc_ingest.capture.events import Heartbeat, Rows
from cdc_ingest.capture.positions import SOURCE_KEY
from cdc_ingest.model import Position
from cdc_ingest.mysql import Catalog, ConnectionSettings

log = logging.getLogger("benchmarks.capture")

DB = "bench"
TABLE = "orders"
BATCH = 5000  # rows per statement (and per MySQL transaction) of the workload
UPDATE_EVERY = 5  # ids divisible by 5 are updated: 20% of the rows
DELETE_REMAINDER = 1  # ids ending in 1 are deleted: 10% of the rows
PARALLELISM = 2
POLL_S = 0.05
STALL_S = 120.0  # no progress for this long = something is broken

CREATE_TABLE = f"""
CREATE TABLE {DB}.{TABLE} (
  id BIGINT PRIMARY KEY,
  customer_id INT,
  status VARCHAR(20),
  amount DECIMAL(12,2),
  note VARCHAR(255),
  created_at DATETIME(6),
  updated_at TIMESTAMP(3),
  flags TINYINT,
  payload JSON
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4
"""
STATUSES = ("new", "paid", "packed", "shipped", "delivered", "returned")
EPOCH = datetime(2024, 1, 1, tzinfo=UTC)


# -- the workload --------------------------------------------------------------------------


@dataclass
class Workload:
    rows: int
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    gtid_before: str = ""
    gtid_after: str = ""
    binlog_bytes: int | None = None
    start_file: str = ""  # the binlog file the workload starts in
    insert_s: float = 0.0
    update_s: float = 0.0
    delete_s: float = 0.0

    @property
    def changes(self) -> int:
        return self.inserted + self.updated + self.deleted


def _row_sql(i: int) -> str:
    customer = (i * 7919) % 100_000
    cents = (i * 3_137) % 10_000_000
    created = (EPOCH + timedelta(microseconds=i * 1_000_003)).strftime("%Y-%m-%d %H:%M:%S.%f")
    updated = (EPOCH + timedelta(milliseconds=i * 1_501)).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    note = f"order {i} of customer {customer}" + " gift wrap" * (i % 4)
    payload = (
        f'{{"sku":"SKU-{i % 9973}","qty":{i % 7 + 1},"tags":["web","{STATUSES[i % 6]}"],'
        f'"gift":{"true" if i % 4 else "false"}}}'
    )
    return (
        f"({i},{customer},'{STATUSES[i % 4]}',{cents // 100}.{cents % 100:02d},'{note}',"
        f"'{created}','{updated}',{i % 128},'{payload}')"
    )


def _binlog_bytes(cur: Any, start: tuple[str, int], end: tuple[str, int]) -> int | None:
    """Bytes of binlog between two binlog positions (``SqlServer.binlog_position``)."""
    cur.execute("SHOW BINARY LOGS")
    sizes = {str(row[0]): int(row[1]) for row in cur.fetchall()}
    names = sorted(n for n in sizes if start[0] <= n <= end[0])
    if not names or names[0] != start[0] or names[-1] != end[0]:
        return None
    total = sum(sizes[n] for n in names)
    return total - start[1] - (sizes[end[0]] - end[1])


def make_workload(svc: Services, rows: int, create_table: str = CREATE_TABLE,
                  row_sql: Callable[[int], str] | None = None,
                  partial_json: bool = False) -> Workload:
    """Recreate bench.orders and write the row changes; the GTIDs bound them in the binlog.
    ``create_table`` / ``row_sql`` (the VALUES tuple of row ``i``): another shape of
    bench.orders with the same statements (avro_sink.py adds a nullable TEXT column).
    ``partial_json`` (MySQL): the updates also change two values of ``payload`` with
    JSON_SET, on a session with ``binlog_row_value_options=PARTIAL_JSON``, so MySQL logs them
    as diffs (PARTIAL_UPDATE_ROWS_EVENT)."""
    row_sql = row_sql or _row_sql
    wl = Workload(rows)
    json_set = ""
    if partial_json:
        json_set = (", payload = JSON_SET(payload, '$.qty', JSON_EXTRACT(payload, '$.qty') + 1,"
                    " '$.tags[last]', 'updated')")
    server = svc.server
    conn = mysql_conn(svc.admin)
    try:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {DB}")
            cur.execute(f"CREATE DATABASE {DB} CHARACTER SET utf8mb4")
            cur.execute(create_table)
            wl.gtid_before = server.gtid_state(cur)
            start = server.binlog_position(cur)
            wl.start_file = start[0]
            conn.autocommit(False)
            with Stopwatch() as sw:
                for lo in range(1, rows + 1, BATCH):
                    hi = min(lo + BATCH, rows + 1)
                    values = ",".join(row_sql(i) for i in range(lo, hi))
                    wl.inserted += cur.execute(f"INSERT INTO {DB}.{TABLE} VALUES {values}")
                    conn.commit()
            wl.insert_s = sw.seconds
            log.info("inserted %d rows in %.1f s", wl.inserted, wl.insert_s)
            if partial_json:
                cur.execute("SET SESSION binlog_row_value_options = 'PARTIAL_JSON'")
            with Stopwatch() as sw:
                for lo in range(1, rows + 1, BATCH * UPDATE_EVERY):
                    hi = lo + BATCH * UPDATE_EVERY - 1
                    wl.updated += cur.execute(
                        f"UPDATE {DB}.{TABLE} SET status = 'updated', amount = amount + 1,"
                        " updated_at = updated_at + INTERVAL 1 HOUR, flags = flags ^ 1"
                        f"{json_set} WHERE id BETWEEN {lo} AND {hi} AND id % {UPDATE_EVERY} = 0"
                    )
                    conn.commit()
            wl.update_s = sw.seconds
            log.info("updated %d rows in %.1f s", wl.updated, wl.update_s)
            with Stopwatch() as sw:
                for lo in range(1, rows + 1, BATCH * 10):
                    hi = lo + BATCH * 10 - 1
                    wl.deleted += cur.execute(
                        f"DELETE FROM {DB}.{TABLE}"
                        f" WHERE id BETWEEN {lo} AND {hi} AND id % 10 = {DELETE_REMAINDER}"
                    )
                    conn.commit()
            wl.delete_s = sw.seconds
            log.info("deleted %d rows in %.1f s", wl.deleted, wl.delete_s)
            conn.autocommit(True)
            wl.gtid_after = server.gtid_state(cur)
            wl.binlog_bytes = _binlog_bytes(cur, start, server.binlog_position(cur))
    finally:
        conn.close()
    return wl


BIG_TABLE = "big"


def make_big_transaction(svc: Services, rows: int) -> Workload:
    """One MySQL transaction of ``rows`` inserts (one INSERT ... SELECT) into bench.big."""
    wl = Workload(rows)
    server = svc.server
    conn = mysql_conn(svc.admin)
    try:
        with conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {DB}.{BIG_TABLE}")
            cur.execute(f"CREATE TABLE {DB}.{BIG_TABLE} LIKE {DB}.{TABLE}")
            wl.gtid_before = server.gtid_state(cur)
            start = server.binlog_position(cur)
            integers = server.integers(cur, DB, rows)
            with Stopwatch() as sw:
                wl.inserted = cur.execute(
                    f"INSERT INTO {DB}.{BIG_TABLE} SELECT seq, seq % 100000, 'new', seq / 100,"
                    " CONCAT('order ', seq, ' in one big transaction'),"
                    " '2024-01-01 00:00:00.123456', '2024-01-01 00:00:00.123', seq % 128,"
                    f" '{{\"sku\":\"x\"}}' FROM {integers}"
                )
                conn.commit()
            wl.insert_s = sw.seconds
            wl.gtid_after = server.gtid_state(cur)
            wl.binlog_bytes = _binlog_bytes(cur, start, server.binlog_position(cur))
    finally:
        conn.close()
    return wl


def server_version(svc: Services) -> str:
    conn = mysql_conn(svc.admin)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT VERSION()")
            return str(cur.fetchone()[0])
    finally:
        conn.close()


# -- GTIDs -----------------------------------------------------------------------------------


def gtid_reached(committed: str | None, target: str) -> bool:
    """MariaDB GTIDs only (tx_metadata.py imports it); this script asks
    ``svc.server.gtid_reached``, which knows MySQL sets too."""
    return MARIADB.gtid_reached(committed, target)


# -- a. the capture process ----------------------------------------------------------------


def _pipeline_yaml(svc: Services, wl: Workload, name: str, server_id: int, state: Path,
                   table: str = TABLE) -> str:
    doc = {
        "source": {
            "type": "mysql",
            "hostname": svc.cdc["host"],
            "port": svc.mysql_port,
            "username": svc.cdc["user"],
            "password": svc.cdc["password"],
            "tables": f"{DB}.{table}",
            "server-id": server_id,
            "scan.startup.mode": "specific-offset",
            "scan.startup.specific-offset.gtid-set": wl.gtid_before,
            "heartbeat.interval": "1s",
        },
        "sink": {"type": "upsert-kafka", "properties.bootstrap.servers": svc.bootstrap},
        "pipeline": {"name": name, "parallelism": PARALLELISM, "state.dir": str(state)},
    }
    return yaml.safe_dump(doc, sort_keys=False)


def _log_time(log_file: Path, marker: str) -> float | None:
    """Epoch seconds of the first capture log line containing ``marker`` (asctime, local)."""
    for line in log_file.read_text(errors="replace").splitlines():
        if marker in line:
            try:
                stamp = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
            except ValueError:
                return None
            return stamp.timestamp()
    return None


def _server_cpu(svc: Services) -> dict[str, float | None]:
    return {name: cpu_seconds(pid) for name, pid in svc.pids.items() if pid}


class PositionWatch:
    """The last committed capture position, followed as it is written: one read_committed
    consumer on the offsets topic, polled briefly (a fresh read of the topic per check took
    about 0.5 s, which the end-to-end time would include)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self._topic = topic
        self._consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": f"bench-watch-{secrets.token_hex(4)}",
            "enable.auto.commit": False, "isolation.level": "read_committed",
            "fetch.wait.max.ms": 10, "topic.metadata.refresh.interval.ms": 200,
        })
        self._assigned = False
        self._last: Position | None = None

    def latest(self) -> Position | None:
        if not self._assigned:
            if self._topic not in self._consumer.list_topics(timeout=5).topics:
                return None  # capture has not created it yet
            self._consumer.assign([TopicPartition(self._topic, 0, OFFSET_BEGINNING)])
            self._assigned = True
        for msg in self._consumer.consume(10_000, 0.05):
            if msg.error() is None and msg.key() == SOURCE_KEY and msg.value() is not None:
                self._last = Position.from_json(msg.value())
        return self._last

    def close(self) -> None:
        self._consumer.close()


def count_committed(bootstrap: str, topic: str, timeout_s: float = 120.0) -> int:
    """How many committed records ``topic`` holds (read_committed)."""
    return read_committed(bootstrap, topic, lambda _msg: None, timeout_s)


def run_capture(
    svc: Services, wl: Workload, name: str, server_id: int, workdir: Path, timeout_s: float,
    env: dict[str, str] | None = None, table: str = TABLE,
) -> dict[str, Any]:
    """Time ``cdc-ingest capture`` from process start to its position covering the workload."""
    config = workdir / f"{name}.yaml"
    config.write_text(_pipeline_yaml(svc, wl, name, server_id, workdir / name, table))
    log_file = workdir / f"{name}.log"
    watch = PositionWatch(svc.bootstrap, f"cdc-ingest.{name}.offsets")
    server_cpu_before = _server_cpu(svc)
    first_commit: float | None = None
    with log_file.open("ab") as out:
        started_wall = time.time()
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "cdc_ingest.cli", "capture", "--config", str(config)],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=workdir,
            env=product_env(env),
        )
    try:
        last: Position | None = None
        progress_at = started
        progress_rows: tuple[str | None, int] | int | None = -1  # -1: nothing seen yet
        while True:
            tick = time.perf_counter()
            if proc.poll() is not None:
                raise RuntimeError(
                    f"capture exited with {proc.returncode} before reaching "
                    f"{wl.gtid_after}:\n{log_tail(log_file)}"
                )
            last = watch.latest()
            now = time.perf_counter()
            if last is not None and first_commit is None:
                first_commit = now - started
            if last is not None and svc.server.gtid_reached(last.gtid_set, wl.gtid_after):
                seconds = now - started
                break
            moved = (last.gtid_set, last.rows_done) if last else None
            if moved != progress_rows:
                progress_at, progress_rows = now, moved
            elif now - progress_at > STALL_S or now - started > timeout_s:
                raise RuntimeError(
                    f"capture made no progress (committed {last and last.describe()!r}, "
                    f"want {wl.gtid_after}):\n{log_tail(log_file)}"
                )
            time.sleep(max(0.0, POLL_S - (time.perf_counter() - tick)))
        rss = peak_rss_bytes(proc.pid)
        cpu = cpu_seconds(proc.pid)
        main_cpu = main_thread_cpu_seconds(proc.pid)
        server_cpu_after = _server_cpu(svc)
    finally:
        exit_code = stop_process(proc)
        watch.close()
    if exit_code != 0:
        raise RuntimeError(f"capture exited with {exit_code} after SIGTERM:\n{log_tail(log_file)}")
    starts_at = _log_time(log_file, f"capture {name} starts at")
    startup = starts_at - started_wall if starts_at is not None else None
    records = count_committed(svc.bootstrap, f"cdc-ingest.{name}.changelog")
    if records != wl.changes:
        raise RuntimeError(f"changelog of {name} holds {records} records, want {wl.changes}")
    server_cpu = {
        name_: (server_cpu_after[name_] or 0.0) - (before or 0.0)
        for name_, before in server_cpu_before.items()
        if server_cpu_after.get(name_) is not None
    }
    return {
        "pipeline": name,
        "seconds": seconds,
        "rows_per_s": wl.changes / seconds,
        "first_commit_s": first_commit,
        "startup_s": startup,
        "rows_per_s_after_startup": (
            wl.changes / (seconds - startup) if startup is not None and seconds > startup
            else None
        ),
        "peak_rss_bytes": rss,
        "cpu_s": cpu,
        "main_thread_cpu_s": main_cpu,
        "server_cpu_s": server_cpu,
        "exit_code": exit_code,
        "changelog_records": records,
        "committed": last.describe() if last else None,
    }


# -- b. the library's own decoding -----------------------------------------------------------


def library_decode(svc: Services, wl: Workload, server_id: int) -> dict[str, Any]:
    """Plain BinLogStreamReader over the same range, every row of every rows event decoded
    (``is_mariadb`` as the server is).

    ``blocking=True`` and a stop at the workload's row count: with ``blocking=False`` the
    library (1.0.17) never ends against MariaDB with ``auto_position`` - the server resets the
    non-blocking dump connection every few thousand rows and the library reconnects from the
    original GTID, re-reading the range forever. Against MySQL 9.7 ``blocking=False`` does end,
    after exactly the workload's rows and in the same time (tried at 26,000 and 260,000 row
    changes); the measure stays the same on both servers so that they compare. Heartbeats
    (only sent while idle) let a stalled stream fail instead of hanging.

    Not quite the bare library: importing ``cdc_ingest.capture.binlog`` (for measure c) has
    taught it MySQL 8.3+ GTID sets in the dump request and VECTOR columns in TableMap events
    (``cdc_ingest.capture.binlog_library``): a small step per TableMap event, not the row
    decoding measured here.
    """
    settings = {"host": svc.cdc["host"], "port": svc.mysql_port, "user": svc.cdc["user"],
                "password": svc.cdc["password"]}
    rows = 0
    with Stopwatch() as sw:
        stream = BinLogStreamReader(
            connection_settings=settings,
            server_id=server_id,
            blocking=True,
            is_mariadb=svc.server.mariadb,
            auto_position=wl.gtid_before,
            only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent, PartialUpdateRowsEvent,
                         HeartbeatLogEvent],
            only_schemas=[DB],
            slave_heartbeat=1,
            enable_logging=False,
        )
        try:
            progress_at = time.monotonic()
            for ev in stream:
                if isinstance(ev, HeartbeatLogEvent):
                    if time.monotonic() - progress_at > STALL_S:
                        raise RuntimeError(f"the library stalled at {rows} of {wl.changes} rows")
                    continue
                for _row in ev.rows:
                    rows += 1
                progress_at = time.monotonic()
                if rows >= wl.changes:
                    break
        finally:
            stream.close()
    if rows != wl.changes:
        raise RuntimeError(f"the library decoded {rows} rows, want {wl.changes}")
    return {"seconds": sw.seconds, "rows": rows, "rows_per_s": rows / sw.seconds}


# -- the C reference: mariadb-binlog -vv ----------------------------------------------------


def c_reference(svc: Services, wl: Workload, check: bool) -> dict[str, Any] | None:
    """``mariadb-binlog --read-from-remote-server -vv`` over the workload's GTID range, its
    text to /dev/null: MariaDB's own C decoder, reading as a replica does. MariaDB only (the
    GTID range options are MariaDB's). ``check``: a second, untimed run counts its row
    images, which must be the workload's."""
    tool = shutil.which("mariadb-binlog")
    if not svc.server.mariadb or tool is None:
        return None
    cmd = [tool, "--read-from-remote-server", f"--host={svc.admin['host']}",
           f"--port={svc.mysql_port}", f"--user={svc.admin['user']}", "-vv",
           f"--start-position={wl.gtid_before}", f"--stop-position={wl.gtid_after}",
           "--to-last-log", wl.start_file]
    env = {**os.environ, "MYSQL_PWD": str(svc.admin.get("password") or "")}
    with Stopwatch() as sw:
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                       check=True)
    if check:
        out = subprocess.run(cmd, capture_output=True, env=env, check=True).stdout
        rows = sum(out.count(b"\n### " + kind) for kind in (b"INSERT", b"UPDATE", b"DELETE"))
        if rows != wl.changes:
            raise RuntimeError(f"mariadb-binlog printed {rows} row images, want {wl.changes}")
    return {"seconds": sw.seconds, "rows": wl.changes, "rows_per_s": wl.changes / sw.seconds}


# -- c. our decoder alone --------------------------------------------------------------------


def our_decode(svc: Services, wl: Workload, server_id: int) -> dict[str, Any]:
    """cdc_ingest's BinlogReader over the same range: framing by the library, rows by us."""
    settings = ConnectionSettings(
        host=svc.cdc["host"], port=svc.mysql_port, user=svc.cdc["user"],
        password=svc.cdc["password"],
    )
    rows = 0
    with Stopwatch() as sw:
        catalog = Catalog(settings)
        reader = BinlogReader(
            Replica(settings, server_id, mariadb=svc.server.mariadb, heartbeat_s=1.0),
            Position(gtid_set=wl.gtid_before),
            captured=lambda db, table: db == DB, catalog=catalog.table_facts,
        )
        try:
            progress_at = time.monotonic()
            for ev in reader.events():
                if isinstance(ev, Rows):
                    for _before, _after in ev.rows:
                        rows += 1
                    progress_at = time.monotonic()
                    if rows >= wl.changes:
                        break
                elif isinstance(ev, Heartbeat) and time.monotonic() - progress_at > STALL_S:
                    raise RuntimeError(f"BinlogReader stalled at {rows} of {wl.changes} rows")
        finally:
            reader.close()
            catalog.close()
    if rows != wl.changes:
        raise RuntimeError(f"BinlogReader decoded {rows} rows, want {wl.changes}")
    return {"seconds": sw.seconds, "rows": rows, "rows_per_s": rows / sw.seconds}


# -- driver ----------------------------------------------------------------------------------


@contextmanager
def _decoder_env(kind: str) -> Iterator[None]:
    old = os.environ.get(DECODER_ENV)
    os.environ[DECODER_ENV] = kind
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(DECODER_ENV, None)
        else:
            os.environ[DECODER_ENV] = old



def _delete_topics(bootstrap: str, topics: list[str]) -> None:
    if not topics:
        return
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the futures end
    # each name once: confluent-kafka 2.16 crashes (SIGSEGV) on a name given twice
    futures = admin.delete_topics(list(dict.fromkeys(topics)))
    for topic, future in futures.items():
        try:
            future.result(30)
        except Exception as exc:  # noqa: BLE001 - cleanup only
            log.warning("could not delete topic %s: %s", topic, exc)


def measures_of(runs: list[dict[str, Any]], with_ours: bool,
                baseline_ref: str | None = None) -> list[Measure]:
    def samples(part: str, key: str, scale: float = 1.0) -> list[float]:
        return [r[part][key] / scale for r in runs if r.get(part, {}).get(key) is not None]

    lib = "library decode"
    out = [
        Measure("capture end-to-end", "rows/s", samples("capture", "rows_per_s"), lib, 0,
                "process start -> committed position covers the workload"),
        Measure(lib, "rows/s", samples("library", "rows_per_s"), lib, 0,
                "BinLogStreamReader, ev.rows of every rows event"),
    ]
    if any("c_reference" in r for r in runs):
        c_ref = "mariadb-binlog -vv"
        out.insert(1, Measure(c_ref, "rows/s", samples("c_reference", "rows_per_s"), lib, 0,
                              "MariaDB's C decoder, text to /dev/null"))
        out.insert(2, Measure("capture vs mariadb-binlog", "x",
                              [r["capture"]["rows_per_s"] / r["c_reference"]["rows_per_s"]
                               for r in runs if "c_reference" in r], digits=2,
                              note="capture end-to-end / mariadb-binlog -vv, per repeat"))
    if baseline_ref and any("capture_baseline" in r for r in runs):
        out += [
            Measure(f"capture end-to-end, code of {baseline_ref}", "rows/s",
                    samples("capture_baseline", "rows_per_s"), lib, 0,
                    "the same, with the product code of --baseline-ref"),
            Measure(f"capture vs code of {baseline_ref}", "x",
                    [r["capture"]["rows_per_s"] / r["capture_baseline"]["rows_per_s"]
                     for r in runs if "capture_baseline" in r], digits=2,
                    note="capture end-to-end / the baseline's, per repeat (run back to back)"),
        ]
    if with_ours:
        out.append(Measure("our decoder alone", "rows/s", samples("ours", "rows_per_s"), lib, 0,
                           "cdc_ingest BinlogReader, no Kafka"))
    if any("capture_python" in r for r in runs):
        out += [
            Measure("capture, reference decoder", "rows/s",
                    samples("capture_python", "rows_per_s"), lib, 0,
                    "capture end-to-end with CDC_INGEST_DECODER=python"),
            Measure("reference decoder alone", "rows/s", samples("ours_python", "rows_per_s"),
                    lib, 0, "BinlogReader with CDC_INGEST_DECODER=python, no Kafka"),
        ]
    out += [
        Measure("capture after startup", "rows/s",
                samples("capture", "rows_per_s_after_startup"), lib, 0,
                "rows / (end-to-end time - startup time)"),
        Measure("capture wall time", "s", samples("capture", "seconds"), digits=1),
        Measure("capture startup", "s", samples("capture", "startup_s"), digits=2,
                note="process start -> 'capture ... starts at' log line"),
        Measure("capture first commit", "s", samples("capture", "first_commit_s"), digits=2,
                note="process start -> first committed position"),
        Measure("capture CPU", "s", samples("capture", "cpu_s"), digits=1,
                note="user+system CPU of the capture process, all threads"),
        Measure("capture main-thread CPU", "s", samples("capture", "main_thread_cpu_s"),
                digits=1, note="the Python thread (librdkafka's threads excluded)"),
        Measure("capture CPU per 1k rows", "ms",
                [r["capture"]["cpu_s"] * 1e6 / r["capture"]["rows_per_s"]
                 / r["capture"]["seconds"] for r in runs
                 if r.get("capture", {}).get("cpu_s")],
                digits=2, note="all threads"),
        Measure("capture peak RSS", "MiB", samples("capture", "peak_rss_bytes", 2**20),
                digits=0, note="VmHWM of the capture process"),
    ]
    for server in ("kafka", *(s.process for s in SERVERS.values())):
        values = [r["capture"]["server_cpu_s"][server] for r in runs
                  if server in r.get("capture", {}).get("server_cpu_s", {})]
        if values:
            out.append(Measure(f"{server} CPU during capture", "s", values, digits=1))
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description="Capture throughput (binlog -> committed Kafka records) against plain "
        "python-mysql-replication decoding of the same binlog range.",
    )
    p.add_argument("--rows", type=int, default=1_000_000,
                   help="rows inserted; 20%% are then updated and 10%% deleted "
                   "(default %(default)s)")
    p.add_argument("--repeat", type=int, default=3, help="measurements of each kind (default 3)")
    p.add_argument("--server", choices=sorted(SERVERS), default=MARIADB.name,
                   help="the binlog source: a private MariaDB, or the project's local Oracle "
                   "MySQL 9.7 (cdc_ingest.services.MySQL); with --mysql-port, the kind of that "
                   "server (default %(default)s)")
    p.add_argument("--out", type=Path, default=None,
                   help="JSON results file (default benchmarks/results/capture.json, "
                   "capture-mysql.json with --server mysql)")
    p.add_argument("--no-decoder", action="store_true",
                   help="skip measure c (our BinlogReader alone)")
    p.add_argument("--no-reference", action="store_true",
                   help="skip capture and decoding with the reference (pure-Python) decoder")
    p.add_argument("--big-tx-rows", type=int, default=1_000_000,
                   help="rows of the single-transaction measure; 0 skips it "
                   "(default %(default)s)")
    add_service_args(p, "keep the temp folder of the services this run starts (logs, data)")
    p.add_argument("--baseline-ref", default=None,
                   help="also time capture with the product code of this git commit (built "
                        "with its own extensions), back to back with this code per repeat")
    p.add_argument("--partial-json", action="store_true",
                   help="MySQL: the updates change the JSON column with JSON_SET under "
                        "binlog_row_value_options=PARTIAL_JSON, logged as diffs")
    p.add_argument("--capture-timeout", type=float, default=3600.0,
                   help="seconds one capture measurement may take")
    return p


def results_path(server: str) -> Path:
    """The default --out: one file per server kind, MariaDB's keeps its old name."""
    suffix = "" if server == MARIADB.name else f"-{server}"
    return REPO / "benchmarks" / "results" / f"capture{suffix}.json"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.out is None:
        args.out = results_path(args.server)
    setup_logging()
    wall = time.perf_counter()
    run_id = secrets.token_hex(3)
    runs: list[dict[str, Any]] = []
    topics: list[str] = []
    with services_from_args(args) as svc:
        workdir = svc.home / "capture"
        workdir.mkdir()
        try:
            services_s = time.perf_counter() - wall
            version = server_version(svc)
            log.info("writing the workload: %d rows into %s.%s", args.rows, DB, TABLE)
            if args.partial_json and args.server != "mysql":
                raise SystemExit("--partial-json needs --server mysql (MariaDB logs no diffs)")
            wl = make_workload(svc, args.rows, partial_json=args.partial_json)
            warm_bytecode()
            baseline = (baseline_package(args.baseline_ref, svc.home / "baseline")
                        if args.baseline_ref else None)
            log.info("workload: %d row changes, %s -> %s, %s binlog bytes", wl.changes,
                     wl.gtid_before, wl.gtid_after, wl.binlog_bytes)
            for n in range(args.repeat):
                name = f"bench-{run_id}-{n + 1}"
                run: dict[str, Any] = {"repeat": n + 1}
                log.info("repeat %d/%d: capture", n + 1, args.repeat)
                # with a baseline, alternate which runs first: a load trend favours neither
                for what in ("capture", "capture_baseline")[::1 if n % 2 == 0 else -1]:
                    if what == "capture_baseline" and baseline is None:
                        continue
                    label = f"{name}-base" if what == "capture_baseline" else name
                    topics += [f"cdc-ingest.{label}.changelog", f"cdc-ingest.{label}.offsets"]
                    run[what] = run_capture(
                        svc, wl, label, (5500 if what == "capture_baseline" else 5400) + n,
                        workdir, args.capture_timeout,
                        env={"PYTHONPATH": str(baseline)} if what == "capture_baseline" else None)
                    log.info("  %s: %.1f s, %.0f rows/s", what, run[what]["seconds"],
                             run[what]["rows_per_s"])
                c_ref = c_reference(svc, wl, check=n == 0)
                if c_ref is not None:
                    run["c_reference"] = c_ref
                    log.info("  mariadb-binlog -vv: %.1f s, %.0f rows/s", c_ref["seconds"],
                             c_ref["rows_per_s"])
                run["library"] = library_decode(svc, wl, 6400 + n)
                log.info("  library decode: %.1f s, %.0f rows/s", run["library"]["seconds"],
                         run["library"]["rows_per_s"])
                if not args.no_decoder:
                    run["ours"] = our_decode(svc, wl, 7400 + n)
                    log.info("  our decoder: %.1f s, %.0f rows/s", run["ours"]["seconds"],
                             run["ours"]["rows_per_s"])
                if not args.no_reference:
                    name = f"bench-{run_id}-{n + 1}-py"
                    topics += [f"cdc-ingest.{name}.changelog", f"cdc-ingest.{name}.offsets"]
                    run["capture_python"] = run_capture(
                        svc, wl, name, 8400 + n, workdir, args.capture_timeout,
                        env={DECODER_ENV: "python"})
                    log.info("  capture, reference decoder: %.0f rows/s",
                             run["capture_python"]["rows_per_s"])
                    with _decoder_env("python"):
                        run["ours_python"] = our_decode(svc, wl, 9400 + n)
                    log.info("  reference decoder alone: %.0f rows/s",
                             run["ours_python"]["rows_per_s"])
                runs.append(run)
            big = None
            if args.big_tx_rows:
                log.info("writing one transaction of %d rows into %s.%s", args.big_tx_rows,
                         DB, BIG_TABLE)
                big_wl = make_big_transaction(svc, args.big_tx_rows)
                name = f"bench-{run_id}-big"
                topics += [f"cdc-ingest.{name}.changelog", f"cdc-ingest.{name}.offsets"]
                big = run_capture(svc, big_wl, name, 5300, workdir, args.capture_timeout,
                                  table=BIG_TABLE)
                log.info("  one %d-row transaction: %.0f rows/s, peak RSS %.0f MiB",
                         args.big_tx_rows, big["rows_per_s"], big["peak_rss_bytes"] / 2**20)
        finally:
            if args.kafka_bootstrap and not args.keep_topics:
                _delete_topics(svc.bootstrap, topics)
            started = list(svc.started)
    total = time.perf_counter() - wall
    measures = measures_of(runs, not args.no_decoder, args.baseline_ref)
    if big is not None:
        measures += [
            Measure(f"one {args.big_tx_rows:,}-row transaction: capture", "rows/s",
                    [big["rows_per_s"]], "library decode", 0,
                    "a single INSERT ... SELECT; split into Kafka transactions by max-rows"),
            Measure(f"one {args.big_tx_rows:,}-row transaction: peak RSS", "MiB",
                    [big["peak_rss_bytes"] / 2**20], digits=0,
                    note="VmHWM of the capture process"),
        ]
    ratio_of = ratios(measures)
    print(f"\ncapture benchmark: {wl.changes:,} row changes ({wl.inserted:,} inserts, "
          f"{wl.updated:,} updates, {wl.deleted:,} deletes), {args.repeat} repeat(s), "
          f"{machine_info()['nproc']} CPUs, {svc.server.label} {version}")
    print(table(measures, "vs library decode"))
    print(f"\ntotal wall time {total:.0f} s (workload written in "
          f"{wl.insert_s + wl.update_s + wl.delete_s:.0f} s)")
    write_json(args.out, {
        "benchmark": "capture",
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "server": {"name": svc.server.name, "label": svc.server.label, "version": version},
        "config": {
            "rows": args.rows, "repeats": args.repeat, "statement_rows": BATCH,
            "pipeline_parallelism": PARALLELISM, "poll_s": POLL_S,
            "capture_options": "defaults, heartbeat.interval 1s",
            "decoder": "compiled (reference: CDC_INGEST_DECODER=python)",
            "baseline_ref": args.baseline_ref,
            "partial_json": args.partial_json,
        },
        "machine": machine_info(mysql_server=version),
        "services": {"started": started, "mysql_port": svc.mysql_port,
                     "kafka_bootstrap": svc.bootstrap, "startup_s": services_s},
        "workload": {**asdict(wl), "changes": wl.changes},
        "results": {m.name: m.as_json(ratio_of[m.name]) for m in measures},
        "runs": runs,
        "big_transaction": big,
        "total_wall_s": total,
    })
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
