"""Apache Flink reads an avro-confluent upsert topic back, independent of cdc-ingest's sink.

A few keyed records are written to a fresh topic with confluent-kafka's own ``AvroSerializer``
(Confluent's wire format: magic byte, schema id, Avro binary; subjects ``<topic>-key`` and
``<topic>-value`` registered in the local Schema Registry, the ``registry`` fixture), one key
updated and one deleted by a tombstone. The schemas are exactly what Flink derives from the
table (``AvroSchemaConverter``): a record named ``record`` in
``org.apache.flink.avro.generated``; NOT NULL columns plain types, nullable ones
``["null", T]`` with ``"default": null``; the value holds the key columns too
(``value.fields-include = ALL``). Then the PyFlink job (flink_readback_job.py through
``flink_env.read_back``, ``avro-confluent`` key and value) folds the topic per key and the test
compares every value with what was written; the deleted key must be absent.
"""

from __future__ import annotations

import datetime
import json
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from cdc_ingest.maven import MavenError
from tests.integration import flink_env

UTC = datetime.UTC
NAMESPACE = "org.apache.flink.avro.generated"

# (column, Flink SQL type, Avro type as Flink derives it for a NOT NULL column)
KEY_COLUMNS: list[tuple[str, str, Any]] = [
    ("id", "INT NOT NULL", "int"),
    ("tag", "STRING NOT NULL", "string"),
]
VALUE_COLUMNS: list[tuple[str, str, Any]] = [
    ("i", "INT", "int"),
    ("l", "BIGINT", "long"),
    ("s", "STRING", "string"),
    ("b", "BYTES", "bytes"),
    ("flag", "BOOLEAN", "boolean"),
    ("dbl", "DOUBLE", "double"),
    ("dec", "DECIMAL(10, 2)",
     {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}),
    ("dt", "DATE", {"type": "int", "logicalType": "date"}),
    ("tm", "TIME(3)", {"type": "int", "logicalType": "time-millis"}),
    ("ts", "TIMESTAMP(3)", {"type": "long", "logicalType": "timestamp-millis"}),
    ("arr", "ARRAY<STRING>", {"type": "array", "items": ["null", "string"]}),
]


def _schema(fields: list[dict[str, Any]]) -> str:
    return json.dumps({"type": "record", "name": "record", "namespace": NAMESPACE,
                       "fields": fields})


KEY_SCHEMA = _schema([{"name": n, "type": t} for n, _, t in KEY_COLUMNS])
VALUE_SCHEMA = _schema([{"name": n, "type": t} for n, _, t in KEY_COLUMNS]
                       + [{"name": n, "type": ["null", t], "default": None}
                          for n, _, t in VALUE_COLUMNS])

FULL: dict[str, Any] = {
    "i": -(2**31), "l": 2**63 - 1, "s": "Grüße 😀 'q' \"d\"", "b": b"\x00\xff\x10",
    "flag": True, "dbl": -1.5e-7, "dec": Decimal("-12345678.91"),
    "dt": datetime.date(1969, 12, 31), "tm": datetime.time(23, 59, 59, 999000),
    "ts": datetime.datetime(2024, 2, 29, 12, 34, 56, 789000, tzinfo=UTC),
    "arr": ["x", None, "日本"],
}
NULLS: dict[str, Any] = dict.fromkeys(FULL)
OTHER: dict[str, Any] = {
    "i": 2**31 - 1, "l": -(2**63), "s": "", "b": b"", "flag": False, "dbl": 1e16,
    "dec": Decimal("0.05"), "dt": datetime.date(2038, 1, 19), "tm": datetime.time(0, 0),
    "ts": datetime.datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=UTC), "arr": [],
}

# (key, value or None for a tombstone), in the order written
MESSAGES: list[tuple[tuple[int, str], dict[str, Any] | None]] = [
    ((1, "a"), FULL),
    ((2, "b"), NULLS),
    ((3, "c"), FULL),
    ((4, "d"), OTHER),
    ((3, "c"), OTHER),  # an update
    ((4, "d"), None),  # a tombstone: key 4 is deleted
    ((5, "ü"), {**NULLS, "s": "late", "dec": Decimal("99999999.99")}),
]


def _expected() -> dict[tuple[int, str], dict[str, Any]]:
    live: dict[tuple[int, str], dict[str, Any]] = {}
    for key, value in MESSAGES:
        if value is None:
            live.pop(key, None)
        else:
            live[key] = {"id": key[0], "tag": key[1], **value}
    return live


def _same(name: str, flink: Any, written: Any) -> bool:
    if written is None or flink is None:
        return flink is None and written is None
    if name == "ts":  # Flink's TIMESTAMP(3) text: the UTC wall clock of the epoch millis
        return bool(datetime.datetime.fromisoformat(flink) == written.replace(tzinfo=None))
    if name == "dec":  # the table's scale, exactly
        return bool(isinstance(flink, Decimal) and flink == written
                    and flink.as_tuple().exponent == written.as_tuple().exponent)
    return bool(flink == written and type(flink) is type(written))


def _produce(bootstrap: str, registry_url: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result()
    client = SchemaRegistryClient({"url": registry_url})
    key_serializer = AvroSerializer(client, KEY_SCHEMA)
    value_serializer = AvroSerializer(client, VALUE_SCHEMA)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for (key_id, tag), value in MESSAGES:
        key = key_serializer({"id": key_id, "tag": tag},
                             SerializationContext(topic, MessageField.KEY))
        payload = None if value is None else value_serializer(
            {"id": key_id, "tag": tag, **value}, SerializationContext(topic, MessageField.VALUE))
        producer.produce(topic, key=key, value=payload)
    assert producer.flush(30) == 0, "messages left unsent"
    # the subjects Flink will use by default hold the schemas written
    assert client.get_latest_version(f"{topic}-key").schema.schema_str == KEY_SCHEMA
    assert client.get_latest_version(f"{topic}-value").schema.schema_str == VALUE_SCHEMA


def test_flink_reads_avro_confluent_written_by_confluent_kafka(
    kafka: Any, registry: Any, tmp_path: Path
) -> None:
    topic = f"avro-readback-{uuid.uuid4().hex[:8]}"
    _produce(kafka.bootstrap, registry.url, topic)

    try:
        result = flink_env.read_back(
            kafka.bootstrap, topic,
            [(n, t) for n, t, _ in KEY_COLUMNS + VALUE_COLUMNS], [n for n, _, _ in KEY_COLUMNS],
            tmp_path, key_value_format="avro-confluent", registry_url=registry.url,
        )
    except (flink_env.FlinkEnvError, MavenError) as exc:
        pytest.fail(f"cannot provision PyFlink for the read-back (scripts/setup.sh makes it): "
                    f"{exc}", pytrace=False)

    assert {"+I", "+U", "-D"} <= set(result.summary["kinds"]), result.summary
    flink = {(row["values"]["id"], row["values"]["tag"]): row["values"] for row in result.rows}
    expected = _expected()
    assert sorted(flink) == sorted(expected)  # key (4, "d") deleted, absent
    differences = [
        f"key {key} column {name}: Flink {flink[key][name]!r}, written {value!r}"
        for key, row in expected.items()
        for name, value in row.items()
        if not _same(name, flink[key][name], value)
    ]
    assert not differences, "\n".join(differences)
    assert all(set(flink[key]) == set(expected[key]) for key in expected)
