"""ACLs and SCRAM logins written through Kafka's Admin API (the secured test broker's
harness, cdc_ingest/services/kafka_secured.py)."""

from __future__ import annotations

from typing import Any

from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

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
