"""A consumer group's first offset fetch on a brand-new Kafka cluster.

The first group request on a new cluster makes the broker create __consumer_offsets, and
until its partitions are loaded the broker answers NOT_COORDINATOR, which librdkafka passes
straight up from an offset fetch. The sink reads its group's committed offsets when it starts
and in every task, so a user's first run against a new Kafka failed there. A private broker,
started for this test, is asked at once.
"""

from __future__ import annotations

import time
from pathlib import Path

from cdc_ingest.kafka import TopicAdmin, TopicSpec
from cdc_ingest.kafka.offsets import GroupOffsets
from cdc_ingest.services import KafkaBroker


def test_the_first_group_of_a_new_cluster_reads_and_commits_its_offsets(tmp_path: Path) -> None:
    broker = KafkaBroker(tmp_path / "kafka")
    try:
        broker.start()
        config = {"bootstrap.servers": broker.bootstrap}
        TopicAdmin(config).ensure(TopicSpec("changelog", 2, 1, {}))
        group = GroupOffsets(config, "cdc-ingest.new-cluster.sink", timeout_s=30)
        try:
            began = time.monotonic()
            assert group.committed("changelog", [0, 1]) == {}  # NOT_COORDINATOR at first
            waited = time.monotonic() - began
            group.commit("changelog", 1, 42)
            assert group.committed("changelog", [0, 1]) == {1: 42}
            assert waited < 30
        finally:
            group.close()
    finally:
        broker.stop()
