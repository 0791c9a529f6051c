"""``cdc-ingest snapshot``: ask the pipeline's capture to snapshot tables again.

The request goes to the pipeline's signal topic (capture/signals.py); the running capture
takes it within a few seconds, or the next start does. Each table's keys are tombstoned in
its sink topics, then its rows are written again from a new snapshot, reconciled with the
binlog as any snapshot is.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Generator
from dataclasses import replace
from typing import Any

import orjson

from cdc_ingest import exit_codes
from cdc_ingest.capture.notifications import SIGNAL, TAKEN
from cdc_ingest.capture.signal_format import STOP_SNAPSHOT
from cdc_ingest.capture.signals import send_request
from cdc_ingest.capture.snapshot.keyorder import quote
from cdc_ingest.config import PipelineDef
from cdc_ingest.errors import CdcIngestError, ConfigError, ConfigProblem
from cdc_ingest.kafka import TopicAdmin, TopicSpec
from cdc_ingest.kafka.consumer import Message
from cdc_ingest.kafka.follow import follow_or_idle
from cdc_ingest.kafka.signals import send_one
from cdc_ingest.mysql import Catalog, connection_settings
from cdc_ingest.mysql.catalog import QueryRefused


class SignalRefused(CdcIngestError):
    exit_code = exit_codes.SIGNAL_REFUSED


class SignalNotTaken(CdcIngestError):
    exit_code = exit_codes.SIGNAL_NOT_TAKEN


def request_snapshot(defn: PipelineDef, names: list[str], echo: Callable[[str], None],
                     wait_s: float = 0.0, where: str | None = None) -> str:
    """Check the tables and write the request; then, for up to ``wait_s`` seconds, wait for
    capture's notification that it took it (returns its id) or refused it (raises)."""
    problems: list[ConfigProblem] = []
    catalog = Catalog(connection_settings(defn.source), retries=0)
    try:
        existing = set(catalog.tables())
        for name in names if where else []:
            db, _, table = name.partition(".")
            if (db, table) in existing:
                refused = _refused_filter(catalog, db, table, where or "")
                if refused:
                    problems.append(ConfigProblem("--where", refused, "write a condition "
                                                  "MySQL accepts for each table named"))
    finally:
        catalog.close()
    tables = named_tables(defn, names, existing, problems, ConfigProblem(
        "", "is not captured by this pipeline", "only tables that source.tables selects (and "
        "source.tables.exclude does not) can be snapshotted"))
    listed = ", ".join(f"{db}.{table}" for db, table in tables) + (
        f" where {where}" if where else "")
    what = ("the rows the condition selects are written again, nothing is tombstoned"
            if where else "the tables' keys are tombstoned in their sink topics, then "
            "their rows are written again")

    def send(kafka: dict[str, Any]) -> tuple[str, str]:
        request_id = send_request(kafka, defn.signal_topic, tables, where)
        return request_id, (
            f"snapshot of {listed} requested (request {request_id}). The running capture "
            f"takes it within a few seconds (if none runs, the next start does): {what}; "
            "`cdc-ingest watch --notifications` follows it, and `cdc-ingest verify` compares "
            "the topics when it is done.")

    return signal_and_wait(defn, send, echo, wait_s, "snapshot of")


def named_tables(defn: PipelineDef, names: list[str], existing: set[tuple[str, str]],
                 problems: list[ConfigProblem], unselected: ConfigProblem
                 ) -> list[tuple[str, str]]:
    """The tables ``names`` name, each once; raises with every name that is not a table
    MySQL has, or one ``defn`` does not select (``unselected`` says what and the fix), and
    the ``problems`` found before."""
    tables: list[tuple[str, str]] = []
    for name in names:
        db, _, table = name.partition(".")
        if not db or not table:
            problems.append(ConfigProblem(name, "is not a table name", "write it db.table"))
        elif (db, table) not in existing:
            problems.append(ConfigProblem(name, "is not a table in MySQL",
                                          "check the spelling (names are case-sensitive)"))
        elif not defn.source.captures(db, table):
            problems.append(replace(unselected, path=name))
        elif (db, table) not in tables:
            tables.append((db, table))
    if problems:
        raise ConfigError(problems)
    return tables


def signal_and_wait(defn: PipelineDef, send: Callable[[dict[str, Any]], tuple[str, str]],
                    echo: Callable[[str], None], wait_s: float, did: str) -> str:
    """``send`` writes a signal (returns its id and what to say of it); then, for up to
    ``wait_s`` seconds, capture's answer, taken (returns the id) or refused (raises)."""
    kafka = defn.kafka_config()
    TopicAdmin(kafka).ensure(TopicSpec(defn.signal_topic, 1,
                                       defn.sink.topic_replication_factor or -1,
                                       {"cleanup.policy": "compact"}))
    # what capture notifies from here on: its answer to this signal comes after
    notes = follow_or_idle(kafka, [defn.notification_topic]) if wait_s > 0 else None
    try:
        signal_id, said = send(kafka)
        echo(said)
        if notes is not None:
            _answer(notes, signal_id, wait_s, echo, did)
    finally:
        if notes is not None:
            notes.close()
    return signal_id


def _refused_filter(catalog: Catalog, db: str, table: str, where: str) -> str | None:
    """MySQL's reason to refuse ``where`` on ``db.table`` (it runs with LIMIT 0), or None."""
    try:
        catalog.select(f"SELECT 1 FROM {quote(db)}.{quote(table)} WHERE ({where}) LIMIT 0")  # noqa: S608
    except QueryRefused as exc:
        return f"MySQL refuses it on {db}.{table}: {exc}"
    return None


def answer_to(message: Message | None, request_id: str) -> dict[str, Any] | None:
    """``message`` read as capture's Signal notification of ``request_id`` (its answer,
    TAKEN or REFUSED), or None when it is another."""
    if message is None or message.value is None:
        return None
    note = orjson.loads(message.value)
    if note.get("aggregate_type") == SIGNAL and note.get("id") == request_id:
        return dict(note)
    return None


def _answer(notes: Generator[Message | None, None, None], request_id: str, wait_s: float,
            echo: Callable[[str], None], did: str) -> None:
    """Capture's Signal notification of ``request_id``: taken (returns) or refused (raises);
    :class:`SignalNotTaken` after ``wait_s`` seconds without it."""
    deadline = time.monotonic() + wait_s
    for message in notes:
        note = answer_to(message, request_id)
        if note is not None:
            data = note.get("additional_data", {})
            if note.get("type") == TAKEN:
                echo(f"capture took request {request_id}: {did} "
                     f"{data.get('data_collections')}"
                     + (f" (refused: {data['reason']})" if data.get("reason") else ""))
                return
            raise SignalRefused(f"capture refused request {request_id}: {data.get('reason')}")
        if time.monotonic() > deadline:
            break
    raise SignalNotTaken(
        f"no capture took request {request_id} within {wait_s:g} s (none runs, or it is busy "
        "with an unfinished snapshot). It stays in the signal topic: a capture takes it when "
        "it can, and `cdc-ingest status` lists it meanwhile.")


def request_stop(defn: PipelineDef, names: list[str], echo: Callable[[str], None],
                 wait_s: float = 0.0) -> str:
    """Write a stop-snapshot signal in Debezium's format (``names``: the tables; none: all
    the running snapshot has left), then wait for capture's answer as
    :func:`request_snapshot` does; returns its id."""
    for name in names:
        if not all(name.partition(".")[::2]):
            raise ConfigError([ConfigProblem(name, "is not a table name", "write it db.table")])
    return send_control(defn, STOP_SNAPSHOT, {"data-collections": names, "type": "incremental"},
                        f"stop-snapshot of {', '.join(names) or 'every table left'}",
                        "capture stops reading them and goes on with the binlog", "stopped",
                        echo, wait_s)


def send_control(defn: PipelineDef, kind: str, data: dict[str, Any], what: str, then: str,
                 did: str, echo: Callable[[str], None], wait_s: float) -> str:
    """Write a signal of ``kind`` in Debezium's format (keyed by the pipeline's name, with
    ``data``), then wait for capture's answer; returns its id."""

    def send(kafka: dict[str, Any]) -> tuple[str, str]:
        signal_id = uuid.uuid4().hex[:12]
        value = orjson.dumps({"type": kind, "id": signal_id, "data": data})
        send_one(kafka, defn.signal_topic, defn.pipeline.name.encode(), value)
        return signal_id, f"{what} sent (signal {signal_id}); {then}"

    return signal_and_wait(defn, send, echo, wait_s, did)
