"""Sink topics: created compacted when missing; a non-compacted one draws a warning.

Change-event topics (``sink.type: kafka``) are created with the broker's cleanup policy, as
Flink CDC's topics are: each message is one change, not the latest state of a key."""

from __future__ import annotations

import logging
from typing import Any

from cdc_ingest.kafka import TopicAdmin, TopicSpec

log = logging.getLogger(__name__)


class SinkTopics:
    """Ensures each sink topic once per process."""

    def __init__(
        self, kafka: dict[str, Any], partitions: int | None, replication: int | None,
        max_message_bytes: int, compact: bool = True,
    ) -> None:
        self._compact = compact
        self._kafka = kafka
        self._partitions = partitions
        self._replication = replication
        self._max_message_bytes = max_message_bytes
        self._known: set[str] = set()
        self._limits: dict[str, int] = {}  # max.message.bytes of each topic ensured
        self._admin: TopicAdmin | None = None

    def ensure(self, topic: str) -> None:
        if topic in self._known:
            return
        if self._admin is None:
            self._admin = TopicAdmin(self._kafka)
        config = {"max.message.bytes": str(self._max_message_bytes)}
        if self._compact:
            config["cleanup.policy"] = "compact"
        compression = self._kafka.get("compression.type")
        if compression:
            config["compression.type"] = str(compression)
        existed = self._admin.partitions(topic) is not None
        self._admin.ensure(
            TopicSpec(topic, self._partitions or -1, self._replication or -1, config)
        )
        self._limits[topic] = self._max_message_bytes
        if existed:
            settings = self._admin.topic_config(topic)
            self._limits[topic] = int(settings.get("max.message.bytes")
                                      or self._max_message_bytes)
            policy = settings.get("cleanup.policy", "")
            if self._compact and "compact" not in policy:
                log.warning(
                    "sink topic %s has cleanup.policy=%s, so Kafka deletes old keys by time "
                    "instead of keeping the latest value per key. Fix: kafka-configs.sh "
                    "--alter --entity-type topics --entity-name %s --add-config "
                    "cleanup.policy=compact",
                    topic, policy or "?", topic,
                )
        self._known.add(topic)

    def limit(self, topic: str) -> int:
        """``max.message.bytes`` of a topic :meth:`ensure` saw."""
        return self._limits.get(topic, self._max_message_bytes)

    def ensure_dead_letter(self, topic: str) -> None:
        """The dead-letter topic: every message kept (not compacted), room for any row."""
        if topic in self._known:
            return
        if self._admin is None:
            self._admin = TopicAdmin(self._kafka)
        self._admin.ensure(TopicSpec(topic, 1, self._replication or -1,
                                     {"cleanup.policy": "delete",
                                      "max.message.bytes": str(self._max_message_bytes)}))
        self._known.add(topic)
