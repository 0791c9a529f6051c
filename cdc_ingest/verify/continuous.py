"""``cdc-ingest verify --continuous``: every sink topic verified again and again while the
pipeline runs, at a rate the user sets, with state a team can watch and archive.

Each pass is ``verify``'s (exact while writes go on: verify/settle.py), reading MySQL at most
``--rate`` rows/s. After each topic its state is kept three ways:

* a record in the pipeline's compacted verify topic (``<prefix>.verify``, key
  ``{"topic": T}``), which ``cdc-ingest status --tables`` shows;
* Prometheus gauges (``--metrics-port``): rows validated, in sync, missing, extra,
  differing, unconfirmed (pending recheck), last pass end and duration, per topic;
* the JSON report (``--report FILE``, written whole after each topic): every topic's state
  and the history of passes.

A real difference is a notification: a WARNING log line naming the topic, the counts and the
first keys. SIGTERM or Ctrl-C stops it (exit 0); ``--passes N`` stops after N passes, with
``verify``'s exit code of the last.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import orjson
from prometheus_client import Gauge

from cdc_ingest.config import PipelineDef
from cdc_ingest.kafka import TopicAdmin, TopicSpec, read_topic
from cdc_ingest.kafka.signals import send_one
from cdc_ingest.verify.diff import TopicResult
from cdc_ingest.verify.run import VerifyMismatch, verify_pipeline

log = logging.getLogger(__name__)

HISTORY = 100  # passes kept in the report

_STATE = Gauge("verifyTopicState", "verify --continuous, last pass per sink topic: rows "
               "validated, in sync, missing, extra, differing, unconfirmed (pending recheck)",
               ["topic", "kind"])
_PASS = Gauge("verifyLastPass", "verify --continuous, per sink topic: the last pass's end "
              "(unix seconds) and duration (seconds)", ["topic", "what"])


class Stopped(Exception):
    """SIGTERM or Ctrl-C: stop between two batches."""


@dataclass
class TopicState:
    """One sink topic's last pass, as kept in the verify topic and the report."""

    topic: str
    tables: list[str]
    rows_validated: int  # MySQL rows compared
    in_sync: int  # of them, equal in the topic
    missing: int
    extra: int
    differing: int
    conflicts: int
    unconfirmed: int  # pending recheck: changed faster than they could be confirmed
    problems: list[str]
    ok: bool
    pass_ended_ms: int
    pass_seconds: float
    passes: int  # passes over this topic so far (this run)

    @classmethod
    def of(cls, result: TopicResult, seconds: float, passes: int) -> TopicState:
        counts = result.counts
        off = counts["missing"] + counts["differing"] + len(result.unconfirmed)
        return cls(result.topic, list(result.tables), result.mysql_rows,
                   max(0, result.mysql_rows - off), counts["missing"], counts["extra"],
                   counts["differing"], counts["conflicts"], len(result.unconfirmed),
                   list(result.problems), result.ok, int(time.time() * 1000),
                   round(seconds, 3), passes)


def read_states(kafka: dict[str, Any], topic: str) -> dict[str, dict[str, Any]]:
    """The verify topic's latest state per sink topic ({} when it does not exist)."""
    if TopicAdmin(kafka).partitions(topic) is None:
        return {}
    states: dict[str, dict[str, Any]] = {}
    for msg in read_topic(kafka, topic):
        if msg.key is None:
            continue
        name = orjson.loads(msg.key).get("topic")
        if msg.value is None:
            states.pop(name, None)
        else:
            states[name] = orjson.loads(msg.value)
    return states


class Pacer:
    """At most ``rate`` rows/s over a pass; raises :class:`Stopped` once asked to stop."""

    def __init__(self, rate: float, stop: threading.Event) -> None:
        self.rate, self._stop = rate, stop
        self.restart()

    def restart(self) -> None:
        self._began, self._rows = time.monotonic(), 0

    def __call__(self, rows: int) -> None:
        self._rows += rows
        ahead = self._rows / self.rate - (time.monotonic() - self._began)
        if self._stop.wait(max(0.0, ahead)):
            raise Stopped


class Report:
    """The JSON report file, written whole (temporary file, then renamed)."""

    def __init__(self, path: Path | None, pipeline: str) -> None:
        self.path = path
        self.body: dict[str, Any] = {"pipeline": pipeline, "started_ms": _now_ms(),
                                     "topics": {}, "passes": []}

    def topic(self, state: TopicState) -> None:
        self.body["topics"][state.topic] = asdict(state)
        self._write()

    def finished(self, number: int, seconds: float, results: list[TopicResult]) -> None:
        self.body["passes"] = [*self.body["passes"], {
            "pass": number, "ended_ms": _now_ms(), "seconds": round(seconds, 3),
            "topics": len(results), "rows_validated": sum(r.mysql_rows for r in results),
            "differences": sum(sum(r.counts.values()) for r in results),
            "unconfirmed": sum(len(r.unconfirmed) for r in results),
            "ok": all(r.ok for r in results)}][-HISTORY:]
        self._write()

    def _write(self) -> None:
        if self.path is None:
            return
        part = self.path.with_name(self.path.name + ".part")
        part.write_text(json.dumps(self.body, indent=2) + "\n", encoding="utf-8")
        os.replace(part, self.path)


def _now_ms() -> int:
    return int(time.time() * 1000)


def _notify(result: TopicResult) -> None:
    """A real difference (or a table that could not be checked): a WARNING line."""
    counts = ", ".join(f"{c} {n}" for c, n in result.counts.items() if n)
    keys = [s.key for samples in result.samples.values() for s in samples][:5]
    if counts:
        log.warning("verify: topic %s differs from MySQL (%s); first keys: %s",
                    result.topic, counts, ", ".join(keys))
    for problem in result.problems:
        log.warning("verify: topic %s not verified: %s", result.topic, problem)


def run_continuous(defn: PipelineDef, echo: Callable[[str], None], rate: float,
                   pause_s: float, passes: int, report_path: Path | None,
                   max_diffs: int = 10) -> None:
    """Pass after pass until stopped (or ``passes`` done): see the module's docstring."""
    kafka = defn.kafka_config()
    TopicAdmin(kafka).ensure(TopicSpec(defn.verify_topic, 1,
                                       defn.sink.topic_replication_factor or -1,
                                       {"cleanup.policy": "compact"}))
    stop = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    pacer = Pacer(rate, stop)
    report = Report(report_path, defn.name)
    seen: dict[str, int] = {}

    def on_result(result: TopicResult, seconds: float) -> None:
        seen[result.topic] = seen.get(result.topic, 0) + 1
        state = TopicState.of(result, seconds, seen[result.topic])
        send_one(kafka, defn.verify_topic, orjson.dumps({"topic": result.topic}),
                 orjson.dumps(asdict(state)))
        for kind in ("rows_validated", "in_sync", "missing", "extra", "differing",
                     "unconfirmed"):
            _STATE.labels(result.topic, kind).set(getattr(state, kind))
        _PASS.labels(result.topic, "ended").set(state.pass_ended_ms / 1000)
        _PASS.labels(result.topic, "seconds").set(state.pass_seconds)
        report.topic(state)
        if not result.ok:
            _notify(result)

    number, results = 0, []
    echo(f"verify --continuous: at most {rate:g} MySQL rows/s, {pause_s:g} s between passes "
         f"(state in {defn.verify_topic}; SIGTERM or Ctrl-C stops)")
    while not stop.is_set() and (passes == 0 or number < passes):
        number += 1
        pacer.restart()
        began = time.monotonic()
        shown: list[str] = []
        try:
            results = verify_pipeline(defn, shown.append, max_diffs, pacer, on_result)
        except Stopped:
            break
        report.finished(number, time.monotonic() - began, results)
        echo(f"pass {number}: {shown[-1] if shown else 'nothing to check'}")
        if any(not r.ok for r in results):  # the differences, as verify shows them
            for line in shown[:-1]:
                echo(line)
        if passes == 0 or number < passes:
            stop.wait(pause_s)
    if passes and number >= passes and any(not r.ok for r in results):
        raise VerifyMismatch(f"the last pass ({number}) found differences; see above")
