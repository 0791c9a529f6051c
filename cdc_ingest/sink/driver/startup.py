"""The sink's start, overlapped: what it needs from Kafka is asked while Spark's JVM starts.

Most of a sink's start is the JVM's (the ``spark-submit`` launch, then Spark's classes), and it
needs no answer from Kafka. So the SparkSession starts in a thread at once
(:class:`~cdc_ingest.sink.runtime.session.SessionLaunch`; ``cdc-ingest sink`` starts it before it
even reads the pipeline file), while the calling thread asks Kafka what the query needs: the
changelog topic (waiting for capture to create it), its size limit, and, when the checkpoint has no
offsets yet, the sink group's committed offsets (each partition's transactional id registered first,
see :func:`~cdc_ingest.sink.task.writer.committed_offsets`). Once the session is up,
:func:`warm_python_workers` starts the Python workers with a throwaway job while the query plans its
first batch, so the first batch's tasks find them started and their modules imported. What each step
saves, measured: docs/decisions/0015.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from cdc_ingest.config import PipelineDef
from cdc_ingest.kafka import TopicAdmin
from cdc_ingest.kafka.admin import FIRST_CONTACT_S
from cdc_ingest.kafka.limits import FLOOR
from cdc_ingest.sink.driver.offset_log import local_path
from cdc_ingest.sink.driver.old_names import carry_over
from cdc_ingest.sink.settings import SinkSettings
from cdc_ingest.sink.task.writer import committed_offsets

log = logging.getLogger(__name__)

EARLIEST = -2  # Spark's startingOffsets code for "the partition's earliest offset"
# how often to look for the changelog topic until capture creates it: soon at first (under
# ``start`` capture creates it while the sink starts), then at most every TOPIC_POLL_MAX_S
TOPIC_POLL_S = 0.1
TOPIC_POLL_MAX_S = 1.0
WARM_UP = "cdc-ingest: start the Python workers"


@dataclass(frozen=True)
class Changelog:
    """What the query needs to know before it starts."""

    partitions: int
    max_message_bytes: int  # the topic's max.message.bytes: a sink value, one row image, fits
    # the sink group's committed offsets, when read before the session was up (a local
    # checkpoint without offsets); None: decide once the session is up
    committed: Mapping[int, int] | None


def local_checkpoint_has_offsets(checkpoint: str) -> bool | None:
    """Whether a checkpoint on the local disk has offsets; None for any other file system
    (HDFS, S3: asked through Spark's Hadoop once the session is up)."""
    local = local_path(checkpoint)
    if local is None:
        return None
    try:
        names = os.listdir(os.path.join(local, "offsets"))
    except FileNotFoundError:
        return False
    except OSError:
        return None  # let Spark's file system say what is wrong with it
    return any(name.isdigit() for name in names)


def changelog(defn: PipelineDef, settings: SinkSettings,
              stop_event: threading.Event | None) -> Changelog | None:
    """The changelog topic's partitions and size limit once capture has created it, and the
    committed offsets when they decide the start; None if stopped meanwhile.

    The first contact is bounded, so a broker nobody reaches is reported in seconds. Spark's
    Kafka source fails a query whose topic does not exist, and ``start`` runs capture and the
    sink side by side, so the sink waits for it instead."""
    topic = defn.pipeline.changelog_topic
    admin = TopicAdmin(defn.kafka_config(), first_contact_s=FIRST_CONTACT_S)
    stop = stop_event or threading.Event()
    wait = TOPIC_POLL_S
    while (partitions := admin.partitions(topic)) is None:
        if wait == TOPIC_POLL_S:
            log.info("waiting for the changelog topic %s: capture creates it", topic)
        if stop.wait(wait):
            return None
        wait = min(TOPIC_POLL_MAX_S, wait * 2)
    limit = admin.topic_config(topic).get("max.message.bytes")
    carry_over(defn, partitions)  # before anything reads the sink group's offsets
    committed = None
    if local_checkpoint_has_offsets(defn.pipeline.checkpoint_dir) is False:
        committed = committed_offsets(settings)
    return Changelog(partitions, max(FLOOR, int(limit or 0)), committed)


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


def starting_offsets(topic: str, partitions: int, committed: Mapping[int, int]) -> str:
    """Spark's ``startingOffsets`` JSON: the committed offset per partition, else earliest."""
    return json.dumps({topic: {str(p): committed.get(p, EARLIEST) for p in range(partitions)}})


def start_from(spark: SparkSession, defn: PipelineDef, settings: SinkSettings,
               found: Changelog) -> str | None:
    """``startingOffsets`` when the checkpoint has none, so losing it costs no re-reading."""
    topic, checkpoint = defn.pipeline.changelog_topic, defn.pipeline.checkpoint_dir
    committed = found.committed  # read only when a local checkpoint had no offsets
    if committed is None:
        if _checkpoint_has_offsets(spark, checkpoint):
            log.info("resuming %s from the Spark checkpoint in %s", topic, checkpoint)
            return None
        committed = committed_offsets(settings)
    log.info("no offsets in the Spark checkpoint %s: starting %s from the sink group's "
             "committed offsets %s (partitions without one: earliest)",
             checkpoint, topic, dict(sorted(committed.items())))
    return starting_offsets(topic, found.partitions, committed)


def warm_python_workers(spark: SparkSession) -> threading.Thread:
    """Start the Python workers with a throwaway job, one task per slot, in a thread: the
    first batch's tasks then reuse them (``spark.python.worker.reuse``), its modules imported.
    The job writes nothing and registers no transactional id (that would fence a real task);
    when it fails, only the first batch pays the workers' start, as without it."""

    def run() -> None:
        began = time.monotonic()
        try:
            sc = spark.sparkContext
            sc.setJobDescription(WARM_UP)  # a thread's own property (pinned threads)
            slots = max(1, sc.defaultParallelism)
            spark.range(0, slots, 1, slots).mapInArrow(_import_task_modules, "id long") \
                .collect()
            log.info("Python workers started in %.2f s", time.monotonic() - began)
        except Exception as exc:  # noqa: BLE001 - the first batch starts them itself then
            log.debug("could not start the Python workers ahead of the first batch: %s", exc)

    thread = threading.Thread(target=run, name="python-workers-warm-up", daemon=True)
    thread.start()
    return thread


def _import_task_modules(batches: Iterable[Any]) -> Iterable[Any]:
    """In a Python worker: import what a sink task runs, and return nothing."""
    import cdc_ingest.sink.task.columns  # noqa: PLC0415 - the point of the job
    import cdc_ingest.sink.task.writer  # noqa: F401, PLC0415

    for _ in batches:
        pass
    return iter(())
