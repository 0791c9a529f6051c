"""The sink's state under the names earlier releases gave a pipeline whose name has capitals,
carried over once to the one spelling every name has now.

Earlier releases named the topics of pipeline ``Shop`` ``cdc-ingest.shop.*`` but its
transactional ids, sink group and state topics ``cdc-ingest.Shop.*``, so ``Shop`` and ``shop``
shared topics without fencing each other. Now every name is spelled from the lowercased name
(config/pipeline.py ``id``). What the sink kept under the old spelling is what its next run
resumes from, so the first start under the new one carries it over before any task reads it:

1. nothing to do when the new sink group has committed offsets (carried over already, or the
   pipeline ran since) or the old one has none (it never wrote a batch);
2. the old sink ids and the old transaction metadata writer are fenced: a sink of the earlier
   release still running stops, and a transaction one left open is aborted, so the offsets
   read next are final;
3. with transaction metadata, the old writer's state, and the part records it had still to
   read, go to the new ``tx-state`` / ``tx-parts`` topics in one transaction of the new
   writer (skipped when the new state topic has a state: done before a crash);
4. the old group's offsets are committed to the new group, last: the step that says done.

Each step is safe to repeat, so a crash anywhere is mended by the next start. The old signal
topic (requests not yet taken) and the old ``verify --continuous`` state are not carried:
a request is made again, and the continuous verify computes its state afresh.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import orjson

from cdc_ingest.kafka import TopicAdmin, TopicSpec, fence, read_topic
from cdc_ingest.kafka.consumer import end_offsets
from cdc_ingest.kafka.errors import KafkaAccessDenied
from cdc_ingest.kafka.offsets import GroupOffsets
from cdc_ingest.model import names
from cdc_ingest.sink.driver.metadata_writer import STATE_KEY, read_state
from cdc_ingest.sink.transaction import Send, SinkTransaction

if TYPE_CHECKING:
    from cdc_ingest.config import PipelineDef

log = logging.getLogger(__name__)


def carry_over(defn: PipelineDef, partitions: int) -> bool:
    """Carry the sink's state from the old spelling of the names to the new one, if there is
    any to carry; whether it did."""
    old = defn.old_transactional_id_prefix
    if old is None:
        return False
    kafka, topic = defn.kafka_config(), defn.pipeline.changelog_topic
    every = list(range(partitions))
    new_group = GroupOffsets(kafka, defn.sink_group_id)
    old_group = GroupOffsets(kafka, names.sink_group_id(old), stable=False)
    try:
        if new_group.committed(topic, every):
            return False
        try:
            if not old_group.committed(topic, every):
                return False
        except KafkaAccessDenied:
            return False  # this principal never committed under the old group
        fence(kafka, [names.sink_transactional_id(old, p) for p in every]
              + [names.tx_metadata_transactional_id(old)])
        stable = GroupOffsets(kafka, names.sink_group_id(old))
        try:
            offsets = stable.committed(topic, every)
        finally:
            stable.close()
        if defn.sink.sink_transaction_metadata_topic:
            _carry_metadata(defn, old)
        new_group.commit_all(topic, offsets)
    finally:
        new_group.close()
        old_group.close()
    log.warning("carried the sink's committed offsets %s over from group %s to %s: "
                "cdc-ingest now spells every Kafka name of pipeline %r as %r, which earlier "
                "releases spelled %r for its transactional ids, groups and state topics; the "
                "old ones can be deleted", dict(sorted(offsets.items())),
                names.sink_group_id(old), defn.sink_group_id, defn.name,
                defn.transactional_id_prefix, old)
    return True


def _carry_metadata(defn: PipelineDef, old: str) -> None:
    """The old metadata writer's state and the parts it had still to read, to the new
    topics, in one transaction of the new writer's id."""
    kafka, new = defn.kafka_config(), defn.transactional_id_prefix
    state = read_state(kafka, names.tx_state_topic(old))
    if state is None:
        return  # it never wrote BEGIN and END
    replication = defn.sink.topic_replication_factor or -1
    TopicAdmin(kafka).ensure_all([
        TopicSpec(names.tx_parts_topic(new), 1, replication),
        TopicSpec(names.tx_state_topic(new), 1, replication, {"cleanup.policy": "compact"})])
    tx = SinkTransaction.registered(kafka, names.tx_metadata_transactional_id(new))
    try:
        if read_state(kafka, names.tx_state_topic(new)) is not None:
            return  # carried before a crash
        parts = list(read_topic(kafka, names.tx_parts_topic(old), settled=True,
                                since={0: int(state["next"])}))
        # the copies are the first records the new writer reads: from the topic's end now
        first = end_offsets(kafka, names.tx_parts_topic(new), [0])[0]

        def fill(send: Send) -> tuple[None, None]:
            for msg in parts:
                send(names.tx_parts_topic(new), msg.value, msg.key, partition=0)
            send(names.tx_state_topic(new),
                 orjson.dumps({**state, "next": first}),
                 STATE_KEY)
            return None, None

        tx.write(fill)
    finally:
        tx.close()
    log.info("carried the transaction metadata state and %d part record(s) over from %s",
             len(parts), names.tx_state_topic(old))
