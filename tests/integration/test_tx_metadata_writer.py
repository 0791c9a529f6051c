"""The sink driver's writer of BEGIN and END (cdc_ingest/sink/driver/metadata_writer.py) against a real
broker, restarted at the moments that matter: after a commit, and with a transaction of its
own left open (a driver killed between sending and committing). Part records are written
here by transactional producers the way sink tasks write them; every transaction gets its
BEGIN and END once, and a restart neither repeats nor loses one."""

from __future__ import annotations

import uuid
from typing import Any

import orjson
from confluent_kafka import Producer

from cdc_ingest.kafka import read_topic
from cdc_ingest.sink.driver.metadata_writer import STATE_KEY, TxMetadataWriter
from tests.integration.pipeline_helpers import wait_for


def _part(partition: int, *entries: list[Any]) -> bytes:
    return orjson.dumps({"v": 1, "partition": partition, "tx": list(entries)})


def _task(bootstrap: str, name: str, topic: str, part: bytes) -> None:
    """A sink task's Kafka transaction holding one part record, committed."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": name})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, part, partition=0)
    producer.commit_transaction(30)


def _ends(kafka: dict[str, Any], topic: str) -> list[str]:
    values = [orjson.loads(m.value) for m in read_topic(kafka, topic, settled=True)
              if m.value is not None]
    assert [v["status"] for v in values] == ["BEGIN", "END"] * (len(values) // 2)
    return [v["id"] for v in values if v["status"] == "END"]


def test_a_restarted_writer_writes_each_end_once_also_after_a_killed_one(kafka: Any) -> None:
    run = uuid.uuid4().hex[:8]
    config = {"bootstrap.servers": kafka.bootstrap}
    parts, meta, state = f"{run}.tx-parts", f"{run}.transactions", f"{run}.tx-state"

    def writer() -> TxMetadataWriter:
        return TxMetadataWriter(config, parts, meta, state, f"{run}.tx-metadata")

    first = writer()
    first.start()
    # A is whole once both partitions' parts are read; B's partition 1 part comes later
    _task(kafka.bootstrap, f"{run}.sink.0", parts,
          _part(0, ["A", {"t": 2}, 2, 7, 3], ["B", {"t": 1}, 2, 8, 5]))
    _task(kafka.bootstrap, f"{run}.sink.1", parts, _part(1, ["A", {"t": 1}, 2, 7, 4]))
    wait_for(lambda: _ends(config, meta) == ["A"], 30, "A's END")  # the writer's thread

    # killed between sending and committing: its transaction (A's END again, a newer
    # state) stays open until the next writer fences it
    first._stop.set()  # its thread stops; the producer is not closed (as after SIGKILL)
    producer = first._tx._producer  # SinkTransaction's producer
    producer.begin()
    producer.send(meta, b'{"status":"END","id":"A"}', b'{"id":"A"}', partition=0)
    producer.send(state, b'{"v":1,"next":99,"cut":{}}', STATE_KEY)
    producer._producer.flush(30)

    second = writer()
    second.start()  # fences the first, loads the last committed state, catches up
    _task(kafka.bootstrap, f"{run}.sink.1", parts,
          _part(1, ["B", {"t": 3}, 2, 8, 6], ["C", {"t": 1}, 0, 0, 7]))
    # the open END was aborted and A is not written again; B comes once it is whole
    wait_for(lambda: _ends(config, meta) == ["A", "B"], 30, "B's END")
    second.close()

    third = writer()  # a clean restart: C, not whole, is rebuilt from the parts
    third.start()
    _task(kafka.bootstrap, f"{run}.sink.0", parts, _part(0, ["C", {"t": 1}, 2, 9, 8]))
    _task(kafka.bootstrap, f"{run}.sink.1", parts, _part(1, ["C", {}, 2, 9, 9]))
    wait_for(lambda: _ends(config, meta) == ["A", "B", "C"], 30, "C's END")
    third.close()
    values = [orjson.loads(m.value) for m in read_topic(config, meta, settled=True)]
    assert [(v["id"], v["event_count"]) for v in values if v["status"] == "END"] == [
        ("A", 3), ("B", 4), ("C", 2)]
