"""``cdc-ingest acls``: every Kafka ACL a pipeline needs, derived from its definition and the
tables it captures now, as ``kafka-acls.sh`` commands to copy.

Every name the pipeline derives is under its prefix (``sink.transactional-id-prefix``, by
default ``cdc-ingest.<pipeline id>``, model/names.py): the transactional ids of capture, the
sink's tasks and the metadata writer; the sink group, every reader's group and Spark's; the
signal, verify and transaction-metadata state topics; and the changelog, offsets and schema
topics when their names start with it (the defaults do when the pipeline's name is already a
lower-case id); each other topic is listed by name. A sink topic is granted by the prefix
``<db>.`` for tables routed to ``<db>.<table>`` (tables added to that database later are
covered), by name for a route's topic.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from cdc_ingest.config import PipelineDef
from cdc_ingest.config.sink_topics import topics_of
from cdc_ingest.kafka.jaas import JaasError, parse_jaas

TOPIC_OPERATIONS = ("Create", "Describe", "DescribeConfigs", "Read", "Write")


@dataclass(frozen=True)
class Acl:
    """One ALLOW ACL: ``resource`` as kafka-acls.sh names its option (topic, group,
    transactional-id), ``pattern`` literal or prefixed."""

    resource: str
    pattern: str
    name: str
    operations: tuple[str, ...]
    why: str


def pipeline_acls(defn: PipelineDef, tables: Iterable[tuple[str, str]]) -> list[Acl]:
    prefix = defn.transactional_id_prefix + "."
    pipeline = defn.pipeline
    acls = [
        Acl("topic", "prefixed", prefix, TOPIC_OPERATIONS,
            "the pipeline's own topics (signals, notifications, verify state, transaction "
            "metadata state)"),
        Acl("transactional-id", "prefixed", prefix, ("Describe", "Write"),
            "capture's, each sink task's and the metadata writer's transactions"),
        Acl("group", "prefixed", prefix, ("Describe", "Read"),
            "the sink group's offsets (committed in its transactions), the readers' and "
            "Spark's groups"),
    ]
    own = [pipeline.changelog_topic, pipeline.offsets_topic, pipeline.schema_topic]
    metadata = defn.sink.sink_transaction_metadata_topic
    dead = getattr(defn.sink, "sink_dead_letter_topic", None)
    named = [t for t in [*own, metadata, dead] if t and not t.startswith(prefix)]
    acls += [Acl("topic", "literal", t, TOPIC_OPERATIONS, "a topic the pipeline writes")
             for t in dict.fromkeys(named)]
    router = defn.router()
    databases: dict[str, None] = {}
    routed: dict[str, None] = {}
    for topic, sources in topics_of(defn, list(tables)).items():
        db, _, table = sources[0].partition(".")
        if all(router.sink_topics(*s.split(".", 1)) == (f"{s}",) for s in sources) and \
                topic == f"{db}.{table}":
            databases[db] = None
        else:
            routed[topic] = None
    acls += [Acl("topic", "prefixed", f"{db}.", TOPIC_OPERATIONS,
                 f"the sink topics of {db}'s tables") for db in databases]
    acls += [Acl("topic", "literal", t, TOPIC_OPERATIONS, "a route's sink topic")
             for t in routed if not any(t.startswith(f"{db}.") for db in databases)]
    return acls


def principal_of(defn: PipelineDef) -> str:
    """``User:<name>`` of the SASL login in ``sasl.jaas.config`` or ``sasl.username``; a
    placeholder for a client certificate's (its subject, as the brokers map it)."""
    props = defn.sink.properties
    user = props.get("sasl.username")
    if user is None and props.get("sasl.jaas.config"):
        try:
            user = parse_jaas(str(props["sasl.jaas.config"])).options.get("username")
        except JaasError:
            user = None
    return f"User:{user}" if user else "User:<principal>"


def render(acls: list[Acl], principal: str, prefix: str) -> str:
    """The ACLs as kafka-acls.sh commands, one per resource, each after its reason."""
    lines = ["# The Kafka ACLs of this pipeline (cdc-ingest acls). Run them with an admin's",
             "# --command-config; $BOOTSTRAP: the brokers. Every name that starts with",
             f"# {prefix}. is the pipeline's own."]
    for acl in acls:
        ops = " ".join(f"--operation {op}" for op in acl.operations)
        lines += [f"# {acl.why}",
                  f"kafka-acls.sh --bootstrap-server \"$BOOTSTRAP\" --add --allow-principal "
                  f"'{principal}' {ops} --{acl.resource} '{acl.name}' "
                  f"--resource-pattern-type {acl.pattern}"]
    return "\n".join(lines) + "\n"
