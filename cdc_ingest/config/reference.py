"""The Markdown configuration reference, generated from the models.

Every option of every block is listed with its YAML name, default and meaning (the field's
``description``), so the reference cannot drift from what ``validate`` accepts::

    python -m cdc_ingest.config.reference > docs/configuration.md
"""

from __future__ import annotations

import sys
from datetime import timedelta
from enum import Enum
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from cdc_ingest.config.avro_confluent import AvroConfluentOptions
from cdc_ingest.config.durations import format_duration
from cdc_ingest.config.ignored import IGNORED, NOTED
from cdc_ingest.config.jdbc import JdbcPropertiesDef
from cdc_ingest.config.kafka_sink import KafkaSinkDef
from cdc_ingest.config.pipeline import PipelineOptions, RouteDef
from cdc_ingest.config.problems import PASS_THROUGH_PREFIX
from cdc_ingest.config.sink import UpsertKafkaSinkDef
from cdc_ingest.config.source import MySqlSourceDef
from cdc_ingest.config.transform import TransformDef

COMMAND = "python -m cdc_ingest.config.reference > docs/configuration.md"

_INTRO = """\
# Pipeline configuration

<!-- Generated from the models in cdc_ingest/config by
     python -m cdc_ingest.config.reference > docs/configuration.md
     Edit the field descriptions there, not this file. -->

A pipeline is one YAML file with four blocks, in the Flink CDC YAML pipeline vocabulary
(option names as in the Flink CDC MySQL source and the upsert-kafka data ingestion sink).
`cdc-ingest validate --config FILE` reports every problem at once, each with its YAML path
and the fix; unknown options are rejected with the list of supported ones (except the
`properties.*` pass-through). Ready pipelines to copy are in `routes/`.

Values: `${VAR}` / `${VAR:-default}` come from the environment, `${file:/run/secrets/x}`
reads a secret file (relative paths start at the YAML file's folder), `$${X}` is a literal.
Durations: `500ms`, `30s`, `5min`, `1h`; a bare number is milliseconds.
Secrets (`password`, and `properties.*` whose name says password/secret/jaas/token/...) never
appear in logs, errors or `repr`.

Kafka TLS/SASL settings go in `properties.*`, written as for the Java client (a Flink
pipeline's): `security.protocol`, `sasl.mechanism`, `sasl.jaas.config` (PLAIN, SCRAM-SHA-256/512,
OAUTHBEARER with `sasl.oauthbearer.token.endpoint.url`), `ssl.truststore.*` and
`ssl.keystore.*` (JKS, read with the JDK's keytool; PKCS12; PEM). Two clients read them:
librdkafka (capture, the sink's tasks, the tools), which gets them carried over to its own
settings in memory (`sasl.username`, `ssl.ca.pem`, `ssl.certificate.pem`, ...; no key file is
written), and the Java client in Spark's Kafka source, which reads them as they are. A
librdkafka spelling given as well wins for librdkafka (the Java client skips it); what cannot
be carried over (another login module, such as Kerberos', a custom callback handler or
provider, TLS below 1.2) is refused by `validate`, with the option and what to write instead.
"""

_SOURCE_NOTE = """\
The startup mode applies to the first start only: afterwards capture resumes from the
position it committed in `cdc-ingest.<pipeline>.offsets`.
"""

_ROUTE_NOTE = """\
`route:` is a list of rules. Several matching routes fan out (a table is written to each)
unless `pipeline.route-mode: FIRST_MATCH`; a table no route matches goes to `<db>.<table>`.
"""

_KAFKA_NOTE = """Flink CDC's Kafka pipeline sink: one Debezium or Canal JSON change event per row
change (docs/output-contract.md, "type: kafka"). The options shared with upsert-kafka mean the
same; `sink.dead-letter.topic`, `sink.buffer-flush.*` and `value.fields-include` are
upsert-kafka's only.
"""

# Defaults that are computed, or whose "unset" has a meaning of its own, in words.
_DEFAULTS: dict[type[BaseModel], dict[str, str]] = {
    MySqlSourceDef: {
        "scan.incremental.snapshot.parallelism": "`pipeline.parallelism`",
        "name": "none",
        "tables.exclude": "none",
        "tables.key-columns": "none",
        "jdbc.properties.*": "none: TLS when the server offers it (`PREFERRED`)",
    },
    JdbcPropertiesDef: {},
    AvroConfluentOptions: {
        "url": "required with `avro-confluent`",
        "subject": "`<topic>-key` / `<topic>-value`",
        "properties.*": "none",
    },
    UpsertKafkaSinkDef: {
        "name": "none",
        "topic.partitions": "broker default",
        "topic.replication-factor": "broker default",
        "sink.transactional-id-prefix": "`cdc-ingest.<name>`, from `name`",
    },
    KafkaSinkDef: {
        "name": "none",
        "topic": "none: the table id (`<db>.<table>`, or the route's sink-table)",
        "topic.partitions": "broker default",
        "topic.replication-factor": "broker default",
        "sink.transactional-id-prefix": "`cdc-ingest.<name>`, from `name`",
    },
    RouteDef: {},
    TransformDef: {},
    PipelineOptions: {
        "state.dir": "`~/.local/state/cdc-ingest/<name>` (`$XDG_STATE_HOME/cdc-ingest/<name>`, "
        "or `$CDC_INGEST_STATE/<name>`), from `name`; not the working directory",
        "checkpoint.dir": "`<state.dir>/checkpoint`",
        "changelog.topic": "`cdc-ingest.<name>.changelog`, from `name`",
        "offsets.topic": "`cdc-ingest.<name>.offsets`, from `name`",
        "schema.topic": "`cdc-ingest.<name>.schema`, from `name`",
        "max-offsets-per-trigger": "unlimited",
    },
}

_AVRO_NOTE = (
    "Flink's `avro-confluent` options with the `key.` / `value.` prefix upsert-kafka gives a "
    "format's options; `avro-confluent.<option>` without a prefix sets both (the prefixed one "
    "wins). Flink's fallback names `schema-registry.url`/`.subject` are accepted. TLS stores "
    "are JKS, PKCS12 or PEM, as Flink reads them. What is written: "
    "[output-contract.md](output-contract.md#avro-confluent)."
)

_TRANSFORM_NOTE = (
    "Flink CDC's transform rules: which columns each table's messages carry, which rows "
    "are written, and the table's key. Expressions, functions and what a filter does to "
    "updates: [transform.md](transform.md)."
)

_JDBC_NOTE = (
    "MySQL Connector/J's names and meanings, for TLS to MySQL on every connection (catalog, "
    "snapshot, binlog, `validate`, `status`, `verify`); "
    "[flink-cdc-compatibility.md](flink-cdc-compatibility.md#tls-to-mysql-jdbcproperties). "
    "Driver tuning properties are accepted without effect (last table); others are refused."
)

_BLOCKS: tuple[tuple[str, type[BaseModel], str], ...] = (
    ("source (type: mysql)", MySqlSourceDef, _SOURCE_NOTE),
    ("source: jdbc.properties.<name>", JdbcPropertiesDef, _JDBC_NOTE),
    ("sink (type: upsert-kafka)", UpsertKafkaSinkDef, ""),
    ("sink: key.avro-confluent.* / value.avro-confluent.*", AvroConfluentOptions,
     _AVRO_NOTE),
    ("sink (type: kafka)", KafkaSinkDef, _KAFKA_NOTE),
    ("route (list)", RouteDef, _ROUTE_NOTE),
    ("transform (list)", TransformDef, _TRANSFORM_NOTE),
    ("pipeline", PipelineOptions, ""),
)


def option_name(name: str, info: FieldInfo) -> str:
    """The YAML name of a field (``properties`` is the ``properties.*`` pass-through)."""
    if name == "properties":
        return PASS_THROUGH_PREFIX + "*"
    if name == "jdbc_properties":
        return "jdbc.properties.*"
    return info.alias or name


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, timedelta):
        return format_duration(value) if value else "0"
    return str(value)


def default_text(model: type[BaseModel], name: str, info: FieldInfo) -> str:
    """The default of one option as shown in the reference."""
    option = option_name(name, info)
    given = _DEFAULTS[model].get(option)
    if given is not None:
        return given
    if name == "properties":
        return "`bootstrap.servers` required"
    if info.is_required():
        return "required"
    default = info.get_default(call_default_factory=True)
    if default is None or (isinstance(default, dict) and not default):
        return "none"
    return f"`{_value(default)}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(model: type[BaseModel]) -> list[str]:
    rows = ["| option | default | meaning |", "|---|---|---|"]
    for name, info in model.model_fields.items():
        meaning = info.description or ""
        cells = (f"`{option_name(name, info)}`", default_text(model, name, info), meaning)
        rows.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return rows


def render_reference() -> str:
    """docs/configuration.md, from the models' fields and descriptions."""
    parts = [_INTRO]
    for title, model, note in _BLOCKS:
        section = [f"## {title}", "", *_table(model), ""]
        if note:
            section.append(note)
        parts.append("\n".join(section).rstrip("\n") + "\n")
    parts.append(_ignored())
    return "\n".join(parts)


def _ignored() -> str:
    rows = ["## Flink CDC options accepted without effect", "",
            "A Flink CDC pipeline file keeps these; each is named in a warning (`validate` "
            "prints it, capture logs it at start) with why it does nothing here. Options "
            "not in any table above or below are refused.", "",
            "| option | what happens | why |", "|---|---|---|"]
    for section, options in IGNORED.items():
        grouped: dict[str, list[str]] = {}
        for name, why in options.items():
            grouped.setdefault(why, []).append(f"`{section}.{name}`")
        rows.extend(f"| {', '.join(names)} | any value accepted, one warning | {_cell(why)} |"
                    for why, names in grouped.items())
    for section, options in NOTED.items():
        rows.extend(f"| `{section}.{name}` | checked, one warning | {_cell(why)} |"
                    for name, why in options.items())
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render_reference())
