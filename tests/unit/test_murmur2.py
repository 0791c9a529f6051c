"""The test-side murmur2 matches the vectors of Kafka's own Java tests."""

import pytest

from cdc_ingest.kafka.partition import murmur2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("21", -973932308),
        ("foobar", -790332482),
        ("a-little-bit-long-string", -985981536),
        ("a-little-bit-longer-string", -1486304829),
        ("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        ("abc", 479470107),
    ],
)
def test_kafka_murmur2_vectors(text: str, expected: int) -> None:
    assert murmur2(text.encode()) == expected
