"""``cdc-ingest validate``: the definition's problems, then live checks of MySQL and Kafka."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from cdc_ingest.capture.options import capture_options
from cdc_ingest.capture.positions import PositionStore
from cdc_ingest.commands.acl_checks import acl_checks
from cdc_ingest.commands.acls import pipeline_acls, principal_of, render
from cdc_ingest.commands.preflight import Check, mysql_checks
from cdc_ingest.config import PipelineDef, load_pipeline
from cdc_ingest.config.sink import UpsertKafkaSinkDef
from cdc_ingest.errors import CdcIngestError, ConfigError
from cdc_ingest.kafka.admin import transactions_usable
from cdc_ingest.kafka.errors import is_denied
from cdc_ingest.model import Position
from cdc_ingest.mysql import connection_settings
from cdc_ingest.registry import RegistryClient, RegistryConfig, RegistryError
from cdc_ingest.verify.mysql import MySqlSide


def registry_checks(defn: PipelineDef) -> list[Check]:
    """``avro-confluent``: each registry reachable, with the credentials given, once."""
    sink = defn.sink
    if not isinstance(sink, UpsertKafkaSinkDef):
        return []
    sides = [(side, options) for side, on, options in
             (("key", sink.avro_key, sink.key_avro_confluent),
              ("value", sink.avro_value, sink.value_avro_confluent)) if on and options]
    checks: list[Check] = []
    asked: dict[RegistryConfig, Check] = {}
    for side, options in sides:
        config = replace(options.registry_config(), retry_seconds=0.0)
        found = asked.get(config)
        if found is None:
            client = RegistryClient(config)
            try:
                client.ping()
                level = client.compatibility("")
                found = Check(f"schema registry ({side})", True,
                              f"{config.shown_url} reachable, compatibility level {level}")
            except RegistryError as exc:
                found = Check(f"schema registry ({side})", False, str(exc),
                              f"check {side}.avro-confluent.url and its credentials "
                              "(basic-auth.*, bearer-auth.*, ssl.*)")
            asked[config] = found
        else:
            found = replace(found, name=f"schema registry ({side})")
        checks.append(found)
    return checks


def _tables(defn: PipelineDef) -> list[tuple[str, str]]:
    """The tables the pipeline captures now (none when MySQL cannot be asked: its own checks
    say why)."""
    try:
        mysql = MySqlSide(connection_settings(defn.source), 0)
    except CdcIngestError:
        return []
    try:
        return mysql.tables(defn.source.captures)
    except CdcIngestError:
        return []
    finally:
        mysql.close()


def run_validate(config_path: Path, echo: Callable[[str], None]) -> bool:
    """Print every check; True when all pass. Config errors are raised (``ConfigError``)."""
    defn = load_pipeline(config_path)
    try:
        options = capture_options(defn)
    except ConfigError:
        raise
    echo(f"[ok  ] config: {config_path} (pipeline {options.pipeline!r})")
    for warning in defn.warnings:
        echo(f"[warn] {warning}")
    checks: list[Check] = []

    kafka_problem = transactions_usable(options.kafka, f"{options.transactional_id}.validate")
    tables = _tables(defn)
    if kafka_problem is not None and is_denied(kafka_problem):
        txn = [a for a in pipeline_acls(defn, tables) if a.resource == "transactional-id"]
        line = render(txn, principal_of(defn), defn.transactional_id_prefix).splitlines()[-1]
        kafka_problem += f" Grant it: {line}"
    checks.append(
        Check(
            "kafka transactions",
            kafka_problem is None,
            kafka_problem or f"{options.kafka.get('bootstrap.servers')} reachable, "
            "transactions usable",
            "check properties.bootstrap.servers and the client security properties; the "
            "broker needs transaction.state.log.replication.factor <= its broker count",
        )
    )
    if kafka_problem is None:
        checks.extend(acl_checks(defn, options.kafka, tables))
    checks.extend(registry_checks(defn))
    positions: list[tuple[str, Position]] = []
    if kafka_problem is None:
        try:
            saved = PositionStore(options.kafka, options.offsets_topic).load()
        except CdcIngestError:
            saved = None
        if saved is not None:
            positions.append(("committed", saved))
    spec = options.startup
    if spec.mode == "specific-offset":
        positions.append(("scan.startup.specific-offset",
                          Position(gtid_set=spec.gtid_set, file=spec.file, pos=spec.pos)))
    for check in mysql_checks(options.connection, options.captured, options.key_columns,
                              positions, retries=0,
                              snapshot=spec.mode in ("initial", "snapshot")):
        checks.append(check)
    for check in checks:
        echo(check.line())
    failed = [c for c in checks if not c.ok]
    echo(f"validate: {len(failed)} of {len(checks)} checks failed" if failed
         else f"validate: all {len(checks)} checks passed")
    return not failed
