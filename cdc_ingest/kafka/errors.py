"""What the Kafka wrappers raise: Kafka's own failures, in words an operator can act on.

They belong to no stage: capture and the sink both let them through, so a Kafka failure
exits with the same code wherever it happens.
"""

from __future__ import annotations

import re

from cdc_ingest import exit_codes
from cdc_ingest.errors import TRANSIENT_EXIT_CODE, CdcIngestError
from cdc_ingest.kafka.logs import recent_login_failure

# librdkafka's words for a request the authorizer refused, and the resource each names
# (the Java client's, in Spark's Kafka source: TopicAuthorizationException ...)
_DENIED = re.compile(r"(Topic|Group|Transactional ?Id|Cluster) authorization failed|"
                     r"(TOPIC|GROUP|TRANSACTIONAL_ID|CLUSTER)_AUTHORIZATION_FAILED|"
                     r"(Topic|Group|TransactionalId|Cluster)AuthorizationException", re.I)
_GRANTS = {
    "topic": "Describe, Read, Write and Create on the topic (or its prefix)",
    "group": "Describe and Read on the pipeline's groups (prefix <prefix>.)",
    "transactionalid": "Describe and Write on the pipeline's transactional ids (prefix "
                       "<prefix>.)",
    "cluster": "no cluster-level ACL is needed by cdc-ingest itself: Kafka asked for one for "
               "an operation outside the pipeline's names (an older broker's IdempotentWrite)",
}


_LOGIN_NOTE = "The Kafka client could not log in just before"
# librdkafka's words for a request that found no broker to answer it (a login that failed
# looks so to the request)
_UNREACHED = re.compile(r"transport failure|_TRANSPORT|timed out|ALL_BROKERS_DOWN|cannot reach|"
                        r"_TIMED_OUT|Timeout", re.I)


class KafkaClientError(CdcIngestError):
    """Kafka refused or failed a request (produce, commit, admin, read); nothing of a
    transaction that saw it is committed. One the authorizer refused is a
    :class:`KafkaAccessDenied`, whichever wrapper raised it."""

    exit_code = exit_codes.KAFKA_OR_SINK

    def __new__(cls, *args: object, **kwargs: object) -> KafkaClientError:
        if cls is KafkaClientError and args and _DENIED.search(str(args[0])):
            return super().__new__(KafkaAccessDenied)
        return super().__new__(cls)

    def __str__(self) -> str:
        # asked when shown: librdkafka hands a client's log lines over while it is polled
        # or closed, after the failed call raised
        text = super().__str__()
        login = recent_login_failure()
        if login is None or _LOGIN_NOTE in text or not _UNREACHED.search(text):
            return text
        return (f"{text.rstrip('. ')}. {_LOGIN_NOTE}: {login}. Fix: check the login settings "
                "(properties.sasl.*, the token endpoint, the trust and key stores) and the "
                "credentials")


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
        named = (found.group(1) or found.group(2) or found.group(3) or "") if found else ""
        kind = named.lower().replace("_", "").replace(" ", "") or "topic"
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
