"""Reading a topic back once everything committed before the read is visible (what the sink
does at a TRUNCATE).

The broker writes a transaction's commit markers after ``commit`` returns; until it has, a
read_committed reader stops before that transaction's records, exactly as it stops before
a transaction still open. The test holds a transaction open on purpose: a plain read ends
before it, a ``settled`` read waits until it is decided and then includes it.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

from confluent_kafka import Producer

from cdc_ingest.kafka import TopicAdmin, TopicSpec, TransactionalProducer, read_topic
from cdc_ingest.kafka.follow import follow_topics


def _two_producers(config: dict[str, Any], topic: str,
                   name: str) -> tuple[TransactionalProducer, Producer]:
    """``topic`` with 2 partitions; a transactional producer that commits, and a plain
    confluent_kafka one whose transaction a test holds open."""
    TopicAdmin(config).ensure(TopicSpec(topic, 2, 1, {}))
    committing = TransactionalProducer(config, f"tx-{name}")
    committing.init()
    held = Producer({**config, "transactional.id": f"held-{name}"})
    held.init_transactions(30)
    return committing, held


def test_a_settled_read_waits_for_open_transactions_below_the_end(kafka: Any) -> None:
    config = {"bootstrap.servers": kafka.bootstrap}
    topic = f"settled-{uuid.uuid4().hex[:8]}"
    first, held = _two_producers(config, topic, topic)
    try:
        first.begin()
        first.send(topic, b"committed", b"a", partition=0)
        first.commit()
        held.begin_transaction()
        held.produce(topic, b"held", b"b", partition=1)
        held.produce(topic, b"held", b"c", partition=0)
        held.flush(30)  # in the log, below the high watermark, undecided
        assert [m.value for m in read_topic(config, topic)] == [b"committed"]

        seen: list[bytes | None] = []
        reader = threading.Thread(target=lambda: seen.extend(
            m.value for m in read_topic(config, topic, settled=True)))
        reader.start()
        time.sleep(3)
        assert reader.is_alive(), f"the settled read ended with {seen} before the commit"
        held.commit_transaction(30)
        reader.join(30)
        assert sorted(v for v in seen if v) == [b"committed", b"held", b"held"]
    finally:
        first.close()
        held.flush(5)


def test_topics_missing_are_created_together_and_existing_ones_counted(kafka: Any) -> None:
    config = {"bootstrap.servers": kafka.bootstrap}
    base = f"ensure-{uuid.uuid4().hex[:8]}"
    admin = TopicAdmin(config)
    admin.ensure(TopicSpec(f"{base}.old", 3, 1, {}))  # exists, with more partitions than asked
    specs = [TopicSpec(f"{base}.old", 1, 1, {}), TopicSpec(f"{base}.new", 2, 1, {}),
             TopicSpec(f"{base}.compact", 1, 1, {"cleanup.policy": "compact"})]
    assert admin.ensure_all(specs) == {f"{base}.old": 3, f"{base}.new": 2,
                                       f"{base}.compact": 1}
    assert admin.topic_config(f"{base}.compact")["cleanup.policy"] == "compact"
    assert TopicAdmin(config).ensure_all(specs) == {f"{base}.old": 3, f"{base}.new": 2,
                                                    f"{base}.compact": 1}


def test_following_new_messages_starts_when_the_call_returns_not_at_the_first_read(
    kafka: Any,
) -> None:
    # `watch` says "following" once follow_topics returns; a sink commits within a second of
    # a change now (the head start, decision 0017), before the group has even joined
    config = {"bootstrap.servers": kafka.bootstrap}
    base = f"follow-{uuid.uuid4().hex[:8]}"
    producer, held = _two_producers(config, f"{base}.old", base)
    try:
        producer.begin()
        producer.send(f"{base}.old", b"before", b"k0", partition=0)
        producer.commit()
        held.begin_transaction()  # open at the call: its message counts as new once committed
        held.produce(f"{base}.old", b"open", b"k1", partition=1)
        held.flush(30)
        messages = follow_topics(config, [f"{base}.old", f"{base}.later"])
        reader: threading.Thread | None = None
        try:
            producer.begin()  # committed right after the call, before any read
            producer.send(f"{base}.old", b"after", b"k2", partition=0)
            producer.send(f"{base}.old", b"after", b"k3", partition=1)
            producer.commit()
            held.commit_transaction(30)
            TopicAdmin(config).ensure(TopicSpec(f"{base}.later", 1, 1, {}))  # created later
            producer.begin()
            producer.send(f"{base}.later", b"later", b"k4", partition=0)
            producer.commit()
            seen: list[tuple[str, bytes | None]] = []
            reader = threading.Thread(target=lambda: seen.extend(
                (m.topic, m.key) for m in messages), daemon=True)
            reader.start()
            deadline = time.monotonic() + 30
            while len(seen) < 4 and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(2)  # nothing more comes: no message twice
            assert sorted(seen) == [(f"{base}.later", b"k4"), (f"{base}.old", b"k1"),
                                    (f"{base}.old", b"k2"), (f"{base}.old", b"k3")], seen
        finally:
            if reader is None:  # else it runs in the reader, a daemon thread, until the end
                messages.close()
    finally:
        producer.close()
        held.flush(5)
