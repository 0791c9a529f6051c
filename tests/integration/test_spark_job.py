"""The sink's Spark query, with a recording writer in place of the real one.

One task per changelog partition range, offsets in order, only committed records
(read_committed), the checkpoint decides where a restart resumes, a restart without it
starts from the sink group's committed offsets, and a failing writer fails the query.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from cdc_ingest.config import PipelineDef, load_pipeline
from cdc_ingest.errors import SinkError
from cdc_ingest.kafka import TopicAdmin, TopicSpec, TransactionalProducer, read_topic
from cdc_ingest.kafka.offsets import GroupOffsets, OffsetsPending
from cdc_ingest.sink.driver import query as job
from cdc_ingest.sink.driver.task_settings import sink_settings
from cdc_ingest.sink.runtime.session import (
    CHECKPOINT_MANAGER_CONF,
    local_checkpoint_manager,
    spark_session,
)
from cdc_ingest.sink.task.columns import Records, changelog_rows
from cdc_ingest.sink.task.record_loop import Counters
from tests.integration.pipeline_helpers import wait_for, write_pipeline

Seen = list[list[dict[str, Any]]]  # per task: the rows it got


# -- stand-in writers: run in Spark's Python workers, so module level and picklable ----------


def _record(out_dir: str, settings: Any, rows: Records) -> Counters:
    seen = [
        {"p": r.partition, "o": r.offset, "v": r.value.decode(),
         "bytes": isinstance(r.key, bytes) and isinstance(r.value, bytes)}
        for r in changelog_rows(rows)
    ]
    (Path(out_dir) / f"{uuid.uuid4().hex}.json").write_text(json.dumps(seen))
    return Counters(partition=seen[0]["p"] if seen else -1, rows_in=len(seen),
                    last_offset=seen[-1]["o"] if seen else -1)


def _fail(settings: Any, rows: Records) -> Counters:
    raise RuntimeError("the stand-in writer failed on purpose")


def _worker_imports(batches: Iterable[Any]) -> Iterator[Any]:
    """What a Python worker imports pyspark from, and which archives its import system reads
    again at every task (pyspark's setup_spark_files calls importlib.invalidate_caches)."""
    import sys  # noqa: PLC0415 - in the worker
    import zipimport  # noqa: PLC0415

    import pyarrow as pa  # noqa: PLC0415
    import pyspark  # noqa: PLC0415

    for _ in batches:
        archives = sorted(k for k, v in sys.path_importer_cache.items()
                          if isinstance(v, zipimport.zipimporter))
        yield pa.RecordBatch.from_pylist(
            [{"found": json.dumps({"pyspark": pyspark.__file__, "archives": archives})}])


# -- helpers -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """One SparkSession for the module; run_sink reuses it instead of starting its own."""
    session = spark_session("cdc-ingest-test-spark-job")
    yield session
    session.stop()


def _transaction(producer: TransactionalProducer, topic: str, tag: str,
                 rows: dict[int, int], commit: bool = True) -> None:
    """One Kafka transaction of changelog records: ``rows[partition]`` records per partition."""
    producer.begin()
    for partition, count in rows.items():
        for n in range(count):
            pk = {"id": f"{tag}-{partition}-{n}"}
            value = {"v": 1, "op": "+I", "db": "db", "table": "t", "pk": pk, "before": None,
                     "after": pk, "ts_ms": 1_700_000_000_000, "pos": f"{tag}#{n}"}
            producer.send(topic, json.dumps(value).encode(), json.dumps(pk).encode(),
                          partition=partition)
    if commit:
        producer.commit()
    else:
        producer.abort()


def _committed_records(kafka: Any, topic: str) -> set[tuple[int, int]]:
    return {(m.partition, m.offset) for m in read_topic({"bootstrap.servers": kafka.bootstrap},
                                                        topic)}


def _commit_group(kafka: Any, defn: PipelineDef, partition: int, offset: int) -> None:
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": defn.sink_group_id,
                         "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(defn.pipeline.changelog_topic, partition, offset)],
                        asynchronous=False)
    finally:
        consumer.close()


_MID_TRANSACTION = """
import sys
from cdc_ingest.kafka import TransactionalProducer
from cdc_ingest.kafka.offsets import GroupOffsets, offset_list
bootstrap, group, transactional_id, topic, partition, offset = sys.argv[1:]
config = {"bootstrap.servers": bootstrap}
producer = TransactionalProducer(config, transactional_id)
producer.init()
producer.begin()
producer.send_offsets(offset_list(topic, int(partition), int(offset)),
                      GroupOffsets(config, group).group_metadata())
print("open", flush=True)
sys.stdin.read()
"""


def _kill_mid_transaction(kafka: Any, defn: PipelineDef, partition: int, offset: int) -> None:
    """SIGKILL a process holding the sink's transaction of ``partition`` open, with that
    partition's next ``offset`` added to it: a sink task killed just before its commit."""
    tid = sink_settings(defn).transactional_id(partition)
    proc = subprocess.Popen(
        [sys.executable, "-c", _MID_TRANSACTION, kafka.bootstrap, defn.sink_group_id, tid,
         defn.pipeline.changelog_topic, str(partition), str(offset)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "open"
    finally:
        proc.kill()
        proc.wait(10)


def _pipeline(tmp_path: Path, mariadb: Any, kafka: Any, trigger: str, partitions: int
              ) -> tuple[PipelineDef, str, TransactionalProducer]:
    """An exactly-once pipeline of Spark's own ranges (what the driver's head start writes
    would be recorded twice by the recording writer, which commits nothing), its changelog
    topic made with ``partitions``, and a producer of changelog transactions."""
    name = f"spark-{uuid.uuid4().hex[:8]}"
    config = write_pipeline(tmp_path / "p.yaml", mariadb, kafka, name, "db.t",
                            pipeline={"trigger.interval": trigger, "head-start": False},
                            sink={"sink.delivery-guarantee": "exactly-once"})
    defn = load_pipeline(config)
    topic = defn.pipeline.changelog_topic
    TopicAdmin({"bootstrap.servers": kafka.bootstrap}).ensure(TopicSpec(topic, partitions))
    producer = TransactionalProducer({"bootstrap.servers": kafka.bootstrap}, f"test.{name}")
    producer.init()
    return defn, topic, producer


def _tasks(out_dir: Path) -> Seen:
    return [json.loads(p.read_text()) for p in sorted(out_dir.glob("*.json"))]


def _run(
    defn: PipelineDef, monkeypatch: pytest.MonkeyPatch, out_dir: Path,
    done: Callable[[Seen], bool], writer: Any = None,
) -> tuple[Seen, list[list[dict[str, Any]]]]:
    """run_sink in a thread with a recording writer until ``done(tasks seen)``, then stop it."""
    out_dir.mkdir()
    monkeypatch.setattr(job, "write_partition", writer or partial(_record, str(out_dir)))
    stop, batches, errors = threading.Event(), [], []

    def target() -> None:
        try:
            job.run_sink(defn, stop_event=stop, on_batch=lambda _, results: batches.append(results))
        except Exception as exc:  # noqa: BLE001 - handed over to the test thread
            errors.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    try:
        wait_for(lambda: errors or done(_tasks(out_dir)), timeout=60, what="the rows expected")
    finally:
        stop.set()
        thread.join(60)
    assert not thread.is_alive(), "run_sink did not stop"
    if errors:
        raise errors[0]
    return _tasks(out_dir), batches


def _offsets(tasks: Seen) -> list[tuple[int, int]]:
    return [(row["p"], row["o"]) for task in tasks for row in task]


# -- the test ----------------------------------------------------------------------------


def test_python_workers_import_pyspark_from_its_package_and_read_no_archive_per_task(
    spark: Any,
) -> None:
    # cdc_ingest.sink.runtime.worker_daemon: the zip copy of pyspark that Spark puts first on the workers'
    # path, and the spark-core jar, cost ~80 ms of CPU per task (their directories read again)
    for _ in range(2):  # the second job runs in the reused workers
        rows = spark.range(4).repartition(2).mapInArrow(_worker_imports, "found string").collect()
        assert len(rows) == 2
        for row in rows:
            found = json.loads(row.found)
            assert ".zip" not in found["pyspark"], found
            assert found["pyspark"].endswith("/pyspark/__init__.py"), found
            assert found["archives"] == [], found


def test_a_local_checkpoint_is_written_without_filecontext(spark: Any) -> None:
    # FileContext's rename on the local file system runs `readlink` in a child process for
    # every offset and commit log entry; Spark's FileSystem-based manager does not
    session = spark.newSession()  # a SQL configuration of its own
    for remote in ("hdfs://namenode:8020/cdc/checkpoint", "s3a://bucket/checkpoint"):
        assert local_checkpoint_manager(session, remote) is None
        assert session.conf.get(CHECKPOINT_MANAGER_CONF, None) is None
    chosen = local_checkpoint_manager(session, "file:/var/lib/cdc/checkpoint")
    assert chosen is not None and chosen.endswith(".FileSystemBasedCheckpointFileManager")
    assert session.conf.get(CHECKPOINT_MANAGER_CONF) == chosen
    mine = spark.newSession()
    mine.conf.set(CHECKPOINT_MANAGER_CONF, "com.example.MyCheckpointFileManager")
    assert local_checkpoint_manager(mine, "/var/lib/cdc/checkpoint") is None
    assert mine.conf.get(CHECKPOINT_MANAGER_CONF) == "com.example.MyCheckpointFileManager"


def test_query_reads_committed_ranges_per_partition_and_resumes_where_it_should(
    spark: Any, mariadb: Any, kafka: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    defn, topic, producer = _pipeline(tmp_path, mariadb, kafka, "200ms", partitions=2)
    _transaction(producer, topic, "a", {0: 4, 1: 3})
    _transaction(producer, topic, "aborted", {0: 3, 1: 3}, commit=False)
    _transaction(producer, topic, "b", {0: 2, 1: 2})
    committed = _committed_records(kafka, topic)
    assert len(committed) == 11

    # 1. A first start reads every committed record, once, one task per partition range.
    tasks, batches = _run(defn, monkeypatch, tmp_path / "run1",
                          lambda t: set(_offsets(t)) >= committed)
    offsets = _offsets(tasks)
    assert sorted(offsets) == sorted(committed)  # no aborted record, no duplicate
    assert not any(row["v"].find("aborted") >= 0 for task in tasks for row in task)
    assert all(row["bytes"] for task in tasks for row in task)
    for task in tasks:
        assert len({row["p"] for row in task}) == 1, task
        assert [row["o"] for row in task] == sorted({row["o"] for row in task}), task
    for results in batches:
        parts = [r.partition for r in results if r.partition >= 0]
        assert len(parts) == len(set(parts)), results  # one task per partition and batch
    assert sum(r.rows_in for results in batches for r in results) == 11
    assert spark.conf.get(CHECKPOINT_MANAGER_CONF).endswith("FileSystemBasedCheckpointFileManager")

    # 2. With its checkpoint, a restart reads only what is new: the group's (older)
    #    committed offset on partition 0 does not pull it back.
    _commit_group(kafka, defn, 0, 2)
    _transaction(producer, topic, "c", {0: 1, 1: 1})
    new = _committed_records(kafka, topic) - committed
    tasks, _ = _run(defn, monkeypatch, tmp_path / "run2", lambda t: set(_offsets(t)) >= new)
    assert sorted(_offsets(tasks)) == sorted(new)

    # 3. Without its checkpoint, a restart starts from the committed offsets: partition 0
    #    at 2, partition 1 (nothing committed) at its earliest. Even after a sink was killed
    #    between adding partition 0's offset 9 to its transaction and committing it: the
    #    restart aborts that transaction at once (the pending offset held the group's
    #    read_committed offsets until Kafka's 60 s transaction timeout, and the read gave up
    #    at 30 s), and partition 0 resumes at 2, not 9.
    _kill_mid_transaction(kafka, defn, partition=0, offset=9)
    group = GroupOffsets({"bootstrap.servers": kafka.bootstrap}, defn.sink_group_id,
                         timeout_s=3)
    with pytest.raises(OffsetsPending, match="starting that sink again aborts it at once"):
        group.committed(topic, [0, 1])  # the pending offset is there: the restart meets it
    shutil.rmtree(defn.pipeline.checkpoint_dir)
    everything = committed | new
    expected = {(p, o) for p, o in everything if p == 1 or o >= 2}
    tasks, _ = _run(defn, monkeypatch, tmp_path / "run3",
                    lambda t: set(_offsets(t)) >= expected)
    assert sorted(_offsets(tasks)) == sorted(expected)
    try:
        assert group.committed(topic, [0, 1]) == {0: 2}  # aborted, so readable again
    finally:
        group.close()

    # 4. A failing writer fails the query: run_sink raises, nothing is swallowed.
    _transaction(producer, topic, "d", {0: 1})
    producer.close()
    with pytest.raises(SinkError, match="failed on purpose"):
        _run(defn, monkeypatch, tmp_path / "run4", lambda t: False, writer=_fail)

    # 5. A checkpoint whose offset log lost entries (deleted while a killed sink's JVM still
    #    wrote its next entry) stops the sink, naming the checkpoint and the fix.
    checkpoint = Path(defn.pipeline.checkpoint_dir)
    entries = sorted(int(p.name) for p in (checkpoint / "offsets").iterdir() if p.name.isdigit())
    assert len(entries) >= 2, entries
    for entry in entries[:-1]:
        (checkpoint / "offsets" / str(entry)).unlink()
    with pytest.raises(SinkError, match=(
            rf"checkpoint {re.escape(str(checkpoint))} is damaged: its offset log has no entry "
            rf"for batch {entries[-1] - 1}\b.*delete that checkpoint directory")):
        _run(defn, monkeypatch, tmp_path / "run5", lambda t: False)


def test_a_stop_requested_as_a_batch_begins_leaves_it_whole_to_the_next_start(
    spark: Any, mariadb: Any, kafka: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture,
) -> None:
    """The bad timing on purpose: the stop is requested at the end of a batch, with the next
    batch's records already committed and no wait between batches, so Spark begins that
    batch at once. It is refused before it writes anything (no Spark job to interrupt, no
    stack trace printed), and the next start writes it, once."""
    defn, topic, producer = _pipeline(tmp_path, mariadb, kafka, "0ms", partitions=1)
    _transaction(producer, topic, "a", {0: 3})
    first = _committed_records(kafka, topic)
    out = tmp_path / "run1"
    out.mkdir()
    monkeypatch.setattr(job, "write_partition", partial(_record, str(out)))
    monkeypatch.setattr(job, "POLL_S", 60)  # the waiting loop must not stop the query first
    stop, errors, batches = threading.Event(), [], []

    def after(batch_id: int, results: list[Counters]) -> None:
        batches.append(batch_id)
        if not stop.is_set():
            _transaction(producer, topic, "b", {0: 2})  # the next batch's records
            stop.set()

    def target() -> None:
        try:
            job.run_sink(defn, stop_event=stop, on_batch=after)
        except Exception as exc:  # noqa: BLE001 - handed over to the test thread
            errors.append(exc)

    capfd.readouterr()
    with caplog.at_level("INFO"):
        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        thread.join(120)
        assert not thread.is_alive(), "run_sink did not stop"
    assert not errors, errors
    assert len(batches) == 1, batches
    assert set(_offsets(_tasks(out))) == first  # the refused batch wrote nothing
    assert "sink query stopped before its next batch, which the next start writes" in caplog.text
    printed = capfd.readouterr()
    for text in (printed.out, printed.err, caplog.text):
        assert "Traceback" not in text and "terminated with error" not in text, text[-3000:]
        assert "StackOverflowError" not in text and "InterruptedException" not in text
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text

    # the next start writes the refused batch's records, and nothing of the first again
    monkeypatch.setattr(job, "POLL_S", 1)  # its stop, once it has, is seen at once
    second = _committed_records(kafka, topic) - first
    producer.close()
    tasks, _ = _run(defn, monkeypatch, tmp_path / "run2", lambda t: set(_offsets(t)) >= second)
    assert sorted(_offsets(tasks)) == sorted(second)
