"""Reading a partition's offsets rides through a leader that is moving or not yet elected."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from cdc_ingest.kafka.consumer import watermarks


class _Answers:
    """A consumer whose get_watermark_offsets gives the listed answers in turn."""

    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)
        self.calls = 0

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float) -> object:
        self.calls += 1
        answer = self.answers.pop(0)
        if isinstance(answer, KafkaError):
            raise KafkaException(answer)
        return answer


def test_not_leader_then_an_answer_is_the_answer() -> None:
    consumer = _Answers(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION),
                        KafkaError(KafkaError.LEADER_NOT_AVAILABLE), (0, 7))
    assert watermarks(consumer, TopicPartition("t", 0), 5.0) == (0, 7)
    assert consumer.calls == 3


def test_a_lasting_transient_error_is_raised_once_the_time_is_up() -> None:
    consumer = _Answers(*[KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION)] * 100)
    with pytest.raises(KafkaException, match="NOT_LEADER"):
        watermarks(consumer, TopicPartition("t", 0), 0.5)
    assert 2 <= consumer.calls < 10


def test_other_errors_are_raised_at_once() -> None:
    consumer = _Answers(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED), (0, 1))
    with pytest.raises(KafkaException, match="TOPIC_AUTHORIZATION_FAILED"):
        watermarks(consumer, TopicPartition("t", 0), 5.0)
    assert consumer.calls == 1


def test_partitions_of_an_unreachable_cluster_is_a_kafka_error_not_a_traceback() -> None:
    # `status` reads the sink group's partitions: a raw KafkaException made it exit 1 with a
    # traceback instead of 5 with the message
    from cdc_ingest.kafka.errors import KafkaClientError  # noqa: PLC0415
    from cdc_ingest.kafka.offsets import GroupOffsets  # noqa: PLC0415

    group = GroupOffsets({"bootstrap.servers": "127.0.0.1:1"}, "g", timeout_s=1.0)
    try:
        with pytest.raises(KafkaClientError, match="cannot read the partitions of changelog"):
            group.partitions("changelog")
    finally:
        group.close()
