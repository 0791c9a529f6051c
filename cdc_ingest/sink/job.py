"""The sink's Structured Streaming query: changelog topic -> ``foreachBatch`` -> sink topics.

The Spark Kafka source turns each changelog partition's offset range of a micro-batch into one
task; each task hands its rows to :func:`~cdc_ingest.sink.writer.write_partition`, which with
``exactly-once`` writes them in transactions that also commit the partition's next offset
(exactly-once hop 2, docs/architecture.md). Nothing is shuffled before the writer, and
``minPartitions`` / ``maxRecordsPerPartition`` are never set: either would split a
partition's range over several tasks sharing one transactional id.

The rows reach the Python workers as Arrow record batches (``DataFrame.mapInArrow``, a
per-partition operator: it keeps the source's partitions and their order), not as pickled Row
objects; each task (:func:`~cdc_ingest.sink.arrow_batches.run_task`) returns its counters as
one JSON row.
"""

from __future__ import annotations

import json
import logging
import signal
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from types import FrameType
from typing import Any

from pyspark.errors import AnalysisException, StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from cdc_ingest.config import PipelineDef
from cdc_ingest.errors import SinkError
from cdc_ingest.kafka import KafkaClientError, TopicAdmin, client_config
from cdc_ingest.kafka.admin import FIRST_CONTACT_S
from cdc_ingest.kafka.config import LIBRDKAFKA_ONLY
from cdc_ingest.kafka.limits import FLOOR
from cdc_ingest.sink.arrow_batches import COLUMNS, RESULT, RESULT_SCHEMA, run_task
from cdc_ingest.sink.failures import query_failed
from cdc_ingest.sink.settings import SinkSettings, sink_settings
from cdc_ingest.sink.spark import (
    CONNECTOR,
    local_checkpoint_manager,
    spark_context_exists,
    spark_session,
)
from cdc_ingest.sink.tx_metadata import tx_metadata_writer
from cdc_ingest.sink.writer import committed_offsets, write_partition

log = logging.getLogger(__name__)

BatchCallback = Callable[[int, list[dict[str, Any]]], None]

EARLIEST = -2  # Spark's startingOffsets code for "the partition's earliest offset"
POLL_S = 1  # how often the waiting loop looks at the stop event
STOP_GRACE_S = 30.0  # how long a stop waits for the running batch to finish
TOPIC_POLL_S = 1.0  # how often to look for the changelog topic until capture creates it
FETCH_MAX_WAIT_MS = 50  # the Kafka source's consumers (see source_options)

# Kafka settings Spark's Kafka source manages itself (it refuses most of them at start).
_NOT_FOR_SPARK = {
    "auto.offset.reset": "the start comes from the checkpoint or the sink group's offsets",
    "enable.auto.commit": "the sink commits its offsets inside its own transactions",
    "interceptor.classes": "Spark's Kafka source does not allow consumer interceptors",
    "isolation.level": "the sink always reads read_committed",
}


def starting_offsets(topic: str, partitions: int, committed: Mapping[int, int]) -> str:
    """Spark's ``startingOffsets`` JSON: the committed offset per partition, else earliest."""
    return json.dumps({topic: {str(p): committed.get(p, EARLIEST) for p in range(partitions)}})


def _checkpoint_has_offsets(spark: SparkSession, checkpoint: str) -> bool:
    """True when the query's checkpoint already decides where it resumes."""
    # Through Hadoop, like Spark itself: the checkpoint may be a local path, HDFS or S3.
    sc = spark.sparkContext
    jvm = sc._jvm
    assert jvm is not None
    path = jvm.org.apache.hadoop.fs.Path(checkpoint.rstrip("/") + "/offsets")
    fs = path.getFileSystem(sc._jsc.hadoopConfiguration())
    return bool(fs.exists(path)) and any(
        status.getPath().getName().isdigit() for status in fs.listStatus(path)
    )


def _changelog_topic(defn: PipelineDef,
                     stop_event: threading.Event | None) -> tuple[int, int] | None:
    """The changelog topic's partition count and ``max.message.bytes`` (a sink value, one
    row image, fits in it), once capture has created it; None if stopped.

    Spark's Kafka source fails a query whose topic does not exist, and ``start`` runs capture
    and the sink side by side, so the sink waits instead.
    """
    topic = defn.pipeline.changelog_topic
    admin = TopicAdmin(client_config(defn.sink.properties))
    stop = stop_event or threading.Event()
    waiting = False
    while (partitions := admin.partitions(topic)) is None:
        if not waiting:
            log.info("waiting for the changelog topic %s: capture creates it", topic)
            waiting = True
        if stop.wait(TOPIC_POLL_S):
            return None
    limit = admin.topic_config(topic).get("max.message.bytes")
    return partitions, max(FLOOR, int(limit or 0))


def _start_from(
    spark: SparkSession, defn: PipelineDef, settings: SinkSettings, partitions: int
) -> str | None:
    """``startingOffsets`` when the checkpoint has none, so losing it costs no re-reading."""
    topic, checkpoint = defn.pipeline.changelog_topic, defn.pipeline.checkpoint_dir
    if _checkpoint_has_offsets(spark, checkpoint):
        log.info("resuming %s from the Spark checkpoint in %s", topic, checkpoint)
        return None
    committed = committed_offsets(settings)
    log.info("no offsets in the Spark checkpoint %s: starting %s from the sink group's "
             "committed offsets %s (partitions without one: earliest)",
             checkpoint, topic, dict(sorted(committed.items())))
    return starting_offsets(topic, partitions, committed)


def source_options(defn: PipelineDef, start: str | None) -> dict[str, str]:
    """Options of the Spark Kafka source; every ``properties.*`` (TLS, SASL) goes to it."""
    options: dict[str, str] = {}
    for name, value in defn.sink.properties.items():
        if name in LIBRDKAFKA_ONLY:
            continue  # the librdkafka spelling; the Java client takes its own
        if name in _NOT_FOR_SPARK:
            log.warning("properties.%s is not given to Spark's Kafka source: %s",
                        name, _NOT_FOR_SPARK[name])
        else:
            options[f"kafka.{name}"] = str(value)
    options.update({
        "subscribe": defn.pipeline.changelog_topic,
        "kafka.isolation.level": "read_committed",
        # The changelog is ours and must be complete: records deleted by retention before
        # the sink wrote them are lost changes, so the query stops and says so instead of
        # silently skipping them. Offsets missing because of transaction markers or aborted
        # transactions are not data loss to Spark (it checks the earliest offset).
        "failOnDataLoss": "true",
    })  # fmt: skip
    # A task reads a closed offset range; read_committed, its last offset is often a
    # transaction marker, which no fetch returns, so the consumer's last fetch waited the
    # default 500 ms for data that is not there, in most batches (the latency that cost,
    # measured: docs/decisions/0003). properties.fetch.max.wait.ms still wins.
    options.setdefault("kafka.fetch.max.wait.ms", str(FETCH_MAX_WAIT_MS))
    if defn.pipeline.max_offsets_per_trigger:
        options["maxOffsetsPerTrigger"] = str(defn.pipeline.max_offsets_per_trigger)
    if start is not None:
        options["startingOffsets"] = start
    return options


def _summary(batch_id: int, results: list[dict[str, Any]], seconds: float) -> str:
    def total(name: str) -> int:
        return sum(int(r.get(name, 0)) for r in results)

    written = sorted((r["partition"], r.get("last_offset", -1)) for r in results
                     if r.get("partition", -1) >= 0)
    last = " ".join(f"p{p}@{o}" for p, o in written) or "none"
    return (f"batch {batch_id}: {total('rows_in')} rows in, {total('rows_out')} out, "
            f"{total('skipped')} skipped, {total('bytes_out')} bytes in {seconds:.2f} s; "
            f"last offsets {last}")


def _batch_writer(
    settings: SinkSettings, on_batch: BatchCallback | None
) -> Callable[[DataFrame, int], None]:
    def write_batch(df: DataFrame, batch_id: int) -> None:
        began = time.monotonic()
        # The writer is looked up here, on the driver, and pickled into the tasks.
        task = partial(run_task, write_partition, settings)
        rows = df.select(*COLUMNS).mapInArrow(task, RESULT_SCHEMA).collect()
        results: list[dict[str, Any]] = [json.loads(row[RESULT]) for row in rows]
        log.info("%s", _summary(batch_id, results, time.monotonic() - began))
        if on_batch is not None:
            on_batch(batch_id, results)

    return write_batch


def _start_query(
    spark: SparkSession, defn: PipelineDef, settings: SinkSettings, partitions: int,
    on_batch: BatchCallback | None,
) -> StreamingQuery:  # fmt: skip
    options = source_options(defn, _start_from(spark, defn, settings, partitions))
    try:
        changelog = spark.readStream.format("kafka").options(**options).load()
    except AnalysisException as exc:
        raise SinkError(
            f"Spark has no Kafka source ({exc}). Fix: under spark-submit pass --packages "
            f"org.apache.spark:{CONNECTOR}:<your Spark version>"
        ) from exc
    writer = (
        changelog.writeStream.foreachBatch(_batch_writer(settings, on_batch))
        .queryName(f"cdc-ingest-sink-{defn.pipeline.id}")
        .option("checkpointLocation", defn.pipeline.checkpoint_dir)
    )
    interval_ms = int(defn.pipeline.trigger_interval.total_seconds() * 1000)
    if interval_ms > 0:  # else Spark's default: the next batch as soon as one ends
        writer = writer.trigger(processingTime=f"{interval_ms} milliseconds")
    local_checkpoint_manager(spark, defn.pipeline.checkpoint_dir)
    query = writer.start()
    log.info("sink query started: %s -> sink topics, checkpoint %s",
             defn.pipeline.changelog_topic, defn.pipeline.checkpoint_dir)
    return query


def _stop(query: StreamingQuery, checkpoint: str) -> None:
    """Stop between batches when possible, so no batch is cut off half-written."""
    deadline = time.monotonic() + STOP_GRACE_S
    while query.isActive and query.status.get("isTriggerActive") and (
        time.monotonic() < deadline
    ):
        time.sleep(0.1)
    failure = query.exception()
    if failure is not None:
        raise query_failed(failure, checkpoint) from failure
    query.stop()
    if query.exception() is not None:
        # stop() interrupted a running batch: its transactions are aborted and it is redone
        # on the next start, so this is not a failure of the sink.
        log.warning("the sink stopped during a batch, which the next start redoes")
    log.info("sink query stopped")


def _wait(query: StreamingQuery, stop_event: threading.Event | None, checkpoint: str) -> None:
    try:
        while not query.awaitTermination(POLL_S):
            if stop_event is not None and stop_event.is_set():
                _stop(query, checkpoint)
                return
    except StreamingQueryException as exc:
        raise query_failed(exc, checkpoint) from exc
    failure = query.exception()  # it ended without our stop: someone stopped it, or it failed
    if failure is not None:
        raise query_failed(failure, checkpoint) from failure


def run_sink(
    defn: PipelineDef,
    master: str | None = None,
    stop_event: threading.Event | None = None,
    on_batch: BatchCallback | None = None,
) -> None:
    """Write the changelog topic to the sink topics until ``stop_event`` is set.

    ``on_batch(batch_id, results)`` gets each batch's per-task counters (see
    :func:`~cdc_ingest.sink.writer.write_partition`) once the batch is written. Raises
    :class:`SinkError` when a batch fails; nothing of a failed batch is committed. A
    SparkSession this call creates is stopped at the end; an existing one is reused and kept.
    """
    settings = sink_settings(defn)
    # Kafka is asked once before Spark starts: a broker no one reaches is reported in seconds,
    # not after Spark's start-up (unless a stop comes meanwhile: then nothing is reported)
    try:
        TopicAdmin(client_config(defn.sink.properties),
                   first_contact_s=FIRST_CONTACT_S).partitions(defn.pipeline.changelog_topic)
    except KafkaClientError:
        if stop_event is not None and stop_event.is_set():
            return
        raise
    owns_session = not spark_context_exists()
    spark = spark_session(f"cdc-ingest-sink-{defn.pipeline.id}", master)
    metadata = None
    try:
        changelog = _changelog_topic(defn, stop_event)
        if changelog is None:
            return  # stopped before there was anything to read
        partitions, limit = changelog
        settings = replace(settings, max_message_bytes=limit)
        if (metadata := tx_metadata_writer(defn)) is not None:  # after a batch: BEGIN, END
            metadata.start()
            on_batch = metadata.after(on_batch)
        query = _start_query(spark, defn, settings, partitions, on_batch)
        try:
            _wait(query, stop_event, defn.pipeline.checkpoint_dir)
        finally:
            if query.isActive:  # an exception (KeyboardInterrupt included) got here
                query.stop()
    finally:
        if metadata is not None:
            metadata.close()
        if owns_session:
            spark.stop()


def install_signal_handlers(stop_event: threading.Event) -> None:
    """SIGTERM and SIGINT set ``stop_event``: the sink stops after the running batch."""

    def request_stop(signum: int, frame: FrameType | None) -> None:
        log.info("stop requested (signal %d): stopping after the running batch", signum)
        stop_event.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
