"""The sink's Structured Streaming query: changelog topic -> ``foreachBatch`` -> sink topics.

The Spark Kafka source plans each micro-batch: one offset range per changelog partition,
logged in the checkpoint before the batch runs. ``foreachBatch`` runs one task per range;
the task reads its range itself, read_committed with librdkafka
(:mod:`cdc_ingest.sink.task.range_read`, decision 0016: the records never pass through the JVM),
and hands them to :func:`~cdc_ingest.sink.task.writer.write_partition`, which with ``exactly-once``
writes them in transactions that also commit the partition's next offset (exactly-once hop 2,
docs/architecture.md). ``minPartitions`` / ``maxRecordsPerPartition`` are never set: a
partition's range is one task under one transactional id.

Each task returns its counters as one JSON string.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from types import FrameType

from pyspark.errors import AnalysisException, StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from cdc_ingest import metrics
from cdc_ingest.config import PipelineDef
from cdc_ingest.errors import SinkError
from cdc_ingest.kafka import KafkaClientError
from cdc_ingest.kafka.config import java_client_config
from cdc_ingest.model.names import spark_group_prefix
from cdc_ingest.sink.driver.failures import query_failed
from cdc_ingest.sink.driver.head_start import HeadStart, past_head_start
from cdc_ingest.sink.driver.metadata_writer import tx_metadata_writer
from cdc_ingest.sink.driver.offset_log import batch_ranges
from cdc_ingest.sink.driver.startup import (
    Changelog,
    changelog,
    start_from,
    warm_python_workers,
)
from cdc_ingest.sink.driver.stopping import is_stop_before_batch, refuse_new_batch, stop_query
from cdc_ingest.sink.driver.task_settings import sink_settings
from cdc_ingest.sink.runtime import class_data_sharing as cds
from cdc_ingest.sink.runtime.connector_jars import CONNECTOR
from cdc_ingest.sink.runtime.session import (
    SessionLaunch,
    local_checkpoint_manager,
    spark_context_exists,
)
from cdc_ingest.sink.settings import SinkSettings
from cdc_ingest.sink.task.range_read import read_task
from cdc_ingest.sink.task.record_loop import BatchCallback, Counters, summary
from cdc_ingest.sink.task.writer import write_partition

log = logging.getLogger(__name__)


POLL_S = 1  # how often the waiting loop looks at the stop event
FIRST_TX_ROWS = 2_000  # a task's first transaction in the first batch (_batch_writer)

# Kafka settings Spark's Kafka source manages itself (it refuses most of them at start).
_NOT_FOR_SPARK = {
    "auto.offset.reset": "the start comes from the checkpoint or the sink group's offsets",
    "enable.auto.commit": "the sink commits its offsets inside its own transactions",
    "interceptor.classes": "Spark's Kafka source does not allow consumer interceptors",
    "isolation.level": "the sink always reads read_committed",
}


def source_options(defn: PipelineDef, start: str | None) -> dict[str, str]:
    """Options of the Spark Kafka source; every ``properties.*`` (TLS, SASL) goes to it."""
    options: dict[str, str] = {}
    java, _ = java_client_config(defn.sink.properties)  # validate reports what it cannot map
    for name, value in java.items():
        if name in _NOT_FOR_SPARK:
            log.warning("properties.%s is not given to Spark's Kafka source: %s",
                        name, _NOT_FOR_SPARK[name])
        else:
            options[f"kafka.{name}"] = value
    options.update({
        "subscribe": defn.pipeline.changelog_topic,
        # its consumers' groups under the pipeline's prefix, as every group of it is
        "groupIdPrefix": spark_group_prefix(defn.transactional_id_prefix),
        "kafka.isolation.level": "read_committed",
        # The changelog is ours and must be complete: records deleted by retention before
        # the sink wrote them are lost changes, so the query stops and says so instead of
        # silently skipping them. Offsets missing because of transaction markers or aborted
        # transactions are not data loss to Spark (it checks the earliest offset).
        "failOnDataLoss": "true",
    })  # fmt: skip
    if defn.pipeline.max_offsets_per_trigger:
        options["maxOffsetsPerTrigger"] = str(defn.pipeline.max_offsets_per_trigger)
    if start is not None:
        options["startingOffsets"] = start
    return options


def _batch_writer(
    spark: SparkSession, checkpoint: str, settings: SinkSettings,
    on_batch: BatchCallback | None, head: HeadStart | None = None,
    stop_event: threading.Event | None = None,
) -> Callable[[DataFrame, int], None]:  # fmt: skip
    # the first batch after a start may hold a whole backlog: its first transactions are
    # small, so the first changes are visible soon (settings.first_tx_rows)
    first = [replace(settings, first_tx_rows=FIRST_TX_ROWS)]
    # what the head start committed: batches planned before it stopped leave it out
    head_wrote: list[Counters] = []

    def write_batch(df: DataFrame, batch_id: int) -> None:
        del df  # its records are read by the tasks themselves (sink/task/range_read.py)
        refuse_new_batch(spark, stop_event, batch_id)  # stop requested: the next start writes it
        if head is not None and (done := head.stop()):  # the first batch's only
            head_wrote.extend(done)
            metrics.record_sink_writes(done)  # the driver's own writes before this batch
        began = time.monotonic()
        now = first.pop() if first else settings
        ranges = batch_ranges(spark, checkpoint, batch_id, settings.changelog_topic)
        if head_wrote:
            ranges = past_head_start(ranges, head_wrote)
        results: list[Counters] = []
        if ranges:
            # The writer is looked up here, on the driver, and pickled into the tasks.
            task = partial(read_task, write_partition, now)
            rdd = spark.sparkContext.parallelize(ranges, len(ranges))
            results = [Counters.from_json(r) for r in rdd.mapPartitions(task).collect()]
        log.info("batch %d: %s", batch_id, summary(results, time.monotonic() - began))
        metrics.record_sink_writes(results)
        if on_batch is not None:
            on_batch(batch_id, results)

    return write_batch


def _start_query(
    spark: SparkSession, defn: PipelineDef, settings: SinkSettings, found: Changelog,
    on_batch: BatchCallback | None, head: HeadStart | None,
    stop_event: threading.Event | None,
) -> StreamingQuery:  # fmt: skip
    options = source_options(defn, start_from(spark, defn, settings, found))
    try:
        changelog = spark.readStream.format("kafka").options(**options).load()
    except AnalysisException as exc:
        raise SinkError(
            f"Spark has no Kafka source ({exc}). Fix: under spark-submit pass --packages "
            f"org.apache.spark:{CONNECTOR}:<your Spark version>"
        ) from exc
    writer = (
        changelog.writeStream.foreachBatch(
            _batch_writer(spark, defn.pipeline.checkpoint_dir, settings, on_batch, head,
                          stop_event))
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


def _wait(spark: SparkSession, query: StreamingQuery, stop_event: threading.Event | None,
          checkpoint: str) -> None:  # fmt: skip
    try:
        while not query.awaitTermination(POLL_S):
            if stop_event is not None and stop_event.is_set():
                stop_query(spark, query, checkpoint)
                return
    except StreamingQueryException as exc:
        failure: BaseException | None = exc
    else:  # it ended without our stop: someone stopped it, or it failed
        failure = query.exception()
    if failure is None:
        return
    if stop_event is not None and stop_event.is_set() and is_stop_before_batch(failure):
        log.info("sink query stopped before its next batch, which the next start writes")
        return
    raise query_failed(failure, checkpoint) from failure


def run_sink(
    defn: PipelineDef,
    master: str | None = None,
    stop_event: threading.Event | None = None,
    on_batch: BatchCallback | None = None,
    launch: SessionLaunch | None = None,
) -> None:
    """Write the changelog topic to the sink topics until ``stop_event`` is set.

    ``on_batch(batch_id, results)`` gets each batch's per-task counters (see
    :func:`~cdc_ingest.sink.task.writer.write_partition`) once the batch is written; the
    metrics count them, and the head start's, themselves. Raises
    :class:`SinkError` when a batch fails; nothing of a failed batch is committed. A
    SparkSession this call creates is stopped at the end; an existing one is reused and kept.
    ``launch``: the session already being started (``cdc-ingest sink``), for ``master``.
    """
    settings = sink_settings(defn)
    owns_session = launch is not None or not spark_context_exists()
    # Spark's JVM starts in a thread now (if not yet), while this thread asks Kafka
    # (sink/driver/startup.py)
    launch = launch or SessionLaunch(f"cdc-ingest-sink-{defn.pipeline.id}", master)
    spark: SparkSession | None = None
    metadata = head = None
    try:
        try:
            found = changelog(defn, settings, stop_event)
        except KafkaClientError:
            if stop_event is not None and stop_event.is_set():
                return  # stopped while Kafka was being asked: nothing to report
            raise
        if found is None:
            return  # stopped before there was anything to read
        settings = replace(settings, max_message_bytes=found.max_message_bytes)
        if defn.pipeline.head_start:  # the driver writes until the first batch (decision 0017)
            head = HeadStart(write_partition, replace(settings, first_tx_rows=FIRST_TX_ROWS),
                             found.partitions, found.committed).start()
        spark = launch.session()
        warm_python_workers(spark)
        if (metadata := tx_metadata_writer(defn)) is not None:  # after a batch: BEGIN, END
            metadata.start()
            on_batch = metadata.after(on_batch)
        on_batch = cds.after_first_batch(on_batch)  # builds a missing CDS archive, once
        query = _start_query(spark, defn, settings, found, on_batch, head, stop_event)
        try:
            _wait(spark, query, stop_event, defn.pipeline.checkpoint_dir)
        finally:
            if query.isActive:  # an exception (KeyboardInterrupt included) got here
                query.stop()
    finally:
        if head is not None:
            head.stop()
        if metadata is not None:
            metadata.close()
        if owns_session:
            if spark is None:  # Kafka failed first: the JVM is stopped once it is up
                launch.discard()
            else:
                spark.stop()


def install_signal_handlers(stop_event: threading.Event) -> None:
    """SIGTERM and SIGINT set ``stop_event``: the sink stops after the running batch."""

    def request_stop(signum: int, frame: FrameType | None) -> None:
        log.info("stop requested (signal %d): stopping after the running batch", signum)
        stop_event.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
