"""Thin confluent-kafka wrappers: the only package that imports confluent_kafka."""

from cdc_ingest.kafka.admin import TopicAdmin, TopicSpec
from cdc_ingest.kafka.config import client_config
from cdc_ingest.kafka.consumer import Message, read_topic
from cdc_ingest.kafka.producer import TransactionalProducer

__all__ = [
    "Message",
    "TopicAdmin",
    "TopicSpec",
    "TransactionalProducer",
    "client_config",
    "read_topic",
]
