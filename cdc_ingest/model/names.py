"""The Kafka names every process of a pipeline derives from its transactional-id prefix
(``sink.transactional-id-prefix``, by default ``cdc-ingest.<pipeline name>``): the one place
they are spelled, so capture, the sink, ``status`` and ``validate`` always agree."""

from __future__ import annotations


def capture_transactional_id(prefix: str) -> str:
    """One per pipeline: a second capture process fences the first."""
    return f"{prefix}.capture"


def sink_transactional_id(prefix: str, partition: int) -> str:
    """One per changelog partition, so a retried Spark task fences its older attempt."""
    return f"{prefix}.sink.{partition}"


def sink_group_id(prefix: str) -> str:
    """The consumer group whose committed offsets say what the sink has written."""
    return f"{prefix}.sink"


def tools_group(prefix: str) -> str:
    """The base of the consumer groups the pipeline's readers use (capture, the sink, the
    commands): ``<prefix>.tools.reader`` for readers that assign partitions and never commit,
    ``<prefix>.tools.watch-<random>`` for each ``watch``; Spark's Kafka source takes
    ``<prefix>.spark`` as its ``groupIdPrefix``. All are under the prefix, as the sink group
    is, so one prefixed group ACL covers them (``cdc-ingest acls``)."""
    return f"{prefix}.tools"


def spark_group_prefix(prefix: str) -> str:
    """``groupIdPrefix`` of Spark's Kafka source (its own consumers' groups)."""
    return f"{prefix}.spark"


def signal_topic(prefix: str) -> str:
    """Requests to the running pipeline (``cdc-ingest snapshot``; capture/signals.py)."""
    return f"{prefix}.signals"


def notification_topic(prefix: str) -> str:
    """What capture is doing (snapshots started, their progress, done), in Debezium's
    notification format, written in capture's own transactions (capture/notifications.py)."""
    return f"{prefix}.notifications"


def tx_parts_topic(prefix: str) -> str:
    """What the sink's transactions wrote per MySQL transaction (transaction metadata,
    sink/task/metadata_parts.py), read by the driver, which writes BEGIN and END
    (sink/driver/metadata_writer.py)."""
    return f"{prefix}.tx-parts"


def tx_metadata_transactional_id(prefix: str) -> str:
    """The driver's writer of BEGIN and END records (one per pipeline; a second fences it)."""
    return f"{prefix}.tx-metadata"


def tx_state_topic(prefix: str) -> str:
    """The metadata writer's state (compacted; it is the topic's only writer)."""
    return f"{prefix}.tx-state"


def verify_topic(prefix: str) -> str:
    """``verify --continuous``'s state per sink topic (compacted), read by ``status
    --tables`` (cdc_ingest/verify/continuous.py)."""
    return f"{prefix}.verify"
