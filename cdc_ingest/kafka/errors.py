"""What the Kafka wrappers raise: Kafka's own failures, in words an operator can act on.

They belong to no stage: capture and the sink both let them through, so a Kafka failure
exits with the same code wherever it happens.
"""

from __future__ import annotations

from cdc_ingest import exit_codes
from cdc_ingest.errors import TRANSIENT_EXIT_CODE, CdcIngestError


class KafkaClientError(CdcIngestError):
    """Kafka refused or failed a request (produce, commit, admin, read); nothing of a
    transaction that saw it is committed."""

    exit_code = exit_codes.KAFKA_OR_SINK


class FencedError(KafkaClientError):
    """Another process took over this transactional id (a second instance, or a retried
    task): this one must stop; its open transaction is aborted."""

    exit_code = exit_codes.FENCED


class TransactionTimedOut(KafkaClientError):
    """The broker aborted a transaction that stayed open longer than
    ``transaction.timeout.ms`` (the process was frozen or blocked): nothing of it is
    visible, and starting again resumes from the committed position."""

    exit_code = TRANSIENT_EXIT_CODE
