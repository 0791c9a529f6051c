"""Thin confluent-kafka wrappers: the only package that imports confluent_kafka.

They know no stage: producing (one ``send`` with the full-queue wait), transactions, topics,
reading topics back and consumer-group offsets, each failure raised as
:class:`KafkaClientError` (or :class:`FencedError`).
"""

from cdc_ingest.kafka.admin import TopicAdmin, TopicSpec
from cdc_ingest.kafka.config import client_config
from cdc_ingest.kafka.consumer import Message, read_topic
from cdc_ingest.kafka.errors import FencedError, KafkaClientError
from cdc_ingest.kafka.producer import PlainProducer, TransactionalProducer, fence

__all__ = [
    "FencedError",
    "KafkaClientError",
    "Message",
    "PlainProducer",
    "TopicAdmin",
    "TopicSpec",
    "TransactionalProducer",
    "client_config",
    "fence",
    "read_topic",
]
