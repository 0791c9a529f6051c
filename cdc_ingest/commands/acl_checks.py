"""``validate``'s ACL checks: for each ACL ``cdc-ingest acls`` lists (commands/acls.py), one
request that needs it, changing nothing (kafka/acl_admin.py): a topic is described, or, when
missing, created with ``validate_only``; the sink group's offsets are read. Transactional ids
are checked by the transaction ``validate`` begins and aborts. Each refusal is a ``[FAIL]``
line whose fix is the ``kafka-acls.sh`` command that grants the ACL.
"""

from __future__ import annotations

from typing import Any

from cdc_ingest.commands.acls import Acl, pipeline_acls, principal_of, render
from cdc_ingest.commands.preflight import Check
from cdc_ingest.config import PipelineDef
from cdc_ingest.config.sink_topics import topics_of
from cdc_ingest.kafka.acl_admin import group_refusal, topic_refusal
from cdc_ingest.model import names


def _probe(acl: Acl, defn: PipelineDef, tables: list[tuple[str, str]]) -> str | None:
    """A name the ACL covers that the pipeline uses, to ask about; None: nothing to ask."""
    if acl.resource == "group":
        return defn.sink_group_id
    if acl.resource != "topic":
        return None
    if acl.pattern == "literal":
        return acl.name
    if acl.name == defn.transactional_id_prefix + ".":
        return names.signal_topic(defn.transactional_id_prefix)
    topics = [t for t in topics_of(defn, tables) if t.startswith(acl.name)]
    return topics[0] if topics else None


def acl_checks(defn: PipelineDef, kafka: dict[str, Any],
               tables: list[tuple[str, str]]) -> list[Check]:
    principal = principal_of(defn)
    checks = []
    for acl in pipeline_acls(defn, tables):
        name = _probe(acl, defn, tables)
        if name is None:
            continue
        refused = (group_refusal(kafka, name) if acl.resource == "group"
                   else topic_refusal(kafka, name))
        grant = render([acl], principal, defn.transactional_id_prefix).splitlines()[-1]
        checks.append(Check(
            f"kafka acl: {acl.resource} {acl.name} ({acl.pattern})", refused is None,
            f"{name}: allowed" if refused is None else
            f"{name}: {refused}. Fix: grant it: {grant}"))
    return checks
