"""ACLs through Kafka's Admin API: SCRAM logins and ACLs written (the secured test broker's
harness, cdc_ingest/services/kafka_secured.py), and what ``validate`` asks to find a missing
ACL without changing anything."""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from cdc_ingest.kafka.errors import is_denied
from cdc_ingest.kafka.logs import with_logger

# (resource type, pattern type, name, operation), as kafka-acls.sh names them
Grant = tuple[str, str, str, str]
WAIT_S = 30.0


def add_scram_user(config: dict[str, Any], user: str, password: str,
                   mechanism: str = "SCRAM-SHA-512") -> None:
    admin = AdminClient(with_logger(config))  # kept until the answers are in
    kind = ScramMechanism[mechanism.replace("-", "_")]
    done = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
        user, ScramCredentialInfo(kind, 4096), password.encode())])
    for future in done.values():
        future.result(timeout=WAIT_S)


def create_acls(config: dict[str, Any], principal: str, grants: list[Grant]) -> None:
    """ALLOW ACLs for ``principal`` (``User:<name>``) from any host."""
    admin = AdminClient(with_logger(config))  # kept until the answers are in
    # librdkafka calls Kafka's CLUSTER resource type BROKER (the same number, 4)
    bindings = [AclBinding(ResourceType["BROKER" if kind == "CLUSTER" else kind], name,
                           ResourcePatternType[pattern], principal, "*",
                           AclOperation[operation], AclPermissionType.ALLOW)
                for kind, pattern, name, operation in grants]
    for future in admin.create_acls(bindings).values():
        future.result(timeout=WAIT_S)


def _denial(exc: KafkaException) -> str | None:
    """Kafka's words when ``exc`` is the authorizer's refusal, else None."""
    err = exc.args[0] if exc.args else None
    if isinstance(err, KafkaError) and is_denied(err.name()):
        return f"{err.name()}: {err.str()}"
    return None


def topic_refusal(config: dict[str, Any], topic: str) -> str | None:
    """Why the principal may not use ``topic`` as the pipeline does, or None: an existing
    topic is described; a missing one is created with ``validate_only`` (checked, not
    made). Read and Write are not tried (they would leave records); a refusal of those is
    a named error (exit 14) when the pipeline runs."""
    admin = AdminClient(with_logger(config))
    try:
        meta = admin.list_topics(topic=topic, timeout=WAIT_S)
    except KafkaException as exc:
        return _denial(exc)
    info = meta.topics.get(topic)
    if info is not None and info.error is not None and is_denied(info.error.name()):
        return f"Describe refused ({info.error.name()})"
    if info is not None and info.error is None:
        return None
    return _refused(admin.create_topics([NewTopic(topic, 1, 1)], validate_only=True)[topic],
                    "Create")


def group_refusal(config: dict[str, Any], group: str) -> str | None:
    """Why the principal may not describe ``group``, or None. (Listing a group's offsets
    with no partitions named crashes librdkafka 2.16's admin client.)"""
    admin = AdminClient(with_logger(config))  # kept until the answer is in
    return _refused(admin.describe_consumer_groups([group])[group], "Describe")


def _refused(future: Any, operation: str) -> str | None:
    """``operation`` refused, in Kafka's words, when the authorizer refused the request
    ``future`` answers; None when it was allowed (whatever else its answer says)."""
    try:
        future.result(timeout=WAIT_S)
    except KafkaException as exc:
        denial = _denial(exc)
        return f"{operation} refused ({denial})" if denial else None
    return None
