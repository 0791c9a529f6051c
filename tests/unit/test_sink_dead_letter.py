"""``sink.dead-letter.topic``: a message too large for its topic goes there whole, and its key
is tombstoned in the topic; without it every message is sent (Kafka decides, and a refusal
stops the sink naming the row)."""

from __future__ import annotations

from typing import Any

import pytest

from cdc_ingest.kafka.limits import MessageTooLarge
from cdc_ingest.sink.task.produce import OVERHEAD, produce, raise_named


class _Topics:
    def __init__(self, limit: int) -> None:
        self._limit = limit
        self.ensured: list[str] = []
        self.dead: list[str] = []

    def ensure(self, topic: str) -> None:
        self.ensured.append(topic)

    def limit(self, topic: str) -> int:
        return self._limit

    def ensure_dead_letter(self, topic: str) -> None:
        self.dead.append(topic)


def _run(dead_letter: str | None) -> tuple[list[tuple[Any, ...]], _Topics, dict[str, int]]:
    sent: list[tuple[Any, ...]] = []
    topics = _Topics(limit=1000)
    big = b'{"id":2,"t":"' + b"x" * 1000 + b'"}'
    messages = [("shop.t", b'{"id":1}', b'{"id":1}', None, 5, "shop.t"),
                ("shop.t", b'{"id":2}', big, None, 6, "shop.t"),
                ("shop.t", b'{"id":3}', None, None, 7, "shop.t")]
    per_table: dict[str, int] = {}
    size = produce(lambda *m: sent.append(m), topics, dead_letter,  # type: ignore[arg-type]
                   messages, per_table)
    assert size == 8 + 8 + 8 + len(big) + 8 and per_table == {"shop.t": 3}
    return sent, topics, per_table


def test_an_oversized_message_goes_to_the_dead_letter_topic_and_its_key_is_tombstoned(
) -> None:
    sent, topics, _ = _run("dlq")
    assert [(m[0], m[2], m[1] is None) for m in sent] == [
        ("shop.t", b'{"id":1}', False), ("dlq", b'{"id":2}', False),
        ("shop.t", b'{"id":2}', True), ("shop.t", b'{"id":3}', True)]
    dead = dict(sent[1][4])
    assert dead["dead-letter.topic"] == b"shop.t" and dead["dead-letter.table"] == b"shop.t"
    assert b"above the max.message.bytes of shop.t (1000)" in dead["dead-letter.reason"]
    assert sent[1][1].endswith(b'x"}') and topics.dead == ["dlq"]


def test_without_a_dead_letter_topic_every_message_is_sent() -> None:
    sent, topics, _ = _run(None)
    assert [m[0] for m in sent] == ["shop.t"] * 3 and not topics.dead
    assert OVERHEAD < 1000


def test_a_refused_message_without_headers_is_named_from_its_batch() -> None:
    refused = MessageTooLarge("shop.t", b'{"id":2}', b"x" * 10, "Broker: Message too large")
    assert "an unknown table" in str(refused)
    batch = [("shop.t", b'{"id":2}', b"x" * 10, None, 6, "shop.orders")]
    with pytest.raises(MessageTooLarge, match=r"^a row of shop.orders \(key \{\"id\":2\}\)"):
        raise_named(refused, batch)
    raise_named(ValueError("other"), batch)  # anything else: the caller re-raises it
