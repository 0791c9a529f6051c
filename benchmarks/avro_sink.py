"""The upsert sink with ``avro-confluent`` keys and values against ``json``, in the same run.

    python benchmarks/avro_sink.py [--rows 200000] [--repeat 3] [--out FILE]

Writes capture.py's workload into ``bench.orders`` with one more column, a nullable TEXT
(null in a third of the rows), starts a Schema Registry (``cdc_ingest.services``, Apicurio)
next to MariaDB and Kafka, runs one untimed exactly-once json pipeline whose complete
changelog the sink-alone runs and the serde benchmark read, then per repeat, json and avro
alternately first:

1. end to end (pipeline.py's ``run_throughput``: capture + Spark sink, exactly-once), json
   and avro-confluent keys and values;
2. the Spark sink alone over that same changelog, json and avro;
3. the serde alone, in this process: ``SinkSerde.add`` against ``AvroSinkSerde.add`` over
   the changelog's records (the registry's ids and the schema topic's layouts cached, as
   in a running task).

Then a cProfile of ``AvroSinkSerde.add``. See benchmarks/README.md for what each figure is.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import logging
import pstats
import secrets
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import orjson
from _common import (
    REPO,
    Measure,
    add_service_args,
    machine_info,
    median,
    ratios,
    read_committed,
    services_from_args,
    setup_logging,
    table,
    write_json,
)
from capture import CREATE_TABLE, DB, TABLE, Workload, make_workload, server_version
from capture import _row_sql as orders_row_sql
from pipeline import (
    PARALLELISM,
    Settings,
    _topics,
    delete_topics,
    run_throughput,
    sink_batches,
)

from cdc_ingest.formats.avro_schemas import unframe
from cdc_ingest.formats.upsert_avro import AvroSinkSerde
from cdc_ingest.formats.upsert_json import SinkMessage, SinkSerde, UpsertOptions
from cdc_ingest.registry import RegistryConfig
from cdc_ingest.registry.avro_subjects import AvroSettings, Registries
from cdc_ingest.services import SchemaRegistry
from cdc_ingest.services._process import read_pid
from cdc_ingest.sink.task.layouts import SchemaTopicLayouts

log = logging.getLogger("benchmarks.avro_sink")

FORMATS = ("json", "avro")
MAX_OFFSETS = 500_000
TRIGGER = "0"
SINK_ROLES = ("sink driver (python)", "sink JVM", "sink python workers")
PROFILE_TOP = 20
CHECK_RECORDS = 2_000  # avro messages decoded back and compared with the json ones

# capture.py's bench.orders and one more column: a nullable TEXT, null in a third of the rows
CREATE_AVRO_TABLE = CREATE_TABLE.replace("  payload JSON\n", "  payload JSON,\n  remark TEXT\n")
assert CREATE_AVRO_TABLE != CREATE_TABLE


def row_sql(i: int) -> str:
    """capture.py's row ``i`` with its ``remark``: NULL for every third id, else a text of
    40 to 400 characters."""
    remark = "NULL" if i % 3 == 0 else "'" + f"remark {i}: handle with care. " * (1 + i % 13) + "'"
    return orders_row_sql(i)[:-1] + f",{remark})"


def avro_options(url: str) -> dict[str, Any]:
    """The sink options of the avro runs (Flink's names, as tests/integration/
    test_avro_sink.py writes them)."""
    return {"key.format": "avro-confluent", "value.format": "avro-confluent",
            "avro-confluent.url": url}


# -- 1. and 2.: the Spark sink -------------------------------------------------------------------


def spark_run(svc: Any, wl: Workload, name: str, server_id: int, workdir: Path, fmt: str,
              url: str, timeout_s: float, changelog_of: str | None = None) -> dict[str, Any]:
    """pipeline.py's ``run_throughput`` (exactly-once) with the sink's formats set, and the
    figures of this benchmark: CPU per 1k rows, bytes per message."""
    st = Settings(max_offsets=MAX_OFFSETS, trigger=TRIGGER, latency_trigger="0",
                  latency_capture_interval="100ms", latency_rate=0.0, latency_seconds=0.0,
                  latency_warmup_s=0.0, latency_rows_per_tx=0)
    run = run_throughput(
        svc, wl, name, server_id, workdir, st, "exactly-once", timeout_s,
        changelog_of=changelog_of, sink_options=avro_options(url) if fmt == "avro" else {},
        pipeline_options=({"schema.topic": f"cdc-ingest.{changelog_of}.schema"}
                          if changelog_of else None))
    run.pop("timeline", None)
    cpu = run["cpu_s"]
    sink_cpu = sum(cpu.get(role, 0.0) for role in SINK_ROLES)
    total = sink_cpu + cpu.get("capture", 0.0)
    batches = sink_batches(workdir / f"{name}.sink.log")
    bytes_out = sum(b["bytes_out"] for b in batches)
    rows = wl.changes
    return {
        **run,
        "format": fmt,
        "rows": rows,
        "cpu_total_s": total,
        "cpu_s_per_1k_rows": total / (rows / 1000),
        "sink_cpu_s": sink_cpu,
        "sink_cpu_s_per_1k_rows": sink_cpu / (rows / 1000),
        "workers_cpu_s_per_1k_rows": cpu.get("sink python workers", 0.0) / (rows / 1000),
        "bytes_out": bytes_out,
        "bytes_per_message": bytes_out / rows,
        "foreach_batch_rows_per_s": run["sink_batches"]["foreach_batch_rows_per_s"],
        "machine_busy_s": cpu.get("machine busy"),
    }


# -- 3.: the serde alone -------------------------------------------------------------------------


def changelog_records(bootstrap: str, topic: str) -> list[tuple[bytes | None, bytes]]:
    """Every committed (key, value) of a changelog topic, partition by partition."""
    out: list[tuple[bytes | None, bytes]] = []
    read_committed(bootstrap, topic, lambda msg: out.append((msg.key(), msg.value())))
    return out


class SerdeBench:
    """``SinkSerde`` and ``AvroSinkSerde`` over the same changelog records, one fresh serde
    per timed pass (what a task builds), after one untimed pass of each that fills the
    worker-wide caches (the registry's schema ids, the schema topic's layouts)."""

    def __init__(self, records: list[tuple[bytes | None, bytes]], bootstrap: str,
                 schema_topic: str, url: str, topic: str) -> None:
        self.records = records
        self.topic = topic
        registry = RegistryConfig((url,))
        self.avro = AvroSettings(kafka={"bootstrap.servers": bootstrap},
                                 schema_topic=schema_topic, key=registry, value=registry)

    def serde(self, fmt: str) -> SinkSerde:
        def topics(db: str, table: str) -> tuple[str, ...]:
            return (self.topic,)
        if fmt == "avro":
            return AvroSinkSerde(topics, UpsertOptions(), (True, True),
                                 SchemaTopicLayouts(self.avro.kafka, self.avro.schema_topic),
                                 Registries(self.avro))
        return SinkSerde(topics, UpsertOptions())

    def messages(self, fmt: str, records: list[tuple[bytes | None, bytes]] | None = None,
                 ) -> list[SinkMessage]:
        serde, out = self.serde(fmt), list[SinkMessage]()
        for key, value in self.records if records is None else records:
            serde.add(out, key, value)
        return out

    def timed(self, fmt: str) -> dict[str, Any]:
        serde = self.serde(fmt)
        out: list[SinkMessage] = []
        add = serde.add
        cpu, began = time.process_time(), time.perf_counter()
        for key, value in self.records:
            add(out, key, value)
        seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
        n = len(self.records)
        nbytes = sum(len(m[1]) + len(m[2] or b"") for m in out)
        return {"format": fmt, "records": n, "messages": len(out), "seconds": seconds,
                "records_per_s": n / seconds, "cpu_s": cpu, "cpu_s_per_1k_rows": cpu / (n / 1000),
                "bytes_out": nbytes, "bytes_per_message": nbytes / len(out)}

    def check(self, n: int) -> dict[str, Any]:
        """The first ``n`` records' avro messages decoded back (the serde's own codecs, as
        verify reads them) equal the json messages: same topics, keys and rows, the same
        tombstones; one key and one value schema id."""
        sample = self.records[:n]
        json_out, avro_out = self.messages("json", sample), self.messages("avro", sample)
        serde = self.serde("avro")
        assert isinstance(serde, AvroSinkSerde)
        serde.messages(*sample[0])
        layout = next(iter(serde._layouts.values()))  # the codecs it used
        assert layout.key is not None and layout.value is not None
        ids: set[tuple[str, int]] = set()
        for (topic, key, value, *_), (atopic, akey, avalue, *_) in zip(
                json_out, avro_out, strict=True):
            key_id, key_payload = unframe(akey)
            ids.add(("key", key_id))
            same = topic == atopic and orjson.loads(key) == orjson.loads(
                layout.key.to_json(key_payload))
            if value is None or avalue is None:
                same = same and value is None and avalue is None
            else:
                value_id, payload = unframe(avalue)
                ids.add(("value", value_id))
                same = same and orjson.loads(value) == orjson.loads(layout.value.to_json(payload))
            if not same:
                raise RuntimeError(f"the avro message {akey!r} {avalue!r} does not read back "
                                   f"as the json one {key!r} {value!r}")
        return {"records": len(sample), "messages": len(avro_out), "schema_ids": sorted(ids)}


def profile_avro(bench: SerdeBench, n: int, out_file: Path | None) -> dict[str, Any]:
    """``AvroSinkSerde.add`` over the first ``n`` records under cProfile: the top functions
    by own time and by cumulative time."""
    serde, out = bench.serde("avro"), list[SinkMessage]()
    records = bench.records[:n]
    add = serde.add
    prof = cProfile.Profile()
    began = time.perf_counter()
    prof.enable()
    for key, value in records:
        add(out, key, value)
    prof.disable()
    seconds = time.perf_counter() - began
    stats = pstats.Stats(prof)
    if out_file is not None:
        stats.dump_stats(str(out_file))
    total = stats.total_tt  # type: ignore[attr-defined]
    rows = []
    for (file, line, func), (_cc, calls, own, cumulative, _) in \
            stats.stats.items():  # type: ignore[attr-defined]
        where = file.replace(str(REPO) + "/", "").split("site-packages/")[-1]
        rows.append({"function": f"{where}:{line}({func})", "calls": calls,
                     "own_s": round(own, 4), "cumulative_s": round(cumulative, 4),
                     "own_share": round(own / total, 4) if total else None})
    return {
        "records": len(records), "seconds_profiled": seconds, "profiled_total_s": total,
        "records_per_s_profiled": len(records) / seconds,
        "top_by_own": sorted(rows, key=lambda r: -r["own_s"])[:PROFILE_TOP],
        "top_by_cumulative": sorted(rows, key=lambda r: -r["cumulative_s"])[:PROFILE_TOP],
    }


# -- driver ---------------------------------------------------------------------------------------


LABELS = {"e2e": "end-to-end exactly-once", "sink": "sink alone", "serde": "serde alone"}


def measures_of(runs: list[dict[str, Any]], parts: list[str]) -> list[Measure]:
    def samples(part: str, fmt: str, key: str) -> list[float]:
        out = []
        for run in runs:
            value = run.get(part, {}).get(fmt, {}).get(key)
            if isinstance(value, (int, float)):
                out.append(value)
        return out

    out: list[Measure] = []

    def pair(part: str, label: str, unit: str, key: str, digits: int = 0,
             note: str = "") -> None:
        base = f"{LABELS[part]}, json: {label}"
        out.append(Measure(base, unit, samples(part, "json", key), base, digits, note))
        out.append(Measure(f"{LABELS[part]}, avro: {label}", unit, samples(part, "avro", key),
                           base, digits, note))

    for part in parts:
        if part == "serde":
            pair(part, "records/s", "records/s", "records_per_s",
                 note="SinkSerde.add / AvroSinkSerde.add over the changelog, in-process")
            pair(part, "CPU per 1k records", "s", "cpu_s_per_1k_rows", 4)
            pair(part, "bytes per message", "bytes", "bytes_per_message", 1,
                 "key + value (tombstones: the key)")
            continue
        pair(part, "rows/s", "rows/s", "rows_per_s",
             note="process start -> the sink group committed the whole changelog")
        pair(part, "rows/s after sink query up", "rows/s", "rows_per_s_after_sink_start",
             note="rows / (wall time - the 'sink query started' log line)")
        pair(part, "foreachBatch rows/s", "rows/s", "foreach_batch_rows_per_s",
             note="sum of batch rows / sum of batch durations (sink log)")
        pair(part, "wall time", "s", "seconds", 1)
        pair(part, "CPU per 1k rows", "s", "cpu_s_per_1k_rows", 4,
             "capture (e2e) + sink driver + Spark JVM + pyspark workers")
        pair(part, "sink CPU per 1k rows", "s", "sink_cpu_s_per_1k_rows", 4)
        pair(part, "python workers CPU per 1k rows", "s", "workers_cpu_s_per_1k_rows", 4,
             "where the serde runs (write_partition)")
        pair(part, "bytes per message", "bytes", "bytes_per_message", 1,
             "the sink's bytes out (key + value) per message")
        pair(part, "machine busy", "s", "machine_busy_s", 1,
             "CPU seconds of every process on the machine during the measure")
    return [m for m in out if m.samples]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description="The upsert sink with avro-confluent keys and values against json: end "
        "to end, the Spark sink alone and the serde alone, over the same changelog.")
    p.add_argument("--rows", type=int, default=200_000,
                   help="rows inserted; 20%% are then updated and 10%% deleted "
                   "(default %(default)s)")
    p.add_argument("--repeat", type=int, default=3, help="repeats (default %(default)s)")
    p.add_argument("--only", default="e2e,sink,serde",
                   help="comma-separated: e2e, sink, serde (default all)")
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "avro-sink.json",
                   help="JSON results file (default %(default)s)")
    p.add_argument("--registry-url", default=None,
                   help="use this Confluent-compatible registry instead of starting one")
    p.add_argument("--profile-records", type=int, default=100_000,
                   help="records of the cProfile of AvroSinkSerde.add (0: none)")
    p.add_argument("--profile-out", type=Path, default=None,
                   help="keep the cProfile stats (pstats format) in this file")
    p.add_argument("--timeout", type=float, default=1800.0,
                   help="seconds one Spark measurement may take")
    add_service_args(p, "keep the temp folder (server, capture and sink logs, pipeline YAMLs)")
    return p


def product_state() -> dict[str, Any]:
    """The product code measured: uncommitted changes under cdc_ingest/ (others may edit it
    while this runs) and a digest of its .py files' contents, taken at the start and end."""
    out = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "cdc_ingest"],
                         capture_output=True, text=True, timeout=30, check=False)
    digest = hashlib.sha256()
    for path in sorted((REPO / "cdc_ingest").rglob("*.py")):
        digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes())
    return {"uncommitted": [line for line in out.stdout.splitlines() if line.strip()],
            "sha256_of_py_files": digest.hexdigest()}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    setup_logging()
    parts = [p.strip() for p in args.only.split(",") if p.strip()]
    if not parts or set(parts) - set(LABELS):
        raise SystemExit(f"--only: choose from {','.join(LABELS)}")
    wall = time.perf_counter()
    machine = machine_info()
    product_before = product_state()
    run_id = secrets.token_hex(3)
    runs: list[dict[str, Any]] = [{"repeat": n + 1} for n in range(args.repeat)]
    errors: list[str] = []
    names: list[str] = []
    extra: dict[str, Any] = {}
    wl: Workload | None = None
    registry: SchemaRegistry | None = None
    with services_from_args(args) as svc:
        workdir = svc.home / "avro"
        workdir.mkdir()
        try:
            url = args.registry_url
            if url is None:
                registry = SchemaRegistry(svc.home / "registry")
                registry.start()
                url = registry.url
                svc.pids["registry"] = read_pid(registry.pid_file) or 0
                svc.started.append(f"registry Apicurio {registry.version} ({registry.home})")
            services_s = time.perf_counter() - wall
            version = server_version(svc)
            log.info("writing the workload: %d rows into %s.%s (with a nullable TEXT)",
                     args.rows, DB, TABLE)
            wl = make_workload(svc, args.rows, CREATE_AVRO_TABLE, row_sql)
            log.info("workload: %d row changes, %s -> %s", wl.changes, wl.gtid_before,
                     wl.gtid_after)
            # untimed: warms the broker, Spark's archive and the page cache, and writes the
            # changelog the sink-alone runs and the serde benchmark read
            warm = f"av-{run_id}-warm"
            names.append(warm)
            log.info("warm-up: end to end, json (not counted; its changelog is read by the "
                     "sink-alone runs and the serde benchmark)")
            extra["warm_up"] = spark_run(svc, wl, warm, 5900, workdir, "json", url,
                                         args.timeout)
            bench: SerdeBench | None = None
            if "serde" in parts:
                records = changelog_records(svc.bootstrap, _topics(warm)["changelog"])
                if len(records) != wl.changes:
                    raise RuntimeError(f"the changelog holds {len(records)} records, want "
                                       f"{wl.changes}")
                bench = SerdeBench(records, svc.bootstrap, f"cdc-ingest.{warm}.schema", url,
                                   f"bench.serde-{run_id}.orders")
                for fmt in FORMATS:  # fills the caches: layouts, schema ids
                    bench.messages(fmt, records[:1000])
                extra["serde_check"] = bench.check(CHECK_RECORDS)
                log.info("serde: %d records; avro read back equal to json over the first %d "
                         "(%s)", len(records), CHECK_RECORDS, extra["serde_check"]["schema_ids"])

            def attempt(run: dict[str, Any], part: str, fmt: str,
                        measure: Callable[[], dict[str, Any]]) -> None:
                log.info("repeat %d/%d: %s, %s", run["repeat"], args.repeat, LABELS[part], fmt)
                try:
                    result = run.setdefault(part, {})[fmt] = measure()
                    log.info("  %s %s: %.0f rows/s", LABELS[part], fmt,
                             result.get("rows_per_s") or result.get("records_per_s") or 0)
                except Exception as exc:  # recorded; the other measures still run
                    log.exception("%s, %s failed", LABELS[part], fmt)
                    errors.append(f"repeat {run['repeat']}: {LABELS[part]}, {fmt}: {exc}")
                    run.setdefault(part, {})[fmt] = {"error": str(exc)}

            for n, run in enumerate(runs):
                order = list(FORMATS) if n % 2 == 0 else list(reversed(FORMATS))
                run["order"] = order
                for part in parts:
                    for fmt in order:
                        if part == "serde":
                            assert bench is not None
                            attempt(run, part, fmt, partial(bench.timed, fmt))
                            continue
                        name = f"av-{run_id}-{n + 1}-{part}-{fmt}"
                        names.append(name)
                        server_id = 5910 + 10 * n + (2 if part == "sink" else 0) + (
                            fmt == "avro")
                        attempt(run, part, fmt, partial(
                            spark_run, svc, wl, name, server_id, workdir, fmt, url,
                            args.timeout, changelog_of=warm if part == "sink" else None))
            if bench is not None and args.profile_records:
                log.info("profiling AvroSinkSerde.add over %d records", args.profile_records)
                extra["profile"] = profile_avro(bench, args.profile_records, args.profile_out)
        finally:
            if registry is not None:
                registry.stop(wipe=not args.keep_home)
            if args.kafka_bootstrap and not args.keep_topics:
                delete_topics(svc.bootstrap, [t for n in names for k, t in _topics(n).items()
                                              if k != "group"])
            started = list(svc.started)
    total = time.perf_counter() - wall
    assert wl is not None
    measures = measures_of(runs, parts)
    ratio_of = ratios(measures)
    print(f"\navro benchmark: {wl.changes:,} row changes ({wl.inserted:,} inserts, "
          f"{wl.updated:,} updates, {wl.deleted:,} deletes), {args.repeat} repeat(s), "
          f"{machine['nproc']} CPUs; exactly-once, parallelism {PARALLELISM}, "
          f"max-offsets-per-trigger {MAX_OFFSETS}, trigger.interval {TRIGGER}")
    print(table(measures, "vs json"))
    profile = extra.get("profile")
    if profile:
        print(f"\ncProfile of AvroSinkSerde.add, {profile['records']:,} records "
              f"({profile['records_per_s_profiled']:,.0f} records/s under the profiler), "
              f"top by own time:")
        for row in profile["top_by_own"][:12]:
            print(f"  {row['own_share'] * 100:5.1f}%  {row['own_s']:7.3f} s  "
                  f"{row['calls']:>9,}  {row['function']}")
    print(f"\ntotal wall time {total:.0f} s")
    write_json(args.out, {
        "benchmark": "avro_sink",
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "config": {
            "rows": args.rows, "repeats": args.repeat, "only": parts,
            "table": CREATE_AVRO_TABLE.strip(),
            "pipeline_parallelism": PARALLELISM, "max_offsets_per_trigger": MAX_OFFSETS,
            "trigger_interval": TRIGGER, "guarantee": "exactly-once",
            "avro_sink_options": avro_options("<registry url>"),
            "sink": "local[*] (cdc-ingest sink), 2 changelog partitions -> 2 tasks per batch",
            "profile_records": args.profile_records,
        },
        "machine": {**machine, "mysql_server": version},
        "product_code": {"at_start": product_before, "at_end": product_state()},
        "services": {"started": started, "mysql_port": svc.mysql_port,
                     "kafka_bootstrap": svc.bootstrap, "registry_url": url,
                     "startup_s": services_s},
        "workload": {**asdict(wl), "changes": wl.changes},
        "results": {m.name: m.as_json(ratio_of[m.name]) for m in measures},
        "avro_vs_json": {
            f"{LABELS[p]}: {key}": _ratio(runs, p, key)
            for p in parts for key in (("records_per_s",) if p == "serde" else
                                       ("rows_per_s", "rows_per_s_after_sink_start",
                                        "foreach_batch_rows_per_s"))},
        "runs": runs,
        **extra,
        "errors": errors,
        "total_wall_s": total,
    })
    print(f"wrote {args.out}")
    for error in errors:
        print(f"FAILED: {error}")
    return 1 if errors else 0


def _ratio(runs: list[dict[str, Any]], part: str, key: str) -> dict[str, Any]:
    """avro / json per repeat (both measured back to back) and their median."""
    each = []
    for run in runs:
        pair = run.get(part, {})
        json_value = pair.get("json", {}).get(key)
        avro_value = pair.get("avro", {}).get(key)
        if json_value and avro_value:
            each.append(avro_value / json_value)
    return {"per_repeat": each, "median": median(each)}


if __name__ == "__main__":
    sys.exit(main())
