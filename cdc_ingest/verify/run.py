"""``cdc-ingest verify``: every sink topic against the MySQL tables routed to it."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import Any

from cdc_ingest import exit_codes
from cdc_ingest.config import PipelineDef
from cdc_ingest.config.sink import UpsertKafkaSinkDef
from cdc_ingest.config.sink_topics import event_address, topics_of
from cdc_ingest.errors import CdcIngestError, SourceError
from cdc_ingest.mysql import connection_settings
from cdc_ingest.registry.avro_reader import AvroReader
from cdc_ingest.transform.functions import EvaluationError
from cdc_ingest.verify.clock import PipelineClock
from cdc_ingest.verify.diff import Suspect, TopicCheck, TopicResult
from cdc_ingest.verify.expect import Expectation, Item, rule_for
from cdc_ingest.verify.fast import check_fast, fast_expectation
from cdc_ingest.verify.mysql import MySqlSide, TableShape
from cdc_ingest.verify.progress import Progress
from cdc_ingest.verify.report import summary_line, topic_lines
from cdc_ingest.verify.settle import Settling, settle
from cdc_ingest.verify.store import Values
from cdc_ingest.verify.topics import (
    columns_ever,
    known_tables,
    latest_values,
    schema_topic_pins,
)

log = logging.getLogger(__name__)


class VerifyMismatch(CdcIngestError):
    """A sink topic does not hold what MySQL holds (or a table could not be checked)."""

    exit_code = exit_codes.VERIFY_DIFFERENT


def pinned_columns(defn: PipelineDef, kafka: dict[str, Any]
                   ) -> dict[tuple[str, str], list[str]]:
    """``schema.change.behavior: ignore``: the columns each table's rows are written with
    (the schema topic's ``pinned``); none otherwise."""
    if defn.pipeline.schema_change_behavior.value != "ignore":
        return {}
    return schema_topic_pins(kafka, defn.pipeline.schema_topic)


ROWS_PER_BATCH = 5_000  # MySQL rows whose topic values are taken from the store at once
# how long verify waits for the pipeline to pass a binlog position, beyond heartbeat.interval
# (capture commits its position at least that often while it runs)
SETTLE_MARGIN_S = 15.0


Pace = Callable[[int], None]  # told each batch of MySQL rows read; sleeps to keep a rate


def _check_topic(
    defn: PipelineDef, mysql: MySqlSide, shapes: dict[str, TableShape], topic: str,
    tables: list[str], max_diffs: int, clock: PipelineClock | None = None,
    pace: Pace | None = None,
) -> TopicResult:
    kafka = defn.kafka_config()
    events = event_address(defn)
    pinned = pinned_columns(defn, kafka)
    ever = columns_ever(kafka, defn.pipeline.schema_topic)
    avro = avro_reader(defn, kafka, [shapes[name] for name in tables])
    rules = {name: rule_for(defn, name) for name in tables}
    soft = bool(tables) and all(r is not None and r.spec.soft_delete for r in rules.values())
    added: dict[str, dict[str, Any]] = {}
    expectations: dict[str, Expectation] = {}

    def new_check(values: Any) -> TopicCheck:
        made = TopicCheck(topic, tuple(tables), values, defn.sink.except_key, max_diffs, soft,
                          nulls_left_out=events is not None and events.ignores_nulls)
        for name, defaults in added.items():
            made.columns_added(name, defaults)
        return made

    boolean = defn.source.treat_tinyint1_as_boolean_enabled
    first = shapes[tables[0]] if tables else None
    fast = None if first is None else fast_expectation(
        kafka, topic, [shapes[name] for name in tables], events is None and avro is None,
        rules[first.name], pinned.get((first.db, first.table)),
        ever.get((first.db, first.table), frozenset()), boolean)
    if fast is not None:
        expectations[fast.shape.name] = fast
        added[fast.shape.name] = mysql.added_values(fast.shape, boolean)
        result, suspects, ends = check_fast(mysql, kafka, topic, fast, new_check, boolean,
                                            defn.sink.except_key, pace,
                                            getattr(pace, "rate", None))
    else:
        result, suspects, ends = _check_rows(
            mysql, shapes, topic, tables, new_check, latest_values(
                kafka, topic, events=events is not None, avro=avro),
            lambda shape: Expectation(shape, topic, events, boolean, rules[shape.name],
                                      pinned.get((shape.db, shape.table)),
                                      ever.get((shape.db, shape.table), frozenset())),
            expectations, added, boolean, pace)
    if clock is None or result.ok or result.problems:
        return result
    return settle(result, suspects, Settling(
        clock, mysql, kafka, topic, expectations, new_check, events is not None, avro, ends,
        defn.source.heartbeat_interval.total_seconds() + SETTLE_MARGIN_S))


def _check_rows(
    mysql: MySqlSide, shapes: dict[str, TableShape], topic: str, tables: list[str],
    new_check: Callable[[Any], TopicCheck], latest: Values | None,
    expectation: Callable[[TableShape], Expectation], expectations: dict[str, Expectation],
    added: dict[str, dict[str, Any]], boolean: bool, pace: Pace | None,
) -> tuple[TopicResult, dict[bytes, Suspect] | None, dict[int, int]]:
    """The ordinary path: every row of the topic's tables against the store, row by row."""
    check = new_check(latest)
    try:
        # One read view for all shards of a topic, so their union is one moment of MySQL.
        with mysql.snapshot():
            for name in tables:
                shape = shapes[name]
                if not shape.key:
                    check.problem(f"{name} has no primary key and no source.tables.key-columns")
                    continue
                try:
                    expect = expectations[name] = expectation(shape)
                except SourceError as exc:
                    check.problem(str(exc))
                    continue
                added[name] = mysql.added_values(shape, boolean)
                check.columns_added(name, added[name])
                batch: list[Item] = []
                for values in mysql.rows(shape):
                    try:
                        item = expect(values)
                    except EvaluationError as exc:
                        check.problem(f"{name}: transform failed for key "
                                      f"{expect.key_text(values)}: {exc}")
                        break
                    if item is not None:
                        batch.append(item)
                    if len(batch) >= ROWS_PER_BATCH:
                        check.rows(name, shape.key, batch)
                        if pace is not None:
                            pace(len(batch))
                        batch = []
                check.rows(name, shape.key, batch)
                if pace is not None:
                    pace(len(batch))
        result = check.finish()
    finally:
        check.close()  # the store's files, also when the check failed
    return result, check.suspects, latest.ends if latest is not None else {}


def _gone_topics(defn: PipelineDef, tables: list[tuple[str, str]],
                 checked: dict[str, list[str]]) -> dict[str, list[str]]:
    """The topics of captured tables MySQL no longer has (dropped, or renamed away: the
    schema topic still names them) that no existing table is routed to: every key of those
    tables was tombstoned, so such a topic holds no live key."""
    kafka = defn.kafka_config()
    existing = set(tables)
    gone = [t for t in known_tables(kafka, defn.pipeline.schema_topic)
            if t not in existing and defn.source.captures(*t)]
    return {topic: [f"{name} (no longer in MySQL)" for name in names]
            for topic, names in topics_of(defn, gone).items() if topic not in checked}


def _check_gone(defn: PipelineDef, topic: str, tables: list[str], max_diffs: int
                ) -> TopicResult:
    """A topic of tables MySQL no longer has: each live key is extra."""
    kafka = defn.kafka_config()
    events = event_address(defn)
    latest = latest_values(kafka, topic, events=events is not None,
                           avro=avro_reader(defn, kafka, []))
    return TopicCheck(topic, tuple(tables), latest, defn.sink.except_key, max_diffs, False,
                      nulls_left_out=events is not None and events.ignores_nulls).finish()


_BIG_DECIMAL = re.compile(r"^(?:decimal|numeric)\((\d+)")


def avro_reader(defn: PipelineDef, kafka: dict[str, Any], shapes: list[TableShape]
                ) -> AvroReader | None:
    """With ``avro-confluent`` keys or values: what reads them back into the JSON form."""
    sink = defn.sink
    if not isinstance(sink, UpsertKafkaSinkDef):
        return None
    key = sink.key_avro_confluent if sink.avro_key else None
    value = sink.value_avro_confluent if sink.avro_value else None
    if key is None and value is None:
        return None
    numbers = {}  # DECIMAL beyond 38 digits: Avro holds its text, MySQL's side a number
    for shape in shapes:
        numbers[(shape.db, shape.table)] = frozenset(
            c.name for c in shape.columns
            if (m := _BIG_DECIMAL.match(c.column_type)) and int(m.group(1)) > 38)
    return AvroReader(kafka, defn.pipeline.schema_topic,
                      key.registry_config() if key is not None else None,
                      value.registry_config() if value is not None else None,
                      [(s.db, s.table) for s in shapes], numbers)


def verify_pipeline(
    defn: PipelineDef, echo: Callable[[str], None], max_diffs: int = 10,
    pace: Pace | None = None, on_result: Callable[[TopicResult, float], None] | None = None,
) -> list[TopicResult]:
    """Check every sink topic, printing each as it is done; returns the results.
    ``pace``: told each batch of MySQL rows (a rate limit); ``on_result``: each topic's
    result as it is done, with the seconds it took."""
    mysql = MySqlSide(connection_settings(defn.source), defn.source.connect_max_retries)
    clock = PipelineClock(connection_settings(defn.source), defn.kafka_config(),
                          defn.pipeline.offsets_topic, defn.pipeline.changelog_topic,
                          defn.sink_group_id)
    try:
        tables = mysql.tables(defn.source.captures)
        shapes = {
            f"{db}.{t}": mysql.shape(db, t, defn.key_columns_for(db, t))
            for db, t in tables
        }
        results = []
        checked = topics_of(defn, tables)
        progress = Progress(pace)
        for topic, members in checked.items():
            began = time.monotonic()
            progress.topic(topic, sum(mysql.estimated_rows(shapes[m]) for m in members))
            result = _check_topic(defn, mysql, shapes, topic, members, max_diffs, clock,
                                  progress)
            for line in topic_lines(result):
                echo(line)
            results.append(result)
            if on_result is not None:
                on_result(result, time.monotonic() - began)
        for topic, members in _gone_topics(defn, tables, checked).items():
            began = time.monotonic()
            result = _check_gone(defn, topic, members, max_diffs)
            if on_result is not None:
                on_result(result, time.monotonic() - began)
            if result.ok:
                continue  # shown only when it holds live keys
            for line in topic_lines(result):
                echo(line)
            results.append(result)
        if not results:
            echo("verify: the pipeline captures no table that exists in MySQL; nothing to check")
            return []
        echo(summary_line(results))
        return results
    finally:
        clock.close()
        mysql.close()


def run_verify(defn: PipelineDef, echo: Callable[[str], None], max_diffs: int = 10,
               wait_s: float = 0.0) -> None:
    """``cdc-ingest verify``: raises :class:`VerifyMismatch` unless every topic is equal.
    ``wait_s``: check again (every 2 s, quietly) until equal or that many seconds passed,
    for changes still on their way; only the last check is shown."""
    deadline = time.monotonic() + wait_s
    while True:
        shown: list[str] = []
        results = verify_pipeline(defn, shown.append, max_diffs)
        if all(r.ok for r in results) or time.monotonic() >= deadline:
            break
        time.sleep(2.0)
    for line in shown:
        echo(line)
    bad = [r.topic for r in results if not r.ok]
    if bad:
        raise VerifyMismatch(
            f"{len(bad)} sink topic(s) differ from MySQL: {', '.join(bad[:5])}"
            f"{' ...' if len(bad) > 5 else ''}. If capture or the sink is behind "
            "(cdc-ingest status shows the lag), wait and verify again; otherwise the "
            "differences above are real."
        )
