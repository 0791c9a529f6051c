"""Snapshot throughput: a table's rows -> committed ``+I`` changelog records, against a plain scan.

    python benchmarks/snapshot.py [--rows 1000000] [--repeat 3] [--out FILE]

Inserts ``rows`` rows into ``bench.orders`` once (the table and rows of capture.py, inserts
only), then, once per repeat: runs ``cdc-ingest capture`` with ``scan.startup.mode: snapshot``
and ``source.scan.incremental.snapshot.parallelism`` 1, then 2 (a fresh pipeline each time,
until it exits on its own), checks the changelog holds exactly one committed ``+I`` per row,
and scans the same table with a plain PyMySQL ``SSCursor`` turning each row into JSON
(the baseline). Finally profiles one snapshot (cProfile) of a smaller copy of the table.
See benchmarks/README.md for what each figure means.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import pstats
import secrets
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pymysql
import yaml
from _common import (
    MARIADB,
    REPO,
    SERVERS,
    Measure,
    SchedTracker,
    Services,
    Stopwatch,
    add_service_args,
    baseline_package,
    cpu_seconds,
    log_line_time,
    log_tail,
    machine_info,
    mysql_conn,
    product_env,
    profile_threads,
    ratios,
    read_committed,
    services_from_args,
    setup_logging,
    system_cpu_seconds,
    table,
    wait_child,
    warm_bytecode,
    write_json,
)
from capture import BATCH, CREATE_TABLE, DB, TABLE, _delete_topics, _row_sql, server_version

log = logging.getLogger("benchmarks.snapshot")

PROFILE_TABLE = "orders_profile"
PROFILE_CHILD = "--profile-child"
PARTITIONS = 2  # pipeline.parallelism: changelog partitions, as in capture.py
FETCH = 1024  # rows per fetchmany of the baseline: the snapshot's default scan.snapshot.fetch.size
SERVER_IDS = 5  # a range of this many ids per run (5400-5404, 5410-5414, ...)
SAMPLE_S = 0.1  # processlist / VmHWM sampling interval while a snapshot runs

MARK_START = "snapshot of "  # "snapshot of 1 table(s) first, then the binlog from ..."
MARK_CHUNK = "snapshot chunk of "
MARK_DONE = "snapshot done"


# -- the table -------------------------------------------------------------------------------


@dataclasses.dataclass
class Table:
    rows: int
    insert_s: float = 0.0
    data_bytes: int | None = None  # information_schema DATA_LENGTH (InnoDB pages, estimate)
    profile_rows: int = 0


def make_table(svc: Services, rows: int, profile_rows: int) -> Table:
    """Recreate bench.orders with ``rows`` inserts (capture.py's rows, 5000 per statement and
    transaction) and bench.orders_profile with its first ``profile_rows`` rows."""
    tb = Table(rows)
    conn = mysql_conn(svc.admin)
    try:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {DB}")
            cur.execute(f"CREATE DATABASE {DB} CHARACTER SET utf8mb4")
            cur.execute(CREATE_TABLE)
            conn.autocommit(False)
            inserted = 0
            with Stopwatch() as sw:
                for lo in range(1, rows + 1, BATCH):
                    hi = min(lo + BATCH, rows + 1)
                    values = ",".join(_row_sql(i) for i in range(lo, hi))
                    inserted += cur.execute(f"INSERT INTO {DB}.{TABLE} VALUES {values}")
                    conn.commit()
            conn.autocommit(True)
            if inserted != rows:
                raise RuntimeError(f"inserted {inserted} rows, want {rows}")
            tb.insert_s = sw.seconds
            log.info("inserted %d rows in %.1f s", rows, tb.insert_s)
            if profile_rows:
                cur.execute(f"CREATE TABLE {DB}.{PROFILE_TABLE} LIKE {DB}.{TABLE}")
                tb.profile_rows = cur.execute(
                    f"INSERT INTO {DB}.{PROFILE_TABLE} SELECT * FROM {DB}.{TABLE} "
                    f"WHERE id <= {profile_rows}")
            cur.execute(f"ANALYZE TABLE {DB}.{TABLE}")
            cur.fetchall()
            cur.execute("SELECT DATA_LENGTH FROM information_schema.TABLES "
                        "WHERE TABLE_SCHEMA=%s AND TABLE_NAME=%s", (DB, TABLE))
            tb.data_bytes = int(cur.fetchone()[0] or 0) or None
    finally:
        conn.close()
    return tb


# -- a. the snapshot -------------------------------------------------------------------------


# --tls: what both the snapshot and the plain scan do about TLS. "preferred": each client's
# default (TLS when the server offers it, as MySQL 8+/9 does and Debian's MariaDB does not);
# "disabled": no TLS for either (the snapshot's jdbc.properties.sslMode DISABLED, PyMySQL's
# ssl_disabled), to tell TLS's share of a difference between the servers from the rest.
TLS = {"mode": "preferred"}


def pipeline_doc(svc: Services, name: str, table_name: str, first_id: int, state: Path,
                 parallelism: int | None) -> dict[str, Any]:
    source: dict[str, Any] = {
        "type": "mysql",
        "hostname": svc.cdc["host"],
        "port": svc.mysql_port,
        "username": svc.cdc["user"],
        "password": svc.cdc["password"],
        "tables": f"{DB}.{table_name}",
        "server-id": f"{first_id}-{first_id + SERVER_IDS - 1}",
        "scan.startup.mode": "snapshot",
    }
    if parallelism is not None:
        source["scan.incremental.snapshot.parallelism"] = parallelism
    if TLS["mode"] == "disabled":
        source["jdbc.properties.sslMode"] = "DISABLED"
    return {
        "source": source,
        "sink": {"type": "upsert-kafka", "properties.bootstrap.servers": svc.bootstrap},
        "pipeline": {"name": name, "parallelism": PARTITIONS, "state.dir": str(state)},
    }


def write_config(svc: Services, workdir: Path, name: str, table_name: str, first_id: int,
                 parallelism: int) -> tuple[Path, str | None]:
    """The pipeline YAML; without the parallelism option if the config rejects it (the
    second value then says why)."""
    from cdc_ingest.config import load_pipeline  # noqa: PLC0415 - the product's own check

    config = workdir / f"{name}.yaml"
    doc = pipeline_doc(svc, name, table_name, first_id, workdir / name, parallelism)
    config.write_text(yaml.safe_dump(doc, sort_keys=False))
    try:
        load_pipeline(config)
    except Exception as exc:  # noqa: BLE001 - reported, and measured without the option
        doc = pipeline_doc(svc, name, table_name, first_id, workdir / name, None)
        config.write_text(yaml.safe_dump(doc, sort_keys=False))
        return config, f"{type(exc).__name__}: {exc}"
    return config, None


class ServerSampler:
    """While a snapshot runs: the most connections of the capture user, and the most of its
    SELECTs on the table running at the same moment (from information_schema.PROCESSLIST)."""

    def __init__(self, svc: Services, table_name: str) -> None:
        self._conn = mysql_conn(svc.admin)
        self._user = svc.cdc["user"]
        self._like = f"SELECT %FROM `{DB}`.`{table_name}`%"
        self.connections = 0
        self.selects = 0
        self.samples = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ServerSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(10)
        self._conn.close()

    def _run(self) -> None:
        sql = ("SELECT COUNT(*), COALESCE(SUM(COMMAND = 'Query' AND INFO LIKE %s), 0) "
               "FROM information_schema.PROCESSLIST WHERE USER = %s")
        while not self._done.wait(SAMPLE_S):
            try:
                with self._conn.cursor() as cur:
                    cur.execute(sql, (self._like, self._user))
                    connections, selects = cur.fetchone()
            except pymysql.MySQLError:
                return
            self.samples += 1
            self.connections = max(self.connections, int(connections))
            self.selects = max(self.selects, int(selects))


def _server_cpu(svc: Services) -> dict[str, float | None]:
    return {name: cpu_seconds(pid) for name, pid in svc.pids.items() if pid}


def check_changelog(svc: Services, topic: str, table_name: str, rows: int) -> dict[str, Any]:
    """Exactly one committed ``+I`` per id 1..rows, nothing else."""
    seen = bytearray(rows + 1)
    wrong: list[str] = []
    ops: dict[str, int] = {}

    def visit(msg: Any) -> None:
        value = orjson.loads(msg.value())
        op = value.get("op")
        ops[op] = ops.get(op, 0) + 1
        ident = (value.get("pk") or {}).get("id")
        if (op != "+I" or value.get("table") != table_name or not isinstance(ident, int)
                or not 1 <= ident <= rows or seen[ident]):
            if len(wrong) < 5:
                wrong.append(f"{msg.key()!r} {msg.value()[:200]!r}")
            return
        seen[ident] = 1

    with Stopwatch() as sw:
        records = read_committed(svc.bootstrap, topic, visit)
    distinct = sum(seen)
    if records != rows or distinct != rows or wrong:
        raise RuntimeError(f"{topic}: {records} committed records, {distinct} distinct ids of "
                           f"{rows}, ops {ops}; unexpected: {wrong}")
    return {"records": records, "distinct_ids": distinct, "ops": ops, "read_s": sw.seconds}


def run_snapshot(svc: Services, rows: int, name: str, first_id: int, parallelism: int,
                 workdir: Path, timeout_s: float, code_dir: Path | None = None
                 ) -> dict[str, Any]:
    """Time ``cdc-ingest capture`` (snapshot mode) from process start to its exit; with
    ``code_dir``, the product code found there (an earlier commit's, --baseline-ref)."""
    config, rejected = write_config(svc, workdir, name, TABLE, first_id, parallelism)
    if rejected:
        log.warning("the config rejects scan.incremental.snapshot.parallelism %d (%s); "
                    "measured without it", parallelism, rejected)
    log_file = workdir / f"{name}.log"
    server_cpu_before = _server_cpu(svc)
    machine_before = system_cpu_seconds()
    with ServerSampler(svc, TABLE) as sampler, log_file.open("ab") as out:
        started_wall = time.time()
        started = time.perf_counter()
        env = product_env({"PYTHONPATH": str(code_dir)} if code_dir is not None else None)
        proc = subprocess.Popen(
            [sys.executable, "-m", "cdc_ingest.cli", "capture", "--config", str(config)],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=workdir,
            env=env,
        )
        sched = SchedTracker()
        ended = wait_child(proc, started, timeout_s, SAMPLE_S, sched.sample)
    server_cpu_after = _server_cpu(svc)
    machine_after = system_cpu_seconds()
    busy = machine_after[0] - machine_before[0]
    elapsed = machine_after[1] - machine_before[1]
    if ended.exit_code != 0:
        raise RuntimeError(f"capture exited with {ended.exit_code}:\n{log_tail(log_file)}")
    text = log_file.read_text(errors="replace")
    if MARK_DONE not in text:
        raise RuntimeError(f"capture exited 0 without '{MARK_DONE}':\n{log_tail(log_file)}")
    marks = {mark: log_line_time(log_file, mark) for mark in (MARK_START, MARK_CHUNK, MARK_DONE)}
    last_chunk = log_line_time(log_file, MARK_CHUNK, last=True)

    def since_start(mark: str) -> float | None:
        at = marks[mark]
        return at - started_wall if at is not None else None

    start_at, chunk_at, done_at = marks[MARK_START], marks[MARK_CHUNK], marks[MARK_DONE]
    phase_s = done_at - start_at if start_at is not None and done_at is not None else None
    chunks_s = done_at - chunk_at if chunk_at is not None and done_at is not None else None
    check = check_changelog(svc, f"cdc-ingest.{name}.changelog", TABLE, rows)
    return {
        "pipeline": name,
        "parallelism": parallelism,
        "parallelism_rejected": rejected,
        "server_id": f"{first_id}-{first_id + SERVER_IDS - 1}",
        "seconds": ended.seconds,
        "rows_per_s": rows / ended.seconds,
        "startup_s": since_start(MARK_START),
        "first_chunk_s": since_start(MARK_CHUNK),
        "done_s": since_start(MARK_DONE),
        "last_chunk_s": last_chunk - started_wall if last_chunk is not None else None,
        "snapshot_phase_s": phase_s,
        "rows_per_s_phase": rows / phase_s if phase_s else None,
        "first_chunk_to_done_s": chunks_s,
        "rows_per_s_chunks": rows / chunks_s if chunks_s else None,
        "chunks_logged": text.count(MARK_CHUNK),
        "cpu_s": ended.cpu_s,
        "peak_rss_bytes": ended.vmhwm_bytes,
        "maxrss_bytes": ended.maxrss_bytes,
        "server_cpu_s": {
            key: (server_cpu_after[key] or 0.0) - (before or 0.0)
            for key, before in server_cpu_before.items()
            if server_cpu_after.get(key) is not None
        },
        "machine_busy_pct": 100.0 * busy / elapsed if elapsed > 0 else None,
        "threads_seen": sched.threads,
        "threads_on_cpu_s": sched.on_cpu_s,
        "runqueue_wait_s": sched.runqueue_wait_s,
        "max_cdc_connections": sampler.connections,
        "max_concurrent_selects": sampler.selects,
        "processlist_samples": sampler.samples,
        "exit_code": ended.exit_code,
        "changelog": check,
    }


# -- b. the baseline -------------------------------------------------------------------------


def _str(value: Any) -> str:
    return str(value)


def plain_scan(svc: Services, rows: int) -> dict[str, Any]:
    """One connection, SSCursor ``SELECT *``, each row -> dict -> orjson (str() for the rest)."""
    count = 0
    out_bytes = 0
    with Stopwatch() as sw:
        conn = pymysql.connect(**svc.cdc, autocommit=True,
                               ssl_disabled=TLS["mode"] == "disabled")
        try:
            cur = conn.cursor(pymysql.cursors.SSCursor)
            cur.execute(f"SELECT * FROM {DB}.{TABLE}")
            names = [d[0] for d in cur.description]
            while batch := cur.fetchmany(FETCH):
                for row in batch:
                    out_bytes += len(orjson.dumps(dict(zip(names, row, strict=True)),
                                                  default=_str))
                    count += 1
            cur.close()
        finally:
            conn.close()
    if count != rows:
        raise RuntimeError(f"the plain scan read {count} rows, want {rows}")
    return {"seconds": sw.seconds, "rows": count, "rows_per_s": count / sw.seconds,
            "json_bytes": out_bytes}


# -- c. the profile --------------------------------------------------------------------------


def _where(func: tuple[str, int, str]) -> str:
    file, line, name = func
    if file == "~":
        return name  # a built-in: "<method 'produce' of 'cimpl.Producer' objects>"
    for marker in ("/site-packages/", "/lib/python3"):
        if marker in file:
            file = file.split(marker, 1)[1]
            break
    else:
        file = file.removeprefix(str(REPO) + "/")
    return f"{file}:{line}({name})"


# Threads blocked, not working: the main thread waiting for a chunk's future, a reader
# waiting for its next chunk.
WAITS = ("<method 'acquire' of '_thread.lock' objects>",
         "<method 'get' of '_queue.SimpleQueue' objects>",
         "<built-in method time.sleep>")
# Frames that only wrap the work (their cumulative time is the whole run or a whole thread).
WRAPPERS = ("click/", "threading.py:", "concurrent/futures/", "<frozen runpy>",
            "benchmarks/", "cdc_ingest/cli.py:", "<built-in method builtins.exec>",
            "<string>:")


def _is_wait(function: str) -> bool:
    return function in WAITS


def _is_wait_or_wrapper(function: str) -> bool:
    return function in WAITS or any(w in function for w in WRAPPERS)


def top_functions(stats: pstats.Stats, key: str, n: int,
                  skip: Any = None) -> list[dict[str, Any]]:
    """The ``n`` functions with the most ``key`` ("cumtime" or "tottime") seconds, leaving
    out those ``skip(function)`` is true for."""
    entries = []
    for func, (primitive, calls, tottime, cumtime, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        where = _where(func)
        if skip is not None and skip(where):
            continue
        entries.append({"function": where, "ncalls": calls, "primitive": primitive,
                        "tottime": round(tottime, 3), "cumtime": round(cumtime, 3)})
    entries.sort(key=lambda e: e[key], reverse=True)
    return entries[:n]


def profile_lines(entries: list[dict[str, Any]]) -> list[str]:
    lines = [f"{'ncalls':>10} {'tottime':>8} {'cumtime':>8}  function"]
    for e in entries:
        calls = (f"{e['ncalls']}/{e['primitive']}" if e["ncalls"] != e["primitive"]
                 else str(e["ncalls"]))
        lines.append(f"{calls:>10} {e['tottime']:8.2f} {e['cumtime']:8.2f}  {e['function']}")
    return lines


def run_profile(svc: Services, tb: Table, name: str, first_id: int, workdir: Path,
                timeout_s: float, top: int, prof_out: Path | None) -> dict[str, Any]:
    """One snapshot of bench.orders_profile (parallelism 1) under cProfile, every thread."""
    config, rejected = write_config(svc, workdir, name, PROFILE_TABLE, first_id, 1)
    log_file = workdir / f"{name}.log"
    prof = prof_out or workdir / f"{name}.prof"
    with log_file.open("ab") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), PROFILE_CHILD, str(prof),
             "capture", "--config", str(config)],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=workdir,
        )
        ended = wait_child(proc, started, timeout_s)
    if ended.exit_code != 0 or MARK_DONE not in log_file.read_text(errors="replace"):
        raise RuntimeError(f"profiled capture exited with {ended.exit_code}:\n"
                           f"{log_tail(log_file)}")
    check = check_changelog(svc, f"cdc-ingest.{name}.changelog", PROFILE_TABLE, tb.profile_rows)
    stats = pstats.Stats(str(prof))
    total = stats.total_tt  # type: ignore[attr-defined]
    threads = json.loads(Path(f"{prof}.threads.json").read_text())
    return {
        "pipeline": name,
        "rows": tb.profile_rows,
        "parallelism_rejected": rejected,
        "seconds": ended.seconds,
        "rows_per_s": tb.profile_rows / ended.seconds,
        "cpu_s": ended.cpu_s,
        "profiled_s": total,
        "threads": threads,
        "prof_file": str(prof) if prof_out else None,
        "changelog": check,
        "by_cumulative": top_functions(stats, "cumtime", top, _is_wait_or_wrapper),
        "by_own_time": top_functions(stats, "tottime", top, _is_wait),
        "waits": top_functions(stats, "tottime", len(WAITS),
                               lambda f: not _is_wait(f)),
        "raw_by_cumulative": top_functions(stats, "cumtime", top),
        "raw_by_own_time": top_functions(stats, "tottime", top),
    }


# -- driver ----------------------------------------------------------------------------------


def measures_of(runs: list[dict[str, Any]], baseline_label: str = "") -> list[Measure]:
    def samples(part: str, key: str, scale: float = 1.0) -> list[float]:
        return [r[part][key] / scale for r in runs if r.get(part, {}).get(key) is not None]

    base = "plain scan + orjson"
    out: list[Measure] = [
        Measure(base, "rows/s", samples("scan", "rows_per_s"), base, 0,
                "PyMySQL SSCursor SELECT *, dict + orjson.dumps per row"),
    ]
    for p in (1, 2):
        part = f"p{p}"
        out += [
            Measure(f"snapshot p{p} end-to-end", "rows/s", samples(part, "rows_per_s"), base, 0,
                    "rows / (process start -> exit)"),
            Measure(f"snapshot p{p} first chunk -> done", "rows/s",
                    samples(part, "rows_per_s_chunks"), base, 0,
                    "rows / ('snapshot chunk of' -> 'snapshot done' log lines)"),
        ]
    if any("b1" in r for r in runs):
        out += [
            Measure(f"snapshot p1 end-to-end, {baseline_label}", "rows/s",
                    samples("b1", "rows_per_s"), base, 0,
                    "the same, with the product code of --baseline-ref"),
        ]
    for p in (1, 2):
        part = f"p{p}"
        out += [
            Measure(f"snapshot p{p} wall time", "s", samples(part, "seconds"), digits=1),
            Measure(f"snapshot p{p} startup", "s", samples(part, "startup_s"), digits=2,
                    note="process start -> 'snapshot of N table(s) first' log line"),
            Measure(f"snapshot p{p} CPU", "s", samples(part, "cpu_s"), digits=1,
                    note="user+system CPU of the capture process, all threads"),
            Measure(f"snapshot p{p} peak RSS", "MiB", samples(part, "peak_rss_bytes", 2**20),
                    digits=0, note="VmHWM of the capture process"),
            Measure(f"snapshot p{p} runqueue wait", "s", samples(part, "runqueue_wait_s"),
                    digits=1, note="seconds its threads were runnable but had no CPU "
                    "(schedstat, summed over threads)"),
            Measure(f"snapshot p{p} MySQL connections", "max",
                    samples(part, "max_cdc_connections"), digits=0,
                    note="most connections of the capture user at once (processlist)"),
        ]
        for server in ("kafka", *(s.process for s in SERVERS.values())):
            values = [r[part]["server_cpu_s"][server] for r in runs
                      if server in r.get(part, {}).get("server_cpu_s", {})]
            if values:
                out.append(Measure(f"{server} CPU during p{p}", "s", values, digits=1))
        out.append(Measure(f"machine busy during p{p}", "%", samples(part, "machine_busy_pct"),
                           digits=0, note="all CPUs, everything running on the machine"))
    out.append(Measure("plain scan time", "s", samples("scan", "seconds"), digits=1))
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description="Snapshot throughput (table -> committed +I changelog records, "
        "parallelism 1 and 2) against a plain PyMySQL scan of the same table.",
    )
    p.add_argument("--rows", type=int, default=1_000_000,
                   help="rows inserted into bench.orders (default %(default)s)")
    p.add_argument("--repeat", type=int, default=3, help="measurements of each kind (default 3)")
    p.add_argument("--server", choices=sorted(SERVERS), default=MARIADB.name,
                   help="the source: a private MariaDB, or the project's local Oracle MySQL "
                   "9.7; with --mysql-port, the kind of that server (default %(default)s)")
    p.add_argument("--out", type=Path, default=None,
                   help="JSON results file (default benchmarks/results/snapshot.json, "
                   "snapshot-mysql.json with --server mysql)")
    p.add_argument("--baseline-ref", default=None,
                   help="also time parallelism 1 with the product code of this git commit "
                   "(e.g. the one before a snapshot protocol change), same table, same run")
    p.add_argument("--profile-rows", type=int, default=200_000,
                   help="rows of the profiled snapshot (a copy of the first rows; 0 skips "
                   "the profile; default %(default)s)")
    p.add_argument("--profile-top", type=int, default=25,
                   help="functions kept per profile ordering (default %(default)s)")
    p.add_argument("--profile-out", type=Path, default=None,
                   help="keep the cProfile stats file here (pstats / snakeviz)")
    add_service_args(p, "keep the temp folder of the services this run starts (logs, data)")
    p.add_argument("--snapshot-timeout", type=float, default=1800.0,
                   help="seconds one snapshot may take")
    p.add_argument("--tls", choices=("preferred", "disabled"), default="preferred",
                   help="TLS of both the snapshot and the plain scan: each client's default "
                   "(TLS when the server offers it), or none (default %(default)s)")
    return p


def _product_state() -> dict[str, Any]:
    """Uncommitted changes of the product code while this ran (others edit it meanwhile)."""
    out = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "cdc_ingest"],
                         capture_output=True, text=True, timeout=30, check=False)
    return {"uncommitted": out.stdout.split("\n") if out.stdout else []}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    TLS["mode"] = args.tls
    if args.out is None:
        args.out = REPO / "benchmarks" / "results" / (
            "snapshot.json" if args.server == MARIADB.name else f"snapshot-{args.server}.json")
    setup_logging()
    wall = time.perf_counter()
    run_id = secrets.token_hex(3)
    runs: list[dict[str, Any]] = []
    topics: list[str] = []
    profile: dict[str, Any] | None = None
    product_before = _product_state()
    profile_rows = min(args.profile_rows, args.rows)
    with services_from_args(args) as svc:
        workdir = svc.home / "snapshot"
        workdir.mkdir()
        try:
            services_s = time.perf_counter() - wall
            version = server_version(svc)
            log.info("writing %d rows into %s.%s", args.rows, DB, TABLE)
            tb = make_table(svc, args.rows, profile_rows)
            warm_bytecode()
            baseline = (baseline_package(args.baseline_ref, svc.home / "baseline")
                        if args.baseline_ref else None)
            for n in range(args.repeat):
                run: dict[str, Any] = {"repeat": n + 1}
                # Alternate the order so that a load trend favours no measure.
                order = ["p1", "p2", "scan"] if n % 2 == 0 else ["scan", "p2", "p1"]
                if baseline is not None:
                    order.insert(1, "b1")
                for what in order:
                    if what == "scan":
                        run["scan"] = plain_scan(svc, args.rows)
                        log.info("repeat %d/%d: plain scan %.1f s, %.0f rows/s", n + 1,
                                 args.repeat, run["scan"]["seconds"],
                                 run["scan"]["rows_per_s"])
                        continue
                    p = int(what[1])
                    name = f"snap-{run_id}-{n + 1}-{what}"
                    topics += [f"cdc-ingest.{name}.changelog", f"cdc-ingest.{name}.offsets"]
                    first_id = 5400 + 10 * (3 * n + (2 if what == "b1" else p - 1))
                    run[what] = run_snapshot(svc, args.rows, name, first_id, p, workdir,
                                             args.snapshot_timeout,
                                             baseline if what == "b1" else None)
                    r = run[what]
                    log.info("repeat %d/%d: snapshot %s %.1f s, %.0f rows/s, %s rows/s "
                             "first chunk -> done, %.0f MiB, %d MySQL connections at most",
                             n + 1, args.repeat, what, r["seconds"], r["rows_per_s"],
                             f"{r['rows_per_s_chunks']:.0f}" if r["rows_per_s_chunks"] else "-",
                             (r["peak_rss_bytes"] or 0) / 2**20, r["max_cdc_connections"])
                runs.append(run)
            if profile_rows:
                name = f"snap-{run_id}-profile"
                topics += [f"cdc-ingest.{name}.changelog", f"cdc-ingest.{name}.offsets"]
                log.info("profiling a snapshot of %d rows", profile_rows)
                profile = run_profile(svc, tb, name, 5390, workdir, args.snapshot_timeout,
                                      args.profile_top, args.profile_out)
        finally:
            if args.kafka_bootstrap and not args.keep_topics:
                _delete_topics(svc.bootstrap, topics)
            started = list(svc.started)
    total = time.perf_counter() - wall
    baseline_label = f"code of {args.baseline_ref}" if args.baseline_ref else ""
    measures = measures_of(runs, baseline_label)
    ratio_of = ratios(measures)
    rejected = sorted({r[p]["parallelism_rejected"] for r in runs for p in ("p1", "p2")
                       if r.get(p, {}).get("parallelism_rejected")})
    p1 = Measure("", "", [r["p1"]["rows_per_s"] for r in runs]).median
    p2 = Measure("", "", [r["p2"]["rows_per_s"] for r in runs]).median
    print(f"\nsnapshot benchmark: {args.rows:,} rows of {DB}.{TABLE}, {args.repeat} repeat(s), "
          f"{machine_info()['nproc']} CPUs")
    print(table(measures, "vs plain scan"))
    if p1 and p2:
        print(f"\nparallelism 2 vs 1 (end-to-end medians): {p2 / p1:.2f}x")
    b1 = Measure("", "", [r["b1"]["rows_per_s"] for r in runs if "b1" in r]).median
    if p1 and b1:
        print(f"parallelism 1, this code vs the {baseline_label} (end-to-end medians, "
              f"same run): {p1 / b1:.2f}x")
    if rejected:
        print(f"the config rejected scan.incremental.snapshot.parallelism: {rejected[0]}")
    if profile is not None:
        print(f"\nprofile: snapshot of {profile['rows']:,} rows under cProfile, "
              f"{profile['seconds']:.1f} s wall, {profile['cpu_s']:.1f} s CPU "
              f"(profiled, all threads: {profile['profiled_s']:.1f} s = "
              + " + ".join(f"{t['thread']} {t['seconds']:.1f}" for t in profile["threads"])
              + ")")
        print("waiting (blocked threads, left out below):")
        print("\n".join(profile_lines(profile["waits"])[1:]))
        print("top 15 by cumulative time (wrappers left out):")
        print("\n".join(profile_lines(profile["by_cumulative"][:15])))
        print("top 15 by own time:")
        print("\n".join(profile_lines(profile["by_own_time"][:15])))
    print(f"\ntotal wall time {total:.0f} s (table written in {tb.insert_s:.0f} s)")
    write_json(args.out, {
        "benchmark": "snapshot",
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "config": {
            "rows": args.rows, "repeats": args.repeat, "statement_rows": BATCH,
            "pipeline_parallelism": PARTITIONS, "snapshot_parallelism": [1, 2],
            "server_ids_per_run": SERVER_IDS, "baseline_fetchmany": FETCH,
            "capture_options": "defaults (scan.incremental.snapshot.chunk.size 8096, "
                               "scan.snapshot.fetch.size 1024)",
            "profile_rows": profile_rows,
            "tls": args.tls,
        },
        "machine": machine_info(mysql_server=version),
        "product_code": {"at_start": product_before, "at_end": _product_state()},
        "services": {"started": started, "mysql_port": svc.mysql_port,
                     "kafka_bootstrap": svc.bootstrap, "startup_s": services_s},
        "table": dataclasses.asdict(tb),
        "results": {m.name: m.as_json(ratio_of[m.name]) for m in measures},
        "parallelism_2_vs_1": p2 / p1 if p1 and p2 else None,
        "baseline_ref": args.baseline_ref,
        "p1_vs_baseline": p1 / b1 if p1 and b1 else None,
        "server": {"name": svc.server.name, "version": version},
        "runs": runs,
        "profile": profile,
        "total_wall_s": total,
    })
    print(f"wrote {args.out}")
    return 0


def profiled_child(argv: list[str]) -> int:
    """``snapshot.py --profile-child OUT capture --config F``: the capture command with every
    thread profiled (the snapshot reads chunks in worker threads), stats written to OUT."""
    from cdc_ingest.cli import main as cli_main  # noqa: PLC0415 - only the child needs it

    out, cli_args = Path(argv[0]), argv[1:]
    try:
        profile_threads(out, lambda: cli_main(cli_args))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == [PROFILE_CHILD]:
        sys.exit(profiled_child(sys.argv[2:]))
    sys.exit(main())
