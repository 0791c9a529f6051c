"""The walk of one record through the sink: which of our modules it crosses, in what order.

    python benchmarks/record_walk.py [--format avro|json|debezium] [--out FILE]
    PYTHONPATH=<an older checkout> python benchmarks/record_walk.py --old   # before 1153a32

One changelog record (an insert of a typed row) is written by the sink task's writer
(``write_partition``, exactly-once) while a profiler notes every call and return of a function
in ``cdc_ingest``; the sequence of modules is collapsed (a call inside the module already
running is no step, nor is a return to the caller). Reported: the modules crossed (distinct),
the steps (calls from one module of ours into another), and the returns: steps into a module
the walk had already entered before. Kafka and the
registry are answered in memory at their clients (``cdc_ingest.kafka``, the registry client's
``lookup``/``register``), below the sink, so the walk is the sink's own code, whatever tree
it runs on; the kafka/ and registry client modules are left out of the counts.

Not a timing: a count of the code a reader follows (issue 46).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from cdc_ingest.kafka import TransactionalProducer
from cdc_ingest.kafka.offsets import GroupOffsets
from cdc_ingest.model.schema_topic import encode, layout_key, layout_value
from cdc_ingest.registry.client import RegistryClient, RegistryConfig
from cdc_ingest.routing.routes import Router, RouteRule

LEFT_OUT = ("cdc_ingest.kafka", "cdc_ingest.registry.client", "cdc_ingest.errors")


def _modules(old: bool) -> dict[str, str]:
    if old:
        return {"writer": "cdc_ingest.sink.writer", "settings": "cdc_ingest.sink.settings",
                "columns": "cdc_ingest.sink.arrow_batches", "topics": "cdc_ingest.sink.topics"}
    return {"writer": "cdc_ingest.sink.task.writer", "settings": "cdc_ingest.sink.settings",
            "columns": "cdc_ingest.sink.task.columns", "topics": "cdc_ingest.sink.task.topics"}


COLUMNS = [{"name": "id", "type": "INT", "nullable": False, "default": None,
            "comment": None},
           {"name": "note", "type": "VARCHAR(20)", "nullable": True, "default": None,
            "comment": None}]


class _Msg(NamedTuple):
    key: bytes | None
    value: bytes | None


def _stub_io(schema_messages: list[_Msg]) -> None:
    """Kafka and the registry answered in memory, at their clients."""
    for name in ("init", "begin", "send_offsets", "commit", "abort", "close", "poll"):
        setattr(TransactionalProducer, name, lambda self, *a, **k: None)
    TransactionalProducer.send = lambda self, *a, **k: None  # type: ignore[method-assign]
    TransactionalProducer.in_transaction = property(lambda self: False)  # type: ignore[assignment,method-assign]
    GroupOffsets.committed = lambda self, topic, parts: {}  # type: ignore[method-assign,assignment]
    GroupOffsets.partitions = lambda self, topic: [0]  # type: ignore[method-assign,assignment]
    GroupOffsets.group_metadata = lambda self: None  # type: ignore[method-assign]
    GroupOffsets.close = lambda self: None  # type: ignore[method-assign]
    GroupOffsets.__init__ = lambda self, *a, **k: None  # type: ignore[method-assign]
    RegistryClient.lookup = lambda self, subject, schema: None  # type: ignore[method-assign,assignment]
    RegistryClient.register = lambda self, subject, schema: 1  # type: ignore[method-assign,assignment]
    RegistryClient.latest = lambda self, subject: None  # type: ignore[method-assign,assignment]
    RegistryClient.compatibility = lambda self, subject: "BACKWARD"  # type: ignore[method-assign,assignment]
    for name, module in list(sys.modules.items()):
        if name.startswith("cdc_ingest.") and hasattr(module, "read_topic"):
            module.read_topic = lambda *a, **k: iter(schema_messages)  # type: ignore[attr-defined]


def _settings(modules: dict[str, str], fmt: str, old: bool) -> Any:

    settings_mod = importlib.import_module(modules["settings"])
    common: dict[str, Any] = dict(
        kafka={"bootstrap.servers": "in-memory:9092"}, changelog_topic="cl", group_id="g",
        transactional_id_prefix="walk", guarantee="exactly-once",
        router=Router([RouteRule.compile("shop.t", "shop-t")]), with_headers=True,
        buffer_max_rows=0, buffer_interval_s=0.0, topic_partitions=None,
        topic_replication=None)
    avro = None
    if fmt == "avro":
        subjects = importlib.import_module("cdc_ingest.sink.avro_registry" if old
                                           else "cdc_ingest.registry.avro_subjects")
        config = RegistryConfig(("http://registry.invalid",))
        avro = subjects.AvroSettings({}, "schema", config, config)
    if fmt == "debezium":
        routing = importlib.import_module("cdc_ingest.change_events.address" if old
                                          else "cdc_ingest.formats.event_routing")
        events = routing.EventOptions(include_schema=True)
        if old:
            events = routing.EventOptions(include_schema=True, schema_topic="schema",
                                          kafka=(("bootstrap.servers", "x"),))
            return settings_mod.SinkSettings(**common, except_key=False, events=events)
        return settings_mod.SinkSettings(**common, format=events, schema_topic="schema")
    if old:
        return settings_mod.SinkSettings(**common, except_key=False, avro=avro)
    return settings_mod.SinkSettings(**common, format=settings_mod.UpsertFormat(avro=avro),
                                     schema_topic="schema")


def _prepared(fmt: str, old: bool) -> tuple[Any, Any, Any, str]:
    """The tree's writer and columns modules, its settings for ``fmt`` and the layout id of
    COLUMNS, with Kafka, the registry and the sink topics answered in memory."""
    modules = _modules(old)
    writer = importlib.import_module(modules["writer"])
    columns = importlib.import_module(modules["columns"])
    topics = importlib.import_module(modules["topics"])
    layout_id = importlib.import_module("cdc_ingest.capture.flinktypes" if old
                                        else "cdc_ingest.capture.typed_layout").layout_id
    typed = [dict(c) for c in COLUMNS]
    lid = layout_id("shop", "t", typed)
    _stub_io([_Msg(layout_key("shop", "t", lid),
                   encode(layout_value("shop", "t", lid, typed)))])
    topics.SinkTopics.ensure = lambda self, topic: None  # type: ignore[method-assign]
    topics.SinkTopics.limit = lambda self, topic: 1 << 20  # type: ignore[method-assign]
    return writer, columns, _settings(modules, fmt, old), lid


def walk(fmt: str, old: bool) -> dict[str, Any]:
    writer, columns, settings, lid = _prepared(fmt, old)
    value = orjson.dumps({"v": 1, "op": "+I", "db": "shop", "table": "t", "layout": lid,
                          "pk": {"id": 1}, "before": None, "after": {"id": 1, "note": "a"},
                          "ts_ms": 1000, "pos": "bin.000001:100"})
    row = columns.ChangelogRow(0, 0, b'{"id":1}', value)

    steps: list[str] = []  # the module of each call from another module of ours

    def ours(frame: Any) -> str:
        name = frame.f_globals.get("__name__", "") if frame is not None else ""
        return name if name.startswith("cdc_ingest") and not name.startswith(LEFT_OUT) else ""

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event != "call":
            return
        name = ours(frame)
        caller = frame.f_back
        while caller is not None and not ours(caller) and caller.f_globals.get(
                "__name__", "").startswith(LEFT_OUT):
            caller = caller.f_back  # through kafka/ or the registry client: not a step
        if name and name != ours(caller):
            steps.append(name)

    sys.setprofile(profile)
    try:
        writer.write_partition(settings, [row])
    finally:
        sys.setprofile(None)
    seen: set[str] = set()
    returns = 0
    for name in steps:
        if name in seen:
            returns += 1
        seen.add(name)
    return {"format": fmt, "tree": "before (8090cf7)" if old else "this checkout",
            "modules_crossed": len(seen), "steps": len(steps), "returns": returns,
            "modules": sorted(seen), "walk": steps}


def timed(fmt: str, old: bool, records: int) -> dict[str, Any]:
    """``records`` inserts through the same writer and in-memory Kafka, untraced: the CPU
    seconds of the sink's own per-record path (the walk above, repeated)."""
    writer, columns, settings, lid = _prepared(fmt, old)
    rows = [columns.ChangelogRow(0, i, b'{"id":%d}' % i, orjson.dumps(
        {"v": 1, "op": "+I", "db": "shop", "table": "t", "layout": lid, "pk": {"id": i},
         "before": None, "after": {"id": i, "note": "a%d" % i}, "ts_ms": 1000,
         "pos": "bin.000001:%d" % (100 + i)})) for i in range(records)]
    cpu = time.process_time()
    counters = writer.write_partition(settings, rows)
    cpu = time.process_time() - cpu
    rows_out = counters["rows_out"] if isinstance(counters, dict) else counters.rows_out
    assert rows_out == records, counters
    return {"format": fmt, "tree": "before (8090cf7)" if old else "this checkout",
            "records": records, "cpu_s": cpu, "records_per_cpu_s": records / cpu}


def pairs(fmt: str, records: int, old_tree: Path, count: int) -> dict[str, Any]:
    """``timed`` of this checkout and of ``old_tree``, each in a process of its own, in
    ``count`` pairs (which goes first alternates); the ratio of each pair, and the median."""
    runs = []
    for n in range(count):
        pair = {}
        for old in (False, True)[::1 if n % 2 == 0 else -1]:
            cmd = [sys.executable, str(Path(__file__).resolve()), "--format", fmt,
                   "--time", str(records), *(["--old"] if old else [])]
            env = {**os.environ, **({"PYTHONPATH": str(old_tree)} if old else {})}
            out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env,
                                 cwd="/tmp", timeout=600).stdout
            pair["old" if old else "new"] = json.loads(out.strip().splitlines()[-1])
        runs.append(pair)
    ratios = sorted(p["new"]["records_per_cpu_s"] / p["old"]["records_per_cpu_s"]
                    for p in runs)
    return {"format": fmt, "records": records, "pairs": count,
            "ratio_median": ratios[len(ratios) // 2], "ratio_min": ratios[0],
            "ratio_max": ratios[-1], "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--format", choices=["avro", "json", "debezium"], default="avro")
    parser.add_argument("--old", action="store_true", help="the tree before 1153a32")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--time", type=int, default=0, metavar="N",
                        help="instead of the walk: N records' CPU seconds through the writer")
    parser.add_argument("--against", type=Path, metavar="OLD_TREE",
                        help="with --time: also time the checkout at OLD_TREE (before the "
                        "restructure), in --pairs pairs alternating, and report the ratios")
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args()
    if args.time and args.against:
        result = pairs(args.format, args.time, args.against, args.pairs)
        if args.out:
            args.out.write_text(json.dumps(result, indent=2) + "\n")
        print(json.dumps({k: v for k, v in result.items() if k != "runs"}))
        return
    if args.time:
        print(json.dumps(timed(args.format, args.old, args.time)))
        return
    result = walk(args.format, args.old)
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("walk", "modules")}))


if __name__ == "__main__":
    main()
