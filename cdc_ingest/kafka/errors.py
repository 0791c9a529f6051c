"""What the Kafka wrappers raise: Kafka's own failures, in words an operator can act on.

They belong to no stage: capture and the sink both let them through, so a Kafka failure
exits with the same code wherever it happens.
"""

from __future__ import annotations

import re

from cdc_ingest import exit_codes
from cdc_ingest.errors import TRANSIENT_EXIT_CODE, CdcIngestError

# librdkafka's words for a request the authorizer refused, and the resource each names
_DENIED = re.compile(r"(Topic|Group|Transactional ?Id|Cluster) authorization failed|"
                     r"(TOPIC|GROUP|TRANSACTIONAL_ID|CLUSTER)_AUTHORIZATION_FAILED", re.I)
_GRANTS = {
    "topic": "Describe, Read, Write and Create on the topic (or its prefix)",
    "group": "Describe and Read on the pipeline's groups (prefix <prefix>.)",
    "transactionalid": "Describe and Write on the pipeline's transactional ids (prefix "
                       "<prefix>.)",
    "cluster": "no cluster-level ACL is needed by cdc-ingest itself: Kafka asked for one for "
               "an operation outside the pipeline's names (an older broker's IdempotentWrite)",
}


class KafkaClientError(CdcIngestError):
    """Kafka refused or failed a request (produce, commit, admin, read); nothing of a
    transaction that saw it is committed. One the authorizer refused is a
    :class:`KafkaAccessDenied`, whichever wrapper raised it."""

    exit_code = exit_codes.KAFKA_OR_SINK

    def __new__(cls, *args: object, **kwargs: object) -> KafkaClientError:
        if cls is KafkaClientError and args and _DENIED.search(str(args[0])):
            return super().__new__(KafkaAccessDenied)
        return super().__new__(cls)


def is_denied(text: str) -> bool:
    """Whether Kafka's words say the authorizer refused the request."""
    return _DENIED.search(text) is not None


class KafkaAccessDenied(KafkaClientError):
    """The authorizer refused the principal a request on a topic, group or transactional
    id: the message names the ACL to grant."""

    exit_code = exit_codes.KAFKA_DENIED

    def __init__(self, message: str) -> None:
        if "cdc-ingest acls" in message:  # already said (an unpickled copy)
            super().__init__(message)
            return
        found = _DENIED.search(message)
        kind = (found.group(1) or found.group(2) or "").lower().replace("_", "").replace(
            " ", "") if found else "topic"
        super().__init__(
            f"{message.rstrip('. ')}. Kafka refused it to this principal (ACLs): grant "
            f"{_GRANTS.get(kind, _GRANTS['topic'])}; `cdc-ingest acls --config FILE` prints "
            "every ACL the pipeline needs as kafka-acls.sh commands")


class FencedError(KafkaClientError):
    """Another process took over this transactional id (a second instance, or a retried
    task): this one must stop; its open transaction is aborted."""

    exit_code = exit_codes.FENCED


class TransactionTimedOut(KafkaClientError):
    """The broker aborted a transaction that stayed open longer than
    ``transaction.timeout.ms`` (the process was frozen or blocked): nothing of it is
    visible, and starting again resumes from the committed position."""

    exit_code = TRANSIENT_EXIT_CODE
