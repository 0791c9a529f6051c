"""What a pipeline file says the transaction reader reads (cdc_ingest/config/sink_topics.py,
cdc_ingest/commands/pipeline_reader.py): the metadata topic, or a configuration error naming
the option before anything is asked of MySQL or Kafka."""

from __future__ import annotations

import pytest

from cdc_ingest.commands.pipeline_reader import transaction_reader
from cdc_ingest.config.sink_topics import transaction_metadata_topic
from cdc_ingest.errors import ConfigError
from tests.unit.test_config import minimal, parse


@pytest.mark.parametrize("sink_type", ["upsert-kafka", "kafka"])
def test_the_metadata_topic_is_the_option_s_on_both_sink_types(sink_type: str) -> None:
    defn = parse(minimal(sink={"type": sink_type, "sink.delivery-guarantee": "exactly-once",
                               "sink.transaction-metadata.topic": "shop.tx"}))
    assert transaction_metadata_topic(defn) == "shop.tx"


@pytest.mark.parametrize("sink_type", ["upsert-kafka", "kafka"])
def test_without_the_option_the_reader_is_refused_naming_it(sink_type: str) -> None:
    defn = parse(minimal(sink={"type": sink_type}))
    for call in (lambda: transaction_metadata_topic(defn),
                 lambda: transaction_reader(defn, topics=["shop.orders"])):
        with pytest.raises(ConfigError) as caught:
            call()
        [problem] = caught.value.problems
        assert problem.path == "sink.transaction-metadata.topic"
        assert "sink.transaction-metadata.topic: <topic>" in str(caught.value)
