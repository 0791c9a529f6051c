"""The sink's head start (docs/decisions/0017): until Spark's first micro-batch the driver
writes the changelog itself, under the partitions' own transactional ids.

The bad timing, made on purpose: the head start holds a transaction open (its commit waits)
while Spark's first batch takes its partitions over. The batch's tasks fence it, its open
transaction is aborted, and every row is in the sink topic exactly once. A restart from the
checkpoint then goes on from the committed offsets, again exactly once."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from cdc_ingest.config import load_pipeline
from cdc_ingest.kafka import TransactionalProducer, read_topic
from cdc_ingest.kafka.errors import FencedError
from cdc_ingest.sink.driver import head_start
from cdc_ingest.sink.driver import query as job
from cdc_ingest.sink.runtime.session import spark_session
from tests.conftest import admin_conn
from tests.integration.pipeline_helpers import (
    gtid_now,
    sink_topic,
    start_capture,
    stop,
    wait_for,
    write_pipeline,
)

ROWS = 6_000  # per partition about 3,000: the head start's first transaction is 2,000 rows
MORE = 3_000


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """One SparkSession for the module; run_sink reuses it instead of starting its own."""
    session = spark_session("cdc-ingest-test-head-start")
    yield session
    session.stop()


def _insert(mariadb: Any, db: str, first: int, count: int) -> None:
    conn = admin_conn(mariadb, db)
    with conn.cursor() as cur:
        for start in range(first, first + count, 1_500):  # several MySQL transactions
            cur.executemany("INSERT INTO t VALUES (%s, %s)",
                            [(i, i * 7) for i in range(start, min(start + 1_500, first + count))])
            conn.commit()


def _changelog_rows(kafka: Any, topic: str) -> int:
    return sum(1 for m in read_topic({"bootstrap.servers": kafka.bootstrap}, topic)
               if m.key is not None)


def _run_until(defn: Any, kafka: Any, topic: str, rows: int,
               on_batch: Any) -> None:  # fmt: skip
    stop_event, errors = threading.Event(), []

    def target() -> None:
        try:
            job.run_sink(defn, stop_event=stop_event, on_batch=on_batch)
        except Exception as exc:  # noqa: BLE001 - handed to the test thread
            errors.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    try:
        wait_for(lambda: errors or len(sink_topic(kafka, topic)) >= rows, timeout=120,
                 what=f"{rows} messages in {topic}")
    finally:
        stop_event.set()
        thread.join(60)
    assert not thread.is_alive(), "run_sink did not stop"
    if errors:
        raise errors[0]


def _exactly(kafka: Any, topic: str, rows: int) -> None:
    messages = sink_topic(kafka, topic)
    keys = sorted(orjson.loads(m.key)["id"] for m in messages)
    assert len(messages) == rows, f"{len(messages) - rows} duplicates (or losses)"
    assert keys == list(range(rows))
    assert all(orjson.loads(m.value)["v"] == orjson.loads(m.key)["id"] * 7 for m in messages)


def test_a_head_start_overtaken_by_the_first_batch_is_fenced_and_nothing_is_doubled(
    spark: Any, mariadb: Any, kafka: Any, fresh_db: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    db = fresh_db
    start_at = gtid_now(mariadb)
    with admin_conn(mariadb, db).cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    _insert(mariadb, db, 0, ROWS)
    topic = f"{db}-t"
    config = write_pipeline(
        tmp_path / "p.yaml", mariadb, kafka, f"head-{db}", rf"{db}.t",
        source={"scan.startup.mode": "specific-offset",
                "scan.startup.specific-offset.gtid-set": start_at},
        sink={"sink.delivery-guarantee": "exactly-once"},
        routes=[{"source-table": rf"{db}.t", "sink-table": topic}],
    )
    defn = load_pipeline(config)
    capture = start_capture(config, tmp_path / "capture.log")
    try:
        wait_for(lambda: _changelog_rows(kafka, defn.pipeline.changelog_topic) >= ROWS,
                 timeout=120, what=f"{ROWS} rows in the changelog")

        # 1. Each head-start writer commits its first transaction, then holds its second one
        #    open until Spark's first batch has been written: the batch's tasks take the
        #    partitions over while the head start still writes them.
        real_commit = TransactionalProducer.commit
        batch_written = threading.Event()
        commits: dict[str, int] = {}
        fenced: list[BaseException] = []

        def commit(self: TransactionalProducer) -> None:
            name = threading.current_thread().name
            if name.startswith("sink-head-start-"):
                commits[name] = commits.get(name, 0) + 1
                if commits[name] > 1:
                    assert batch_written.wait(120), "Spark's first batch never came"
                    try:
                        real_commit(self)
                    except BaseException as exc:
                        fenced.append(exc)
                        raise
                    return
            real_commit(self)

        def on_batch(batch_id: int, results: list[dict[str, Any]]) -> None:
            if batch_id >= 0:
                batch_written.set()

        monkeypatch.setattr(TransactionalProducer, "commit", commit)
        monkeypatch.setattr(head_start, "STOP_WAIT_S", 1.0)
        with caplog.at_level(logging.INFO, logger="cdc_ingest.sink.driver.head_start"):
            _run_until(defn, kafka, topic, ROWS, on_batch)
            wait_for(lambda: len(fenced) == 2, timeout=60, what="both head starts fenced")
        assert sorted(commits.values()) == [2, 2], commits  # one commit through, one held
        assert all(isinstance(exc, FencedError) for exc in fenced), fenced
        assert "did not stop within 1 s" in caplog.text
        assert caplog.text.count("was fenced by the task that took the partition over") == 2
        _exactly(kafka, topic, ROWS)
        monkeypatch.undo()

        # 2. A restart from the checkpoint: the head start reads the committed offsets itself
        #    (each id registered first), and the rows made meanwhile arrive exactly once.
        _insert(mariadb, db, ROWS, MORE)
        wait_for(lambda: _changelog_rows(kafka, defn.pipeline.changelog_topic) >= ROWS + MORE,
                 timeout=120, what=f"{ROWS + MORE} rows in the changelog")
        assert (Path(defn.pipeline.checkpoint_dir) / "offsets").is_dir()
        _run_until(defn, kafka, topic, ROWS + MORE, None)
        _exactly(kafka, topic, ROWS + MORE)
    finally:
        assert stop(capture) == 0
