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
from cdc_ingest.formats.event_routing import EventAddress
from cdc_ingest.kafka import client_config
from cdc_ingest.mysql import connection_settings
from cdc_ingest.registry.avro_reader import AvroReader
from cdc_ingest.transform.functions import EvaluationError
from cdc_ingest.transform.rules import Rule
from cdc_ingest.verify.diff import TopicCheck, TopicResult
from cdc_ingest.verify.mysql import MySqlSide, RowConverter, TableShape
from cdc_ingest.verify.report import summary_line, topic_lines
from cdc_ingest.verify.topics import (
    canonical_key,
    columns_ever,
    known_tables,
    latest_values,
    schema_topic_pins,
)
from cdc_ingest.verify.values import dumps, parse

log = logging.getLogger(__name__)


class VerifyMismatch(CdcIngestError):
    """A sink topic does not hold what MySQL holds (or a table could not be checked)."""

    exit_code = exit_codes.VERIFY_DIFFERENT


def _expected_key(events: EventAddress | None, name: str, topic: str, key: bytes,
                  stamps: frozenset[bytes] = frozenset()) -> bytes:
    """The message key of a MySQL row whose canonical key JSON is ``key``, in the canonical
    form verify reads topic keys in (so `key.json.encoding` spellings compare equal)."""
    if events is None:
        return key
    db, _, table = name.partition(".")
    for target in events.targets(db, table):
        if target.topic == topic:
            return canonical_key(events.key(target, key, stamps))
    return key


def pinned_columns(defn: PipelineDef, kafka: dict[str, Any]
                   ) -> dict[tuple[str, str], list[str]]:
    """``schema.change.behavior: ignore``: the columns each table's rows are written with
    (the schema topic's ``pinned``); none otherwise."""
    if defn.pipeline.schema_change_behavior.value != "ignore":
        return {}
    return schema_topic_pins(kafka, defn.pipeline.schema_topic)


def _iso(row: dict[str, Any], stamps: frozenset[bytes]) -> dict[str, Any]:
    """A row with its timestamps in ISO-8601, as the events write them."""
    return {name: value.replace(" ", "T", 1) if isinstance(value, str) and name.encode()
            in stamps else value for name, value in row.items()}


def _timestamps(shape: TableShape) -> frozenset[bytes]:
    """The columns Flink CDC types TIMESTAMP or TIMESTAMP_LTZ (for ISO-8601 events)."""
    return frozenset(c.name.encode() for c in shape.columns
                     if c.data_type in ("datetime", "timestamp"))


ROWS_PER_BATCH = 5_000  # MySQL rows whose topic values are taken from the store at once


def _check_topic(
    defn: PipelineDef, mysql: MySqlSide, shapes: dict[str, TableShape], topic: str,
    tables: list[str], max_diffs: int,
) -> TopicResult:
    kafka = client_config(defn.sink.properties)
    events = event_address(defn)
    pinned = pinned_columns(defn, kafka)
    ever = columns_ever(kafka, defn.pipeline.schema_topic)
    latest = latest_values(kafka, topic, events=events is not None,
                           avro=avro_reader(defn, kafka, [shapes[name] for name in tables]))
    rules = {name: _rule(defn, name) for name in tables}
    soft = bool(tables) and all(r is not None and r.spec.soft_delete for r in rules.values())
    check = TopicCheck(topic, tuple(tables), latest, defn.sink.except_key, max_diffs, soft,
                       nulls_left_out=events is not None and events.ignores_nulls)
    try:
        boolean = defn.source.treat_tinyint1_as_boolean_enabled
        # One read view for all shards of a topic, so their union is one moment of MySQL.
        with mysql.snapshot():
            for name in tables:
                shape = shapes[name]
                if not shape.key:
                    check.problem(f"{name} has no primary key and no source.tables.key-columns")
                    continue
                try:
                    convert = RowConverter(shape, boolean)
                except SourceError as exc:
                    check.problem(str(exc))
                    continue
                check.columns_added(name, mysql.added_values(shape, boolean))
                rule = rules[name]
                columns = pinned.get((shape.db, shape.table))
                now = {c.name for c in shape.columns}
                gone = frozenset(columns or ()) - now
                dropped = ever.get((shape.db, shape.table), frozenset()) - now
                stamps = _timestamps(shape) if events is not None else frozenset()
                iso = events is not None and events.iso_values
                batch: list[Any] = []
                for values in mysql.rows(shape):
                    key, row = convert(values)
                    expected_key = _expected_key(events, name, topic, key, stamps)
                    if iso:
                        row = _iso(row, stamps)
                    if columns is not None:  # schema.change.behavior: ignore
                        row = {c: row[c] for c in columns if c in row}
                    if rule is None:
                        batch.append((expected_key, row, None, gone, dropped))
                    else:
                        try:
                            projected = transformed(rule, name, row)
                        except EvaluationError as exc:
                            check.problem(f"{name}: transform failed for key {key.decode()}: "
                                          f"{exc}")
                            break
                        if projected is not None:
                            batch.append((expected_key, *projected, rule.op_ts_columns, dropped))
                    if len(batch) >= ROWS_PER_BATCH:
                        check.rows(name, shape.key, batch)
                        batch = []
                check.rows(name, shape.key, batch)
        return check.finish()
    finally:
        check.close()  # the store's files, also when the check failed


def _gone_topics(defn: PipelineDef, tables: list[tuple[str, str]],
                 checked: dict[str, list[str]]) -> dict[str, list[str]]:
    """The topics of captured tables MySQL no longer has (dropped, or renamed away: the
    schema topic still names them) that no existing table is routed to: every key of those
    tables was tombstoned, so such a topic holds no live key."""
    kafka = client_config(defn.sink.properties)
    existing = set(tables)
    gone = [t for t in known_tables(kafka, defn.pipeline.schema_topic)
            if t not in existing and defn.source.captures(*t)]
    return {topic: [f"{name} (no longer in MySQL)" for name in names]
            for topic, names in topics_of(defn, gone).items() if topic not in checked}


def _check_gone(defn: PipelineDef, topic: str, tables: list[str], max_diffs: int
                ) -> TopicResult:
    """A topic of tables MySQL no longer has: each live key is extra."""
    kafka = client_config(defn.sink.properties)
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


def _rule(defn: PipelineDef, name: str) -> Rule | None:
    db, _, table = name.partition(".")
    found = defn.transform_for(db, table)
    return None if found is None else Rule(found.spec(defn.source.metadata_list))


def transformed(rule: Rule, name: str, row: dict[str, Any]
                ) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
    """A MySQL row as the table's transform writes it (None: the filter drops it), and
    the value it has once updated, when that differs (``__data_event_type__``)."""
    db, _, table = name.partition(".")
    raw = dumps(row)
    meta: dict[str, Any] = {"__namespace_name__": None, "__schema_name__": db,
                            "__table_name__": table, "__data_event_type__": "+I", "op_ts": 0}
    inserted, passed = rule.row(raw, meta)
    if not passed:
        return None
    ignored = rule.op_ts_columns
    first = {k: v for k, v in parse(inserted).items() if k not in ignored}
    if not rule.uses_event_type:
        return first, None
    meta["__data_event_type__"] = "+U"
    updated, _ = rule.row(raw, meta)
    second = {k: v for k, v in parse(updated).items() if k not in ignored}
    return first, (second if second != first else None)


def verify_pipeline(
    defn: PipelineDef, echo: Callable[[str], None], max_diffs: int = 10
) -> list[TopicResult]:
    """Check every sink topic, printing each as it is done; returns the results."""
    mysql = MySqlSide(connection_settings(defn.source), defn.source.connect_max_retries)
    try:
        tables = mysql.tables(defn.source.captures)
        shapes = {
            f"{db}.{t}": mysql.shape(db, t, defn.key_columns_for(db, t))
            for db, t in tables
        }
        results = []
        checked = topics_of(defn, tables)
        for topic, members in checked.items():
            result = _check_topic(defn, mysql, shapes, topic, members, max_diffs)
            for line in topic_lines(result):
                echo(line)
            results.append(result)
        for topic, members in _gone_topics(defn, tables, checked).items():
            result = _check_gone(defn, topic, members, max_diffs)
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
