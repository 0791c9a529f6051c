"""Topic creation and inspection."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from cdc_ingest.kafka.errors import KafkaClientError, is_denied
from cdc_ingest.kafka.logs import with_logger
from cdc_ingest.kafka.producer import TransactionalProducer

log = logging.getLogger(__name__)
# A broker that answers does so in well under a second: how long a process starting waits
# before it says none does.
FIRST_CONTACT_S = 6.0
# how long a just-created topic may be unknown to the broker asked for its configuration
NEW_TOPIC_WAIT_S = 10.0


def unreachable(bootstrap: str, what: str, exc: KafkaException) -> KafkaClientError:
    """The error for a request no broker answered: where, why in Kafka's words, the fix."""
    err = exc.args[0] if exc.args else None
    why = err.str() if isinstance(err, KafkaError) else str(exc)
    if is_denied(why) or (isinstance(err, KafkaError) and is_denied(err.name())):
        return KafkaClientError(f"Kafka at {bootstrap} refused to {what}: {why} "
                                f"({err.name() if isinstance(err, KafkaError) else ''})")
    return KafkaClientError(
        f"cannot reach Kafka at {bootstrap or '(no bootstrap.servers)'} to {what}: {why}. "
        "Fix: check that the brokers are up and reachable from this host, and "
        "properties.bootstrap.servers and the security properties (properties.security."
        "protocol, properties.sasl.*, properties.ssl.*) of the pipeline")


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int = 1
    replication_factor: int = 1
    config: dict[str, str] = field(default_factory=dict)


class TopicAdmin:
    def __init__(self, config: dict[str, Any], timeout_s: float = 30.0,
                 first_contact_s: float | None = None) -> None:
        """``first_contact_s``: how long the first request may wait for a broker (a process
        starting: a wrong address is reported in seconds); later ones wait ``timeout_s``."""
        self._admin = AdminClient(with_logger(config))
        self._timeout = timeout_s
        self._first = timeout_s if first_contact_s is None else first_contact_s
        self._bootstrap = str(config.get("bootstrap.servers", ""))
        self._reached = False

    def reach(self) -> None:
        """Ask the cluster for its metadata (brokers, and the topics this principal may
        see: no ACL is needed for the answer)."""
        try:
            wait = self._timeout if self._reached else min(self._timeout, self._first)
            self._admin.list_topics(timeout=wait)
        except KafkaException as exc:
            raise unreachable(self._bootstrap, "read the cluster's metadata", exc) from exc
        self._reached = True

    def partitions(self, topic: str) -> int | None:
        """Partition count of ``topic``, or None if it does not exist."""
        try:
            wait = self._timeout if self._reached else min(self._timeout, self._first)
            meta = self._admin.list_topics(topic=topic, timeout=wait)
        except KafkaException as exc:
            raise unreachable(self._bootstrap, f"describe topic {topic}", exc) from exc
        self._reached = True
        info = meta.topics.get(topic)
        if info is not None and info.error is not None and is_denied(info.error.name()):
            # it may well exist: the principal may not see it (not "missing: create it")
            raise KafkaClientError(f"cannot describe topic {topic}: {info.error.name()}")
        if info is None or info.error is not None:
            return None
        return len(info.partitions)

    def ensure(self, spec: TopicSpec) -> int:
        """Create the topic if missing; return its partition count."""
        return self.ensure_all([spec])[spec.name]

    def ensure_all(self, specs: list[TopicSpec]) -> dict[str, int]:
        """Create the topics that are missing, in one request; each one's partition count
        by name. Three round trips whatever the number of topics (a process starting
        creates four)."""
        counts = self._counts([s.name for s in specs])
        missing = [s for s in specs if counts.get(s.name) is None]
        if not missing:
            return {name: n for name, n in counts.items() if n is not None}
        futures = self._admin.create_topics([
            NewTopic(s.name, s.partitions, s.replication_factor, config=s.config)
            for s in missing])
        for spec in missing:
            try:
                futures[spec.name].result(self._timeout)
                log.info("created topic %s %s", spec.name, spec.config or "")
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                if not (isinstance(err, KafkaError)
                        and err.code() == KafkaError.TOPIC_ALREADY_EXISTS):
                    raise KafkaClientError(
                        f"cannot create topic {spec.name}: {err}. Fix: create it yourself or "
                        "grant CREATE on the cluster to this client."
                    ) from exc
        counts = self._counts([s.name for s in specs])
        return {s.name: counts.get(s.name) or s.partitions for s in specs}

    def _counts(self, topics: list[str]) -> dict[str, int | None]:
        """Partition count of each of ``topics`` (None: it does not exist), in one request
        when there are several."""
        if len(topics) == 1:
            return {topics[0]: self.partitions(topics[0])}
        wait = self._timeout if self._reached else min(self._timeout, self._first)
        futures = self._admin.describe_topics(TopicCollection(topics), request_timeout=wait)
        out: dict[str, int | None] = {}
        for topic in topics:
            try:
                out[topic] = len(futures[topic].result().partitions)
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                if not (isinstance(err, KafkaError)
                        and err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART):
                    raise unreachable(self._bootstrap, f"describe topic {topic}", exc) from exc
                out[topic] = None
        self._reached = True
        return out

    def topic_config(self, topic: str) -> dict[str, str]:
        """The configuration of ``topic``, which exists: a topic just created may be unknown
        to the broker asked for a moment (its metadata not there yet), so that answer is
        asked again for up to :data:`NEW_TOPIC_WAIT_S`."""
        resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
        deadline = time.monotonic() + min(self._timeout, NEW_TOPIC_WAIT_S)
        wait = 0.05
        while True:
            try:
                result = self._admin.describe_configs([resource])[resource].result(
                    self._timeout)
                return {name: entry.value for name, entry in result.items()}
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                unknown = (isinstance(err, KafkaError)
                           and err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART)
                if not unknown or time.monotonic() > deadline:
                    raise KafkaClientError(
                        f"cannot read the configuration of topic {topic}: {exc}") from exc
            time.sleep(wait)
            wait = min(0.5, wait * 2)


def transactions_usable(config: dict[str, Any], transactional_id: str) -> str | None:
    """None if the cluster answers and a transaction can be begun and aborted; else why not."""
    try:
        TopicAdmin(config, timeout_s=10, first_contact_s=FIRST_CONTACT_S).reach()
        producer = TransactionalProducer(config, transactional_id, timeout_s=20)
        producer.init()
        producer.begin()
        producer.abort()
        producer.close()
    except KafkaClientError as exc:
        return str(exc)
    except KafkaException as exc:
        return f"Kafka error: {exc}"
    return None
