"""What transaction metadata (``sink.transaction-metadata.topic``, issue 35) costs end to end.

    python benchmarks/tx_metadata.py [--rows 20000] [--repeat 3] [--out FILE] [--smoke]

Starts MariaDB and Kafka (cdc_ingest.services, via _common), then:

1. **Throughput**, two workload shapes written one after the other into their own binlog
   ranges: ``small`` (``--rows`` MySQL transactions of one INSERT each, the worst case: one
   ``TX`` record per changelog partition per row) and ``multi`` (``--rows`` rows in
   transactions of 1 order + 9 lines, two tables, two sink topics). Per shape and repeat,
   the same exactly-once pipeline (capture + Spark sink as two processes, pipeline.py's
   machinery) without and with ``sink.transaction-metadata.topic``, the order alternating
   per repeat, timed from process start until every row is committed in the sink topics;
   with the metadata also until the last END is readable on the metadata topic.
2. **END latency**: a pipeline from the binlog head while MySQL transactions of 1 order + 9
   lines are committed at a paced rate; per transaction, commit -> its rows readable in the
   sink topics, and commit -> its END readable on the metadata topic; once with and once
   without the metadata (rows only).
3. **The driver's catch-up**: ``TxMetadataWriter.catch_up`` timed in this process over the
   parts topic of a metadata run with nothing new to read (its fixed cost per call), for this
   checkout's writer and for the first version's (commit 0adf411, loaded from git).
4. **Visibility skew** of a Kafka transaction across 3 partitions (tx_visibility.py) on
   the same broker.

Not by default (``--only``): ``capture`` (capture alone over each shape, with and without the
metadata's TX records) and ``idle`` (the broker's CPU while the metadata writer's reader is
assigned to an idle partition).

See benchmarks/README.md ("tx_metadata.py") for what each figure means.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import os
import secrets
import statistics
import subprocess
import sys
import threading
import time
import types
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import yaml
from _common import (
    REPO,
    Measure,
    add_service_args,
    log_tail,
    machine_info,
    mysql_conn,
    percentile,
    process_tree,
    read_committed,
    services_from_args,
    setup_logging,
    table,
    write_json,
)
from capture import CREATE_TABLE, DB, TABLE, gtid_reached, server_version
from capture import _row_sql as orders_row_sql
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from pipeline import (
    PARALLELISM,
    Progress,
    Stage,
    _consumer,
    _wait_for_log,
    batch_summary,
    cpu_delta,
    cpu_snapshot,
    delete_topics,
    first_log_time,
    peak_rss,
    pipeline_yaml,
    sink_batches,
)
from pymysql.constants import CLIENT
from tx_visibility import measure_visibility

from cdc_ingest.capture.positions import PositionStore
from cdc_ingest.kafka.consumer import PartitionReader
from cdc_ingest.model.transaction_metadata import ID_HEADER, TX_VALUE_START
from cdc_ingest.sink.driver.metadata_writer import TxMetadataWriter

log = logging.getLogger("benchmarks.tx_metadata")

ORDERS, LINES = "tx_orders", "tx_lines"
LAT_ORDERS, LAT_LINES = "lat_orders", "lat_lines"
LINES_PER_TX = 9  # multi shape: 1 order + 9 lines per MySQL transaction
TX_PER_TRIP = 200  # MySQL transactions sent per round trip (multi-statement) when writing
MAX_OFFSETS = 500_000  # pipeline.max-offsets-per-trigger, as pipeline.py
END_WAIT_S = 120.0  # after the rows: how long the last END may take
DRAIN_S = 60.0

LINES_DDL = """
CREATE TABLE {db}.{name} (
  id BIGINT PRIMARY KEY,
  order_id BIGINT NOT NULL,
  line_no INT,
  sku VARCHAR(32),
  qty INT,
  price DECIMAL(12,2),
  note VARCHAR(64)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4
"""


def _orders_ddl(name: str) -> str:
    return CREATE_TABLE.replace(f"{DB}.{TABLE}", f"{DB}.{name}")


def _lines_ddl(name: str) -> str:
    return LINES_DDL.format(db=DB, name=name)


def _line_sql(order: int, n: int, note: str) -> str:
    i = order * 10 + n
    return (f"({i},{order},{n},'SKU-{i % 9973}',{i % 7 + 1},{(i * 37) % 100000 / 100:.2f},"
            f"'{note}')")


def _order_sql(i: int, note: str | None = None) -> str:
    row = orders_row_sql(i)
    if note is None:
        return row
    # capture.py's row with its note (the 5th value) replaced: "'order <i> of customer ...'"
    head, _, rest = row.partition(",'order ")
    return f"{head},'{note}'{rest[rest.index(chr(39)) + 1:]}"


# -- workloads -------------------------------------------------------------------------------


@dataclass
class Shape:
    """One workload shape's binlog range."""

    name: str  # "small" | "multi"
    rows_per_tx: int
    tables: list[str]
    transactions: int = 0
    changes: int = 0
    per_table: dict[str, int] = field(default_factory=dict)
    gtid_before: str = ""
    gtid_after: str = ""
    write_s: float = 0.0
    gtids_in_range: int | None = None  # MariaDB sequence numbers the range spans


def _seq(gtid: str) -> int:
    return max((int(p.split("-")[2]) for p in gtid.split(",") if p.strip()), default=0)


def write_shape(svc: Any, name: str, rows: int, private: bool) -> Shape:
    """Recreate database ``bench`` and write the shape's MySQL transactions, several per round
    trip (multi-statement, autocommit: each small INSERT is its own transaction). On a
    ``private`` server (one this run started) InnoDB does not flush its log at every commit
    while writing (``innodb_flush_log_at_trx_commit=2``; the binlog is the same)."""
    if name == "small":
        shape = Shape(name, 1, [ORDERS])
    else:
        shape = Shape(name, 1 + LINES_PER_TX, [ORDERS, LINES])
    transactions = rows // shape.rows_per_tx
    conn = mysql_conn(svc.admin, client_flag=CLIENT.MULTI_STATEMENTS)
    try:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {DB}")
            cur.execute(f"CREATE DATABASE {DB} CHARACTER SET utf8mb4")
            cur.execute(_orders_ddl(ORDERS))
            cur.execute(_lines_ddl(LINES))
            shape.gtid_before = svc.server.gtid_state(cur)
            if private:
                cur.execute("SELECT @@GLOBAL.innodb_flush_log_at_trx_commit")
                flush = int(cur.fetchone()[0])
                cur.execute("SET GLOBAL innodb_flush_log_at_trx_commit = 2")
            began = time.perf_counter()
            for lo in range(1, transactions + 1, TX_PER_TRIP):
                hi = min(lo + TX_PER_TRIP, transactions + 1)
                if name == "small":
                    sql = "".join(f"INSERT INTO {DB}.{ORDERS} VALUES {_order_sql(i)};"
                                  for i in range(lo, hi))
                else:
                    sql = "".join(
                        f"START TRANSACTION;INSERT INTO {DB}.{ORDERS} VALUES {_order_sql(i)};"
                        f"INSERT INTO {DB}.{LINES} VALUES "
                        + ",".join(_line_sql(i, n, f"line {n} of {i}")
                                   for n in range(1, LINES_PER_TX + 1))
                        + ";COMMIT;"
                        for i in range(lo, hi))
                cur.execute(sql)
                while cur.nextset():
                    pass
            shape.write_s = time.perf_counter() - began
            if private:
                cur.execute(f"SET GLOBAL innodb_flush_log_at_trx_commit = {flush}")
            shape.gtid_after = svc.server.gtid_state(cur)
            for t in shape.tables:
                cur.execute(f"SELECT COUNT(*) FROM {DB}.{t}")
                shape.per_table[t] = int(cur.fetchone()[0])
    finally:
        conn.close()
    shape.transactions = transactions
    shape.changes = sum(shape.per_table.values())
    shape.gtids_in_range = _seq(shape.gtid_after) - _seq(shape.gtid_before)
    if shape.changes != transactions * shape.rows_per_tx or \
            shape.gtids_in_range != transactions:
        raise RuntimeError(f"workload {name}: {shape.per_table} rows, {shape.gtids_in_range} "
                           f"GTIDs; want {transactions} transactions of {shape.rows_per_tx}")
    log.info("workload %s: %d transactions, %d row changes, written in %.1f s (%s -> %s)",
             name, transactions, shape.changes, shape.write_s, shape.gtid_before,
             shape.gtid_after)
    return shape


# -- the pipeline ----------------------------------------------------------------------------


def names(name: str, tables: list[str]) -> dict[str, Any]:
    return {
        "changelog": f"cdc-ingest.{name}.changelog",
        "offsets": f"cdc-ingest.{name}.offsets",
        "parts": f"cdc-ingest.{name}.tx-parts",
        "metadata": f"bench.{name}.tx-metadata",
        "sinks": {t: f"bench.{name}.{t}" for t in tables},
    }


def config_yaml(svc: Any, name: str, server_id: int, workdir: Path, gtid: str,
                tables: list[str], metadata: bool, max_offsets: int | None,
                capture_interval: str | None = None) -> str:
    """pipeline.py's pipeline YAML with the shape's tables, a route per table, and the
    metadata topic when ``metadata``."""
    topics = names(name, tables)
    sink_options = {"sink.transaction-metadata.topic": topics["metadata"]} if metadata else None
    doc = yaml.safe_load(pipeline_yaml(
        svc, name, server_id, workdir / name, gtid=gtid, guarantee="exactly-once",
        sink_topic=topics["sinks"][tables[0]], trigger="0", max_offsets=max_offsets,
        capture_interval=capture_interval, table=tables[0], sink_options=sink_options,
    ))  # fmt: skip
    doc["source"]["tables"] = ",".join(f"{DB}.{t}" for t in tables)
    doc["route"] = [{"source-table": f"{DB}.{t}", "sink-table": topics["sinks"][t]}
                    for t in tables]
    return yaml.safe_dump(doc, sort_keys=False)


class TopicWatcher(threading.Thread):
    """Reads topics read_committed as their records become readable (polling message by
    message, fetch.wait.max.ms 20, as pipeline.py's latency consumer) and hands each to
    ``visit(msg, time.time())``. Waits for topics that do not exist yet."""

    def __init__(self, bootstrap: str, topics: list[str], visit: Any) -> None:
        super().__init__(daemon=True, name=f"watch-{topics[0]}")
        self.bootstrap, self.topics, self.visit = bootstrap, topics, visit
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.count = 0

    def run(self) -> None:
        consumer = _consumer(self.bootstrap, **{"fetch.wait.max.ms": 20,
                                                "fetch.error.backoff.ms": 5})
        try:
            assigned: set[str] = set()
            while not self.stop.is_set():
                if len(assigned) < len(self.topics):
                    for topic in set(self.topics) - assigned:
                        info = consumer.list_topics(topic, timeout=10).topics.get(topic)
                        if info is not None and info.error is None and info.partitions:
                            assigned.add(topic)
                            consumer.incremental_assign([
                                TopicPartition(topic, p, OFFSET_BEGINNING)
                                for p in info.partitions])
                    if not assigned:
                        time.sleep(0.1)
                        continue
                msg = consumer.poll(0.05)
                if msg is None or msg.error() is not None:
                    continue
                self.count += 1
                self.visit(msg, time.time())
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            self.error = exc
        finally:
            consumer.close()


@dataclass
class Ends:
    """BEGIN and END records seen on the metadata topic."""

    at: dict[str, float] = field(default_factory=dict)  # END id -> arrival (epoch s)
    begins: int = 0
    event_count: int = 0  # sum of the ENDs' event_count
    collections: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0

    def visit(self, msg: Any, now: float) -> None:
        value = orjson.loads(msg.value())
        if value["status"] == "BEGIN":
            self.begins += 1
            return
        if value["id"] in self.at:
            self.duplicates += 1
            return
        self.at[value["id"]] = now
        self.event_count += value["event_count"]
        for c in value["data_collections"]:
            name = c["data_collection"]
            self.collections[name] = self.collections.get(name, 0) + c["event_count"]


def batch_cycle(batches: list[dict[str, Any]]) -> dict[str, Any]:
    """From the sink's ``batch N: ...`` log lines: each batch's duration and the gaps between
    one batch's summary line and the next batch's start (planning, and anything the driver
    does between batches)."""
    ordered = sorted((b for b in batches if b["end"] is not None), key=lambda b: b["batch"])
    gaps = [nxt["end"] - nxt["seconds"] - cur["end"] for cur, nxt in itertools.pairwise(ordered)]
    return {
        "gap_between_batches_s": _dist(gaps, 1.0),
        "batch_seconds": _dist([b["seconds"] for b in ordered], 1.0),
    }


def _dist(values: list[float], scale: float) -> dict[str, Any]:
    ordered = sorted(v * scale for v in values)
    if not ordered:
        return {"count": 0}
    return {"count": len(ordered), "median": statistics.median(ordered),
            "p90": percentile(ordered, 90), "p99": percentile(ordered, 99),
            "max": ordered[-1], "min": ordered[0], "mean": sum(ordered) / len(ordered),
            "sum": sum(ordered)}


def sink_summary(bootstrap: str, topics: list[str]) -> dict[str, Any]:
    """Committed messages per sink topic, and how many carry a ``transaction.id`` header."""
    out: dict[str, Any] = {"messages": 0, "with_tx_header": 0, "per_topic": {}}
    for topic in topics:
        headed = 0

        def visit(msg: Any) -> None:
            nonlocal headed
            headed += any(k == ID_HEADER for k, _ in (msg.headers() or ()))

        n = read_committed(bootstrap, topic, visit)
        out["per_topic"][topic] = n
        out["messages"] += n
        out["with_tx_header"] += headed
    return out


def changelog_composition(bootstrap: str, topics: dict[str, Any]) -> dict[str, int]:
    """Committed records of the changelog (row records and TX records) and of the parts and
    metadata topics."""
    counts = {"rows": 0, "tx": 0}

    def visit(msg: Any) -> None:
        value = msg.value()
        counts["tx" if value is not None and value.startswith(TX_VALUE_START) else "rows"] += 1

    read_committed(bootstrap, topics["changelog"], visit)
    out = {"changelog_row_records": counts["rows"], "changelog_tx_records": counts["tx"]}
    for key in ("parts", "metadata"):
        info = AdminClient({"bootstrap.servers": bootstrap}).list_topics(
            topics[key], timeout=10).topics.get(topics[key])
        if info is not None and info.error is None:
            out[f"{key}_records"] = read_committed(bootstrap, topics[key], lambda m: None)
    return out


def run_e2e(svc: Any, shape: Shape, name: str, server_id: int, workdir: Path,
            metadata: bool, timeout_s: float, composition: bool) -> dict[str, Any]:
    """Capture + sink from process start until every row is committed in the sink topics
    (pipeline.py's Progress: the sink group's offsets at the changelog's end); with the
    metadata, also until the last END is readable."""
    topics = names(name, shape.tables)
    config = workdir / f"{name}.yaml"
    config.write_text(config_yaml(svc, name, server_id, workdir, shape.gtid_before,
                                  shape.tables, metadata, MAX_OFFSETS))
    ends = Ends()
    watcher = TopicWatcher(svc.bootstrap, [topics["metadata"]], ends.visit) if metadata else None
    base = cpu_snapshot([], svc)
    started_wall, started = time.time(), time.perf_counter()
    stages = [Stage.start(c, config, workdir) for c in ("capture", "sink")]
    if watcher is not None:
        watcher.start()
    progress = Progress(svc, name, topics["changelog"], name, shape.gtid_after, started)
    metadata_s = None
    try:
        seconds = progress.wait(stages, timeout_s)
        if watcher is not None:
            deadline = time.monotonic() + END_WAIT_S
            while len(ends.at) < shape.transactions:
                for stage in stages:
                    stage.check()
                if watcher.error is not None:
                    raise RuntimeError(f"metadata watcher: {watcher.error}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{name}: {len(ends.at)} of {shape.transactions} ENDs "
                                       f"after {END_WAIT_S:.0f} s:\n{log_tail(stages[1].log_file)}")
                time.sleep(0.05)
            metadata_s = max(ends.at.values()) - started_wall
        cpu = cpu_delta(base, cpu_snapshot(stages, svc))
        rss = peak_rss(stages)
    finally:
        progress.close()
        if watcher is not None:
            watcher.stop.set()
        codes = {s.command: s.stop() for s in stages}
    if watcher is not None:
        watcher.join(10)
    if any(codes.values()):
        raise RuntimeError(f"{name}: exit codes after SIGTERM {codes}")
    sink_log = stages[1].log_file
    batches_raw = sink_batches(sink_log)
    batches = batch_summary(batches_raw, started_wall)
    query_at = first_log_time(sink_log, "sink query started")
    summary = sink_summary(svc.bootstrap, list(topics["sinks"].values()))
    if summary["messages"] != shape.changes:
        raise RuntimeError(f"{name}: sink topics hold {summary}, want {shape.changes}")
    if metadata and (summary["with_tx_header"] != shape.changes or ends.begins != len(ends.at)
                     or ends.event_count != shape.changes or ends.duplicates):
        raise RuntimeError(f"{name}: {summary['with_tx_header']} messages with transaction "
                           f"headers, {ends.begins} BEGIN / {len(ends.at)} END, event counts "
                           f"{ends.event_count}, {ends.duplicates} duplicate ENDs; want "
                           f"{shape.changes} messages of {shape.transactions} transactions")
    run: dict[str, Any] = {
        "pipeline": name,
        "metadata": metadata,
        "seconds": seconds,
        "rows_per_s": shape.changes / seconds,
        "capture_done_s": progress.capture_done_s,
        "sink_query_started_s": query_at - started_wall if query_at else None,
        "metadata_done_s": metadata_s,
        "end_after_rows_s": metadata_s - seconds if metadata_s is not None else None,
        "changelog_ends": progress.ends,
        "sink_topics": summary,
        "sink_batches": batches,
        "cpu_s": cpu,
        "cpu_s_per_1k_rows": _cpu_total(cpu) / shape.changes * 1000,
        "rss_bytes_at_end": rss,
        "exit_codes": codes,
    }
    if metadata:
        run["ends"] = {"begins": ends.begins, "ends": len(ends.at),
                       "event_count": ends.event_count, "data_collections": ends.collections}
        run["ends"]["first_end_s"] = min(ends.at.values()) - started_wall
    if batches["batch_seconds"]:
        run["foreach_batch_row_changes_per_s"] = shape.changes / batches["batch_seconds"]
    if run["sink_query_started_s"] is not None and seconds > run["sink_query_started_s"]:
        run["rows_per_s_after_sink_start"] = shape.changes / (
            seconds - run["sink_query_started_s"])
    if composition:
        run["composition"] = changelog_composition(svc.bootstrap, topics)
        run["composition"]["changelog_records_per_row_change"] = (
            sum(v for k, v in run["composition"].items() if k.startswith("changelog_"))
            / shape.changes)
    log.info("  %s %s metadata: %.1f s, %.0f rows/s (capture done %s s, sink query at %s s, "
             "%d batches)%s", name, "with" if metadata else "without", seconds,
             run["rows_per_s"], _r(run["capture_done_s"]), _r(run["sink_query_started_s"]),
             batches["batches"],
             f"; last END after {metadata_s:.2f} s" if metadata_s is not None else "")
    return run


def _cpu_total(cpu: dict[str, float]) -> float:
    roles = ("capture", "sink driver (python)", "sink JVM", "sink python workers")
    return sum(cpu.get(r, 0.0) for r in roles)


def _r(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def run_capture_alone(svc: Any, shape: Shape, name: str, server_id: int, workdir: Path,
                      metadata: bool, timeout_s: float) -> dict[str, Any]:
    """``cdc-ingest capture`` alone over the shape's range, with or without the metadata's
    ``TX`` records: process start -> its committed position covers the last GTID (polled
    every 0.1 s), and its CPU."""
    topics = names(name, shape.tables)
    config = workdir / f"{name}.yaml"
    config.write_text(config_yaml(svc, name, server_id, workdir, shape.gtid_before,
                                  shape.tables, metadata, MAX_OFFSETS))
    store = PositionStore({"bootstrap.servers": svc.bootstrap}, topics["offsets"])
    base = cpu_snapshot([], svc)
    started_wall, started = time.time(), time.perf_counter()
    stage = Stage.start("capture", config, workdir)
    try:
        while True:
            stage.check()
            position = store.load()
            if position is not None and gtid_reached(position.gtid_set, shape.gtid_after):
                seconds = time.perf_counter() - started
                break
            if time.perf_counter() - started > timeout_s:
                raise RuntimeError(f"{name}: capture not done after {timeout_s:.0f} s:\n"
                                   f"{log_tail(stage.log_file)}")
            time.sleep(0.1)
        cpu = cpu_delta(base, cpu_snapshot([stage], svc))
    finally:
        code = stage.stop()
    if code:
        raise RuntimeError(f"{name}: capture exited with {code} after SIGTERM")
    up = first_log_time(stage.log_file, f"capture {name} starts at")
    run: dict[str, Any] = {
        "pipeline": name, "metadata": metadata, "seconds": seconds,
        "rows_per_s": shape.changes / seconds,
        "transactions_per_s": shape.transactions / seconds,
        "startup_s": up - started_wall if up else None,
        "capture_cpu_s": cpu.get("capture"),
        "capture_cpu_ms_per_transaction": (cpu.get("capture", 0.0) / shape.transactions
                                           * 1000),
        "cpu_s": cpu,
    }
    if run["startup_s"] is not None and seconds > run["startup_s"]:
        run["transactions_per_s_after_startup"] = shape.transactions / (
            seconds - run["startup_s"])
    log.info("  %s capture alone %s metadata: %.1f s, %.0f tx/s (%.0f after start-up), "
             "capture CPU %.1f s", name, "with" if metadata else "without", seconds,
             run["transactions_per_s"], run.get("transactions_per_s_after_startup") or 0,
             run["capture_cpu_s"] or 0)
    return run


# -- END latency -----------------------------------------------------------------------------


@dataclass
class PacedWriter:
    """MySQL transactions of 1 order + 9 lines at ``rate`` per second, each sent in one
    round trip; records when COMMIT returned and the transaction's GTID (``@@last_gtid``).
    Every row's note is ``lat <seq>``."""

    svc: Any
    rate: float
    commits: dict[int, float] = field(default_factory=dict)  # seq -> epoch s
    gtids: dict[int, str] = field(default_factory=dict)
    late_ticks: int = 0

    def run(self, seconds: float) -> None:
        conn = mysql_conn(self.svc.admin, client_flag=CLIENT.MULTI_STATEMENTS)
        interval = 1.0 / self.rate
        try:
            with conn.cursor() as cur:
                t0 = time.perf_counter()
                seq = 0
                while True:
                    due = t0 + seq * interval
                    wait = due - time.perf_counter()
                    if wait > 0:
                        time.sleep(wait)
                    elif wait < -interval:
                        self.late_ticks += 1
                    if time.perf_counter() - t0 >= seconds:
                        return
                    seq += 1
                    note = f"lat {seq}"
                    cur.execute(
                        f"START TRANSACTION;INSERT INTO {DB}.{LAT_ORDERS} VALUES "
                        f"{_order_sql(seq, note)};INSERT INTO {DB}.{LAT_LINES} VALUES "
                        + ",".join(_line_sql(seq, n, note) for n in range(1, LINES_PER_TX + 1))
                        + ";COMMIT")
                    while cur.nextset():
                        pass
                    self.commits[seq] = time.time()
                    cur.execute("SELECT @@last_gtid")
                    self.gtids[seq] = str(cur.fetchone()[0])
        finally:
            conn.close()


@dataclass
class RowsSeen:
    """Sink messages by the ``lat <seq>`` note of their row: count and last arrival."""

    count: dict[int, int] = field(default_factory=dict)
    last: dict[int, float] = field(default_factory=dict)
    first: dict[int, float] = field(default_factory=dict)

    def visit(self, msg: Any, now: float) -> None:
        value = msg.value()
        if value is None:
            return
        note = orjson.loads(value).get("note") or ""
        if not note.startswith("lat "):
            return
        seq = int(note[4:])
        self.count[seq] = self.count.get(seq, 0) + 1
        self.last[seq] = now
        self.first.setdefault(seq, now)


def _fresh_latency_tables(svc: Any, private: bool) -> str:
    """Recreate the paced run's tables; the GTID state after. On a ``private`` server InnoDB
    stops flushing its log at every commit (``innodb_flush_log_at_trx_commit=2``, for the
    rest of the run), so that the writer's commits keep the rate on a busy machine."""
    conn = mysql_conn(svc.admin)
    try:
        with conn.cursor() as cur:
            if private:
                cur.execute("SET GLOBAL innodb_flush_log_at_trx_commit = 2")
            cur.execute(f"CREATE DATABASE IF NOT EXISTS {DB} CHARACTER SET utf8mb4")
            for t in (LAT_ORDERS, LAT_LINES):
                cur.execute(f"DROP TABLE IF EXISTS {DB}.{t}")
            cur.execute(_orders_ddl(LAT_ORDERS))
            cur.execute(_lines_ddl(LAT_LINES))
            return svc.server.gtid_state(cur)
    finally:
        conn.close()


def run_paced(svc: Any, name: str, server_id: int, workdir: Path, metadata: bool,
              rate: float, seconds: float, warmup_s: float,
              private: bool = False) -> dict[str, Any]:
    """A pipeline from the binlog head (capture.transaction.max-interval 100ms, trigger 0,
    as pipeline.py's latency run); transactions written at ``rate`` for ``warmup_s`` (not
    counted) and ``seconds``; per transaction commit -> rows readable, commit -> END
    readable."""
    tables = [LAT_ORDERS, LAT_LINES]
    topics = names(name, tables)
    config = workdir / f"{name}.yaml"
    config.write_text(config_yaml(svc, name, server_id, workdir,
                                  _fresh_latency_tables(svc, private),
                                  tables, metadata, None, capture_interval="100ms"))
    stages = [Stage.start(c, config, workdir) for c in ("capture", "sink")]
    rows, ends = RowsSeen(), Ends()
    watchers = [TopicWatcher(svc.bootstrap, list(topics["sinks"].values()), rows.visit)]
    if metadata:
        watchers.append(TopicWatcher(svc.bootstrap, [topics["metadata"]], ends.visit))
    writer = PacedWriter(svc, rate)
    started_wall = time.time()
    try:
        _wait_for_log(stages[0], f"capture {name} starts at", 180.0)
        _wait_for_log(stages[1], "sink query started", 180.0)
        for w in watchers:
            w.start()
        marks: dict[str, Any] = {}

        def mark() -> None:
            marks["from"] = time.time()
            marks["cpu"] = cpu_snapshot(stages, svc)

        timer = threading.Timer(warmup_s, mark)
        timer.start()
        writer.run(warmup_s + seconds)
        timer.join()
        cpu = cpu_delta(marks["cpu"], cpu_snapshot(stages, svc))
        want = set(writer.commits)
        deadline = time.monotonic() + DRAIN_S
        while time.monotonic() < deadline:
            for stage in stages:
                stage.check()
            for w in watchers:
                if w.error is not None:
                    raise RuntimeError(f"{w.name}: {w.error}")
            rows_done = all(rows.count.get(s, 0) >= 1 + LINES_PER_TX for s in want)
            ends_done = not metadata or all(writer.gtids[s] in ends.at for s in want)
            if rows_done and ends_done:
                break
            time.sleep(0.1)
    finally:
        for w in watchers:
            w.stop.set()
        codes = {s.command: s.stop() for s in stages}
    for w in watchers:
        w.join(10)
    if any(codes.values()):
        raise RuntimeError(f"{name}: exit codes after SIGTERM {codes}")
    start = marks["from"]
    measured = sorted(s for s, at in writer.commits.items() if at >= start)
    missing = [s for s in measured if rows.count.get(s, 0) < 1 + LINES_PER_TX
               or (metadata and writer.gtids[s] not in ends.at)]
    if missing:
        raise RuntimeError(f"{name}: {len(missing)} of {len(measured)} measured transactions "
                           f"incomplete after {DRAIN_S:.0f} s (first {missing[:5]})")
    commit = writer.commits
    rows_ms = [(rows.last[s] - commit[s]) * 1000 for s in measured]
    first_ms = [(rows.first[s] - commit[s]) * 1000 for s in measured]
    out: dict[str, Any] = {
        "pipeline": name,
        "metadata": metadata,
        "rate_target_tx_per_s": rate,
        "rows_per_tx": 1 + LINES_PER_TX,
        "warmup_s": warmup_s,
        "transactions_written": len(commit),
        "transactions_measured": len(measured),
        "achieved_tx_per_s": len(measured) / (commit[measured[-1]] - start) if measured else None,
        "late_ticks": writer.late_ticks,
        "commit_to_rows_visible_ms": _dist(rows_ms, 1.0),
        "commit_to_first_row_visible_ms": _dist(first_ms, 1.0),
        "cpu_s_measured_phase": cpu,
        "exit_codes": codes,
    }
    if metadata:
        end_ms = [(ends.at[writer.gtids[s]] - commit[s]) * 1000 for s in measured]
        gap_ms = [(ends.at[writer.gtids[s]] - rows.last[s]) * 1000 for s in measured]
        out["commit_to_end_visible_ms"] = _dist(end_ms, 1.0)
        out["rows_visible_to_end_visible_ms"] = _dist(gap_ms, 1.0)
        out["ends"] = {"begins": ends.begins, "ends": len(ends.at),
                       "duplicates": ends.duplicates}
    batches_raw = [b for b in sink_batches(stages[1].log_file)
                   if b["end"] is not None and b["end"] >= start]
    out["sink_log"] = batch_cycle(batches_raw)
    summary = batch_summary(batches_raw, started_wall)
    out["sink_batches"] = {k: v for k, v in summary.items()
                           if k not in ("batch_seconds_each", "batch_rows_each")}
    log.info("  paced %s metadata at %.0f tx/s: rows p50 %.0f ms p99 %.0f ms%s; batches %d",
             "with" if metadata else "without", out["achieved_tx_per_s"] or 0,
             out["commit_to_rows_visible_ms"]["median"], out["commit_to_rows_visible_ms"]["p99"],
             (f"; END p50 {out['commit_to_end_visible_ms']['median']:.0f} ms p99 "
              f"{out['commit_to_end_visible_ms']['p99']:.0f} ms") if metadata else "",
             out["sink_log"]["batch_seconds"].get("count", 0))
    return out


# -- the driver's catch-up in this process ---------------------------------------------------

# issue 35's first commit: catch_up inside every batch, three consumers made per call
OLD_WRITER_REF = "0adf411"


def writer_class(ref: str | None) -> Any:
    """``TxMetadataWriter`` of this checkout (None), or of commit ``ref``'s writer module
    (cdc_ingest/sink/tx_metadata.py before the sink's restructure, 1153a32) loaded from git
    into a module of its own (it imports the package's kafka helpers of this checkout;
    ``first_offset`` and ``read_topic(settled=)``, which the old writer calls, are
    unchanged)."""
    if ref is None:
        return TxMetadataWriter
    for where in (f"{ref}:cdc_ingest/sink/driver/metadata_writer.py",
                  f"{ref}:cdc_ingest/sink/tx_metadata.py"):
        shown = subprocess.run(["git", "-C", str(REPO), "show", where], capture_output=True,
                               text=True, check=False, timeout=60)
        if shown.returncode == 0:
            break
    else:
        raise SystemExit(f"{ref} has no transaction metadata writer")
    source = shown.stdout
    module = types.ModuleType(f"tx_metadata_at_{ref}")
    exec(compile(source, where, "exec"), module.__dict__)
    return module.TxMetadataWriter


def catch_up_probe(bootstrap: str, parts_topic: str, calls: int,
                   ref: str | None = None) -> dict[str, Any]:
    """A ``TxMetadataWriter`` (this checkout's, or commit ``ref``'s) over a finished run's
    parts topic, with a metadata topic, state topic and transactional id of its own:
    ``start()`` (topics, ``init_transactions``, the state, and a catch-up over every part:
    all the run's BEGIN/END written), then ``calls`` catch-ups with nothing new to read: the
    fixed cost of one catch-up. The old writer ran it inside every micro-batch; the current
    one runs it in a thread of its own every 0.2 s and after each batch (that thread also runs
    here, so a timed call can wait for one of its catch-ups)."""
    cls = writer_class(ref)
    tag = secrets.token_hex(3)
    kafka: dict[str, Any] = {"bootstrap.servers": bootstrap}
    state, meta = f"bench.probe-{tag}.state", f"bench.probe-{tag}.tx-metadata"
    admin = AdminClient(kafka)
    admin.create_topics([NewTopic(state, 1, 1)])[state].result(30)
    if ref is not None:
        # The parts' format changed after the old writer (210f7d5), so it cannot add them up:
        # its state (its format: the next parts offset) puts it at the topic's end, the last
        # offset being a commit marker, as after a batch whose parts it has read.
        high = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-probe-{tag}"}
                        ).get_watermark_offsets(TopicPartition(parts_topic, 0), timeout=30)[1]
        sender = Producer(kafka)
        sender.produce(state, orjson.dumps({"v": 1, "next": high - 1, "open": {}}),
                       b'{"sink":"transaction-metadata"}')
        sender.flush(30)
    writer = cls(kafka, parts_topic, meta, state, f"bench.probe-{tag}")
    try:
        began = time.perf_counter()
        writer.start()
        start_s = time.perf_counter() - began
        full = writer.written
        empty = []
        for _ in range(calls):
            began = time.perf_counter()
            writer.catch_up()
            empty.append(time.perf_counter() - began)
    finally:
        writer.close()
        for future in admin.delete_topics([state, meta]).values():
            future.result(30)
    out = {
        "writer": (f"cdc_ingest/sink/driver/metadata_writer.py at {ref}" if ref
                   else "this checkout's"),
        "start_reads_every_part": ref is None,
        "parts_topic": parts_topic,
        "start_s": start_s,
        "transactions_written_at_start": full,
        "catch_up_nothing_new_s": _dist(empty, 1.0),
    }
    log.info("catch-up probe (%s): start %.2f s (%d transactions); catch_up with nothing new: "
             "median %.3f s, max %.3f s", out["writer"], start_s, full,
             out["catch_up_nothing_new_s"]["median"], out["catch_up_nothing_new_s"]["max"])
    return out


# -- an idle reader's cost to the broker -----------------------------------------------------


def idle_reader_cost(svc: Any, seconds: float) -> dict[str, Any]:
    """The broker's CPU while one partition of an idle topic is assigned to: nobody; the
    metadata writer's long-lived reader (``cdc_ingest.kafka.consumer.PartitionReader``, whose
    consumer has ``fetch.wait.max.ms`` 10: librdkafka fetches again as soon as an empty fetch
    returns, whether or not anyone polls); a consumer with librdkafka's default 500 ms. Each
    for ``seconds``, from the broker process's /proc CPU; only on a broker this run started."""
    pid = svc.pids.get("kafka")
    if not pid:
        return {"error": "no broker pid (a broker this run did not start)"}
    kafka: dict[str, Any] = {"bootstrap.servers": svc.bootstrap}
    topic = f"bench.idle-{secrets.token_hex(3)}"
    admin = AdminClient(kafka)
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    time.sleep(1.0)

    def broker_cpu() -> float:
        return sum(p.cpu_s for p in process_tree(pid))

    out: dict[str, Any] = {"seconds_each": seconds}
    cases: list[tuple[str, Any]] = [
        ("nobody", None),
        ("PartitionReader (fetch.wait.max.ms 10)", lambda: PartitionReader(kafka, topic, 0, 0)),
        ("consumer, fetch.wait.max.ms 500 (librdkafka default)",
         lambda: _consumer(svc.bootstrap)),
    ]
    try:
        for label, make in cases:
            reader = make() if make is not None else None
            if isinstance(reader, PartitionReader):
                reader.available(5.0)
            elif reader is not None:
                reader.assign([TopicPartition(topic, 0, 0)])
                reader.poll(1.0)
            time.sleep(1.0)
            c0, t0 = broker_cpu(), time.perf_counter()
            time.sleep(seconds)
            c1, t1 = broker_cpu(), time.perf_counter()
            out[label] = {"broker_cpu_pct_of_one_cpu": 100 * (c1 - c0) / (t1 - t0)}
            if reader is not None:
                reader.close()
    finally:
        admin.delete_topics([topic])[topic].result(30)
    log.info("idle reader, broker CPU: %s", {k: round(v["broker_cpu_pct_of_one_cpu"], 1)
                                             for k, v in out.items() if isinstance(v, dict)})
    return out


# -- driver ----------------------------------------------------------------------------------


def measures_of(runs: list[dict[str, Any]], shape: str) -> list[Measure]:
    def samples(metadata: bool, *path: str) -> list[float]:
        out = []
        for run in runs:
            value: Any = run.get(shape, {}).get("with" if metadata else "without")
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            if isinstance(value, (int, float)):
                out.append(float(value))
        return out

    base = f"{shape}: e2e rows/s, without metadata"
    out = [
        Measure(base, "rows/s", samples(False, "rows_per_s"), base, 0,
                "process start -> every row committed in the sink topics"),
        Measure(f"{shape}: e2e rows/s, with metadata", "rows/s",
                samples(True, "rows_per_s"), base, 0),
    ]
    base2 = f"{shape}: rows/s after sink query up, without"
    out += [
        Measure(base2, "rows/s", samples(False, "rows_per_s_after_sink_start"), base2, 0),
        Measure(f"{shape}: rows/s after sink query up, with", "rows/s",
                samples(True, "rows_per_s_after_sink_start"), base2, 0),
    ]
    base3 = f"{shape}: foreachBatch row changes/s, without"
    out += [
        Measure(base3, "rows/s", samples(False, "foreach_batch_row_changes_per_s"), base3, 0),
        Measure(f"{shape}: foreachBatch row changes/s, with", "rows/s",
                samples(True, "foreach_batch_row_changes_per_s"), base3, 0),
        Measure(f"{shape}: wall time, without", "s", samples(False, "seconds")),
        Measure(f"{shape}: wall time, with (rows)", "s", samples(True, "seconds")),
        Measure(f"{shape}: with: last END readable", "s", samples(True, "metadata_done_s"),
                note="process start -> the last END on the metadata topic"),
        Measure(f"{shape}: with: last END after last row", "s",
                samples(True, "end_after_rows_s"), digits=2),
        Measure(f"{shape}: capture done, without", "s", samples(False, "capture_done_s")),
        Measure(f"{shape}: capture done, with", "s", samples(True, "capture_done_s")),
        Measure(f"{shape}: sink query up, without", "s", samples(False, "sink_query_started_s")),
        Measure(f"{shape}: sink query up, with", "s", samples(True, "sink_query_started_s")),
        Measure(f"{shape}: batches, without", "count", samples(False, "sink_batches", "batches"),
                digits=0),
        Measure(f"{shape}: batches, with", "count", samples(True, "sink_batches", "batches"),
                digits=0),
        Measure(f"{shape}: with: first END readable", "s",
                samples(True, "ends", "first_end_s"), digits=2),
        Measure(f"{shape}: CPU s per 1k rows, without", "s",
                samples(False, "cpu_s_per_1k_rows"), digits=3),
        Measure(f"{shape}: CPU s per 1k rows, with", "s", samples(True, "cpu_s_per_1k_rows"),
                digits=3),
        Measure(f"{shape}: machine busy, without", "s",
                samples(False, "cpu_s", "machine busy")),
        Measure(f"{shape}: machine busy, with", "s", samples(True, "cpu_s", "machine busy")),
    ]
    return [m for m in out if m.samples]


def pair_ratios(runs: list[dict[str, Any]], shape: str, key: str) -> dict[str, Any]:
    """with / without per repeat (the back-to-back pair) and their median."""
    each = []
    for run in runs:
        pair = run.get(shape, {})
        a, b = pair.get("with", {}).get(key), pair.get("without", {}).get(key)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b:
            each.append(a / b)
    return {"per_repeat": each, "median": statistics.median(each) if each else None}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="Throughput and latency of the pipeline with and "
                                "without sink.transaction-metadata.topic; Kafka's visibility "
                                "skew of a transaction across partitions.")
    p.add_argument("--rows", type=int, default=20_000,
                   help="row changes per workload shape (small: as many 1-row transactions; "
                   "multi: rows/10 transactions of 10 rows) (default %(default)s)")
    p.add_argument("--repeat", type=int, default=3, help="repeats (default %(default)s)")
    p.add_argument("--out", type=Path, default=None,
                   help="JSON results (default benchmarks/results/tx-metadata.json; with "
                   "--smoke /tmp/tx-metadata-smoke.json)")
    p.add_argument("--smoke", action="store_true",
                   help="a quick check that everything runs: 2,000 rows, 1 repeat, short "
                   "latency and visibility runs")
    p.add_argument("--only", default="throughput,latency,probe,visibility",
                   help="comma list of throughput, capture (capture alone, with and without "
                   "the TX records), latency, probe, visibility, idle (the broker's CPU under "
                   "an idle reader) (default: all but capture and idle)")
    p.add_argument("--shapes", default="small,multi")
    p.add_argument("--latency-rate", type=float, default=200.0,
                   help="MySQL transactions/s (of 10 rows) of the END latency runs "
                   "(default %(default)s)")
    p.add_argument("--latency-seconds", type=float, default=20.0)
    p.add_argument("--latency-warmup", type=float, default=15.0,
                   help="seconds written at the rate before measuring (the first batches of "
                   "a cold sink are slow) (default %(default)s)")
    p.add_argument("--latency-first", choices=("with", "without"), default="with",
                   help="which paced run goes first (default %(default)s)")
    p.add_argument("--probe-calls", type=int, default=20,
                   help="catch_up calls of the in-process probe (default %(default)s)")
    p.add_argument("--idle-seconds", type=float, default=10.0,
                   help="seconds per case of the idle-reader measure (default %(default)s)")
    p.add_argument("--visibility-transactions", type=int, default=1000)
    p.add_argument("--visibility-rate", type=float, default=20.0,
                   help="transactions/s of the paced visibility run (default %(default)s)")
    p.add_argument("--timeout", type=float, default=900.0,
                   help="seconds one throughput measurement may take")
    p.add_argument("--note", default="", help="free text stored in the JSON (e.g. the load)")
    add_service_args(p, "keep the temp folder (server, capture and sink logs, YAMLs)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    setup_logging()
    if args.smoke:
        args.rows, args.repeat = min(args.rows, 2000), 1
        args.latency_seconds, args.latency_warmup, args.latency_rate = 5.0, 3.0, 50.0
        args.visibility_transactions, args.probe_calls = 100, 5
    out_file = args.out or (Path("/tmp/tx-metadata-smoke.json") if args.smoke else
                            REPO / "benchmarks" / "results" / "tx-metadata.json")
    only = {x.strip() for x in args.only.split(",") if x.strip()}
    shapes = [x.strip() for x in args.shapes.split(",") if x.strip()]
    if only - {"throughput", "capture", "latency", "probe", "visibility", "idle"} or \
            set(shapes) - {"small", "multi"}:
        raise SystemExit("--only / --shapes: unknown value")
    wall = time.perf_counter()
    machine = machine_info()
    run_id = secrets.token_hex(3)
    runs: list[dict[str, Any]] = [{"repeat": n + 1} for n in range(args.repeat)]
    workloads: dict[str, Any] = {}
    errors: list[str] = []
    pipelines: list[tuple[str, list[str]]] = []
    latency: dict[str, Any] = {}
    probe: dict[str, Any] | None = None
    visibility: dict[str, Any] | None = None
    extra: dict[str, Any] = {}
    last_parts: str | None = None
    load: list[tuple[str, list[float], str]] = []

    def attempt(holder: dict[str, Any], key: str, what: str, measure: Any) -> None:
        log.info("%s", what)
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=False).stdout.strip()
        load.append((what, [round(x, 2) for x in os.getloadavg()], head))
        try:
            holder[key] = measure()
        except Exception as exc:  # reported; the other measures still run
            log.exception("%s failed", what)
            errors.append(f"{what}: {exc}")
            holder[key] = {"error": str(exc)}

    with services_from_args(args) as svc:
        workdir = svc.home / "tx-metadata"
        workdir.mkdir()
        version = server_version(svc)
        try:
            for k, shape_name in enumerate(shapes if only & {"throughput", "capture"} else []):
                shape = write_shape(svc, shape_name, args.rows, args.mysql_port is None)
                workloads[shape_name] = asdict(shape)
                for n, run in enumerate(runs if "capture" in only else []):
                    alone = run.setdefault(f"{shape_name}_capture_alone", {})
                    order = [False, True] if n % 2 == 0 else [True, False]
                    alone["order"] = ["with" if m else "without" for m in order]
                    for metadata in order:
                        label = "with" if metadata else "without"
                        name = f"tm-{run_id}-{shape_name}-{n + 1}-c{'m' if metadata else 'p'}"
                        pipelines.append((name, shape.tables))
                        server_id = 5800 + 100 * k + 10 * n + int(metadata)
                        attempt(alone, label, f"{shape_name} repeat {n + 1}/{args.repeat}: "
                                f"capture alone, {label} metadata",
                                lambda s=shape, nm=name, sid=server_id, m=metadata:
                                run_capture_alone(svc, s, nm, sid, workdir, m, args.timeout))
                for n, run in enumerate(runs if "throughput" in only else []):
                    pair = run.setdefault(shape_name, {})
                    order = [False, True] if n % 2 == 0 else [True, False]
                    pair["order"] = ["with" if m else "without" for m in order]
                    for metadata in order:
                        label = "with" if metadata else "without"
                        name = f"tm-{run_id}-{shape_name}-{n + 1}-{'m' if metadata else 'p'}"
                        pipelines.append((name, shape.tables))
                        server_id = 5700 + 100 * k + 10 * n + int(metadata)
                        attempt(pair, label, f"{shape_name} repeat {n + 1}/{args.repeat}: "
                                f"{label} metadata",
                                lambda s=shape, nm=name, sid=server_id, m=metadata, first=n == 0:
                                run_e2e(svc, s, nm, sid, workdir, m, args.timeout, first))
                        if metadata and "error" not in pair[label] and last_parts is None:
                            last_parts = names(name, shape.tables)["parts"]  # the first shape's
                    pair["ratio_rows_per_s"] = (
                        pair["with"]["rows_per_s"] / pair["without"]["rows_per_s"]
                        if "rows_per_s" in pair.get("with", {}) and
                        "rows_per_s" in pair.get("without", {}) else None)
            if "latency" in only:
                order = (True, False) if args.latency_first == "with" else (False, True)
                for i, metadata in enumerate(order):
                    label = "with" if metadata else "without"
                    name = f"tm-{run_id}-lat-{'m' if metadata else 'p'}"
                    pipelines.append((name, [LAT_ORDERS, LAT_LINES]))
                    attempt(latency, label, f"END latency, {label} metadata, "
                            f"{args.latency_rate:.0f} tx/s for {args.latency_seconds:.0f} s",
                            lambda nm=name, m=metadata, i=i: run_paced(
                                svc, nm, 5690 + i, workdir, m, args.latency_rate,
                                args.latency_seconds, args.latency_warmup,
                                args.mysql_port is None))
                    if metadata and "error" not in latency[label] and last_parts is None:
                        last_parts = names(name, [])["parts"]
            if "probe" in only and last_parts is not None:
                probe = {}
                for key, ref in (("current", None), ("old", OLD_WRITER_REF)):
                    attempt(probe, key, f"catch-up probe ({ref or 'this checkout'}) over "
                            f"{last_parts}", lambda ref=ref: catch_up_probe(
                                svc.bootstrap, last_parts, args.probe_calls, ref))
            if "idle" in only:
                attempt(extra, "idle_reader", "the broker's CPU under an idle reader",
                        lambda: idle_reader_cost(svc, args.idle_seconds))
            if "visibility" in only:
                holder: dict[str, Any] = {}
                attempt(holder, "visibility", "visibility skew across 3 partitions",
                        lambda: measure_visibility(svc.bootstrap, args.visibility_transactions,
                                                   args.visibility_rate))
                visibility = holder["visibility"]
        finally:
            if args.kafka_bootstrap and not args.keep_topics:
                doomed = []
                for name, tables in pipelines:
                    t = names(name, tables)
                    doomed += [t["changelog"], t["offsets"], t["parts"], t["metadata"],
                               *t["sinks"].values()]
                delete_topics(svc.bootstrap, doomed)
            started = list(svc.started)
    total = time.perf_counter() - wall

    print(f"\ntransaction metadata benchmark: {args.rows:,} row changes per shape, "
          f"{args.repeat} repeat(s), {machine['nproc']} CPUs, parallelism {PARALLELISM}, "
          f"exactly-once both")
    results: dict[str, Any] = {}
    for shape_name in workloads:
        measures = measures_of(runs, shape_name)
        print(f"\n{shape_name} ({workloads[shape_name]['transactions']:,} MySQL transactions "
              f"of {workloads[shape_name]['rows_per_tx']} row(s))")
        print(table(measures, "with / without"))
        ratio = pair_ratios(runs, shape_name, "rows_per_s")
        after = pair_ratios(runs, shape_name, "rows_per_s_after_sink_start")
        print(f"per-repeat ratio with/without (e2e rows/s): "
              f"{' '.join(f'{r:.2f}' for r in ratio['per_repeat'])}")
        comp = runs[0].get(shape_name, {}).get("with", {}).get("composition")
        if comp:
            print(f"changelog records per row change, with metadata: "
                  f"{comp['changelog_records_per_row_change']:.2f} ({comp})")
        results[shape_name] = {
            "measures": {m.name: m.as_json(None) for m in measures},
            "ratio_e2e_rows_per_s": ratio,
            "ratio_rows_per_s_after_sink_start": after,
            "ratio_foreach_batch": pair_ratios(runs, shape_name,
                                               "foreach_batch_row_changes_per_s"),
            "composition_with": comp,
            "composition_without": runs[0].get(shape_name, {}).get("without", {}).get(
                "composition"),
        }
    for shape_name in workloads:
        key = f"{shape_name}_capture_alone"
        pairs = [r[key] for r in runs if key in r]
        if not pairs:
            continue
        summary: dict[str, Any] = {}
        for label in ("without", "with"):
            ok = [p[label] for p in pairs if "error" not in p.get(label, {"error": 1})]
            summary[label] = {
                "transactions_per_s": [r["transactions_per_s"] for r in ok],
                "transactions_per_s_after_startup": [
                    r.get("transactions_per_s_after_startup") for r in ok],
                "capture_cpu_ms_per_transaction": [r["capture_cpu_ms_per_transaction"]
                                                   for r in ok],
            }
        alone_ratio = [
            p["with"]["transactions_per_s"] / p["without"]["transactions_per_s"]
            for p in pairs if "transactions_per_s" in p.get("with", {})
            and "transactions_per_s" in p.get("without", {})]
        summary["ratio_with_without_per_repeat"] = alone_ratio
        results.setdefault(shape_name, {})["capture_alone"] = summary
        for label in ("without", "with"):
            v = summary[label]
            mid = statistics.median(v["transactions_per_s"]) if v["transactions_per_s"] else 0
            print(f"{shape_name}: capture alone {label} metadata: tx/s "
                  f"{' '.join(f'{x:,.0f}' for x in v['transactions_per_s'])} (median "
                  f"{mid:,.0f}), capture CPU ms per transaction "
                  f"{' '.join(f'{x:.2f}' for x in v['capture_cpu_ms_per_transaction'])}")
        print(f"{shape_name}: capture alone with/without per repeat: "
              f"{' '.join(f'{r:.2f}' for r in alone_ratio)}")
    for label, lat in latency.items():
        if "error" in lat:
            continue
        r = lat["commit_to_rows_visible_ms"]
        line = f"paced {label} metadata: rows visible p50 {r['median']:.0f} ms, p99 {r['p99']:.0f}"
        if "commit_to_end_visible_ms" in lat:
            e, g = lat["commit_to_end_visible_ms"], lat["rows_visible_to_end_visible_ms"]
            line += (f"; END visible p50 {e['median']:.0f} ms, p99 {e['p99']:.0f}; END after "
                     f"rows p50 {g['median']:.0f} ms, p99 {g['p99']:.0f}")
        c = lat["sink_log"]
        line += (f"; batches {c['batch_seconds'].get('count', 0)}, p50 "
                 f"{c['batch_seconds'].get('median', 0):.2f} s, gap between batches p50 "
                 f"{1000 * c['gap_between_batches_s'].get('median', 0):.0f} ms")
        print(line)
    for key, pr in (probe or {}).items():
        if "error" not in pr:
            print(f"catch-up probe, {key} writer ({pr['writer']}): start() with "
                  f"{pr['transactions_written_at_start']:,} transactions {pr['start_s']:.2f} s; "
                  f"catch_up with nothing new: median "
                  f"{1000 * pr['catch_up_nothing_new_s']['median']:.0f} ms, max "
                  f"{1000 * pr['catch_up_nothing_new_s']['max']:.0f} ms")
    if visibility and "error" not in visibility:
        for key in ("paced", "back_to_back", "one_consumer_back_to_back"):
            v = visibility[key]
            s = v["skew"]
            print(f"visibility {key} ({v['readers']}, {v['achieved_tx_per_s']:.0f} tx/s): skew "
                  f"median {s['median_ms']:.3f} ms, p99 {s['p99_ms']:.2f}, max "
                  f"{s['max_ms']:.2f}; >1 ms {100 * v['skew_over_1ms_fraction']:.1f}%, >10 ms "
                  f"{100 * v['skew_over_10ms_fraction']:.1f}%")
    idle = extra.get("idle_reader", {})
    for label, value in idle.items():
        if isinstance(value, dict):
            print(f"idle reader: {label}: broker CPU "
                  f"{value['broker_cpu_pct_of_one_cpu']:.1f}% of one CPU")
    print(f"\ntotal wall time {total:.0f} s")
    write_json(out_file, {
        "benchmark": "tx-metadata",
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "note": args.note,
        "config": {
            "rows": args.rows, "repeats": args.repeat, "smoke": args.smoke,
            "only": sorted(only), "shapes": shapes, "pipeline_parallelism": PARALLELISM,
            "guarantee": "exactly-once", "max_offsets_per_trigger": MAX_OFFSETS,
            "trigger_interval": "0", "lines_per_tx": LINES_PER_TX,
            "latency": {"rate_tx_per_s": args.latency_rate, "seconds": args.latency_seconds,
                        "first": args.latency_first,
                        "warmup_s": args.latency_warmup, "rows_per_tx": 1 + LINES_PER_TX,
                        "capture.transaction.max-interval": "100ms"},
            "visibility": {"transactions": args.visibility_transactions,
                           "rate": args.visibility_rate},
        },
        "machine": {**machine, "mysql_server": version, "loadavg_at_end": list(
            os.getloadavg()), "loadavg_and_git_head_per_step": load},
        "services": {"started": started, "mysql_port": svc.mysql_port,
                     "kafka_bootstrap": svc.bootstrap},
        "workloads": workloads,
        "results": results,
        "latency": latency,
        "catch_up_probe": probe,
        "visibility": visibility,
        **extra,
        "runs": runs,
        "errors": errors,
        "total_wall_s": total,
    })
    print(f"wrote {out_file}")
    for error in errors:
        print(f"FAILED: {error}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
