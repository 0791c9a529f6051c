"""The class-data sharing archive's training run
(:mod:`cdc_ingest.sink.runtime.class_data_sharing`), in a process
of its own: ``python -m cdc_ingest.sink.runtime.class_data_training <archive> [--background]``.

A SparkSession whose JVM dumps the classes it loaded at exit, after a streaming query through
``foreachBatch`` with a Python RDD job per batch as the sink runs, ``mapInArrow`` as its
workers' warm-up, and the Kafka source's analysis (no broker is contacted). The JVM writes
``.<archive name>.<pid>`` beside the archive, which is renamed into place when the run
succeeded; older archives are then removed. A failure writes ``<archive>.failed`` (when, and
why), which keeps the sink from trying again for a day. Whoever starts this holds the build
lock for it (it takes none). ``--background``: at the lowest CPU priority, as the sink starts
it.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from pyspark import SparkContext

from cdc_ingest.sink.runtime import class_data_sharing as cds
from cdc_ingest.sink.runtime.session import spark_session

log = logging.getLogger(__name__)


def train(out: Path) -> None:
    """The training run: the sink's code paths in a JVM that writes ``out`` at exit."""
    spark = spark_session("cdc-ingest-cds-training", conf={
        "spark.driver.extraJavaOptions": f"-XX:ArchiveClassesAtExit={out} -Xlog:cds=off "
                                         "-Xlog:cds+dynamic=off"})

    def batch(df: object, batch_id: int) -> None:
        # a batch's tasks (job._batch_writer: one Python task per offset range) ...
        spark.sparkContext.parallelize([(0, 0, batch_id + 1)], 1).mapPartitions(
            _identity).collect()
        # ... and the Python workers' warm-up (startup.warm_python_workers)
        df.selectExpr("CAST(value AS INT) AS partition",  # type: ignore[attr-defined]
                      "value AS offset", "CAST(CAST(value AS STRING) AS BINARY) AS key",
                      "CAST(CAST(timestamp AS STRING) AS BINARY) AS value").mapInArrow(
            _identity, "partition int, offset long, key binary, value binary").collect()

    # the Kafka source's classes, as far as analysis loads them (no broker is contacted)
    spark.readStream.format("kafka").option("kafka.bootstrap.servers", "127.0.0.1:9") \
        .option("subscribe", "cds-training").load().printSchema()
    query = (spark.readStream.format("rate").option("rowsPerSecond", 1000).load()
             .writeStream.foreachBatch(batch).trigger(processingTime="200 milliseconds")
             .option("checkpointLocation", str(out.parent / f"{out.name}.checkpoint"))
             .start())
    deadline = time.monotonic() + 60

    def batches() -> int:
        progress: dict[str, Any] = query.lastProgress or {}
        return int(progress.get("batchId", -1))

    while query.isActive and batches() < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    while query.isActive and query.status.get("isTriggerActive") and (
            time.monotonic() < deadline):
        time.sleep(0.05)  # between batches, as the sink stops
    failure = query.exception()
    query.stop()
    if failure is not None:
        raise RuntimeError(f"the training query failed: {failure}")
    spark.stop()
    gateway = SparkContext._gateway
    if gateway is not None and getattr(gateway, "proc", None) is not None:
        gateway.shutdown()
        gateway.proc.stdin.close()  # the JVM exits at end of input, writing the archive
        if gateway.proc.wait(120) != 0:
            raise RuntimeError(f"the training JVM exited with {gateway.proc.returncode}")


def _identity(batches):  # type: ignore[no-untyped-def]
    yield from batches


STALE_PARTIAL_S = 3600  # a partial archive this old belongs to a build that died


def remove_stale_partials(folder: Path) -> None:
    """Partial archives (``.<name>.<pid>``) of builds that died, older than an hour."""
    for partial in folder.glob(".spark-*.jsa.*"):
        try:
            if time.time() - partial.stat().st_mtime > STALE_PARTIAL_S:
                if partial.is_dir():  # a training query's checkpoint
                    shutil.rmtree(partial)
                else:
                    partial.unlink()
                log.info("removed %s, left by a build that did not finish", partial)
        except OSError:
            pass


def install(partial: Path, archive: Path) -> None:
    """``partial`` renamed to ``archive``; older archives, their logs and failures removed."""
    os.replace(partial, archive)
    cds.failed_file(archive).unlink(missing_ok=True)
    for old in archive.parent.glob("spark-*.jsa*"):
        if not old.name.startswith(archive.name):
            old.unlink(missing_ok=True)


def build(archive: Path) -> int:
    """Train, install; on failure ``<archive>.failed``. The exit code: 0 when it is there."""
    cds.STATE.training = True
    archive.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_partials(archive.parent)
    partial = archive.with_name(f".{archive.name}.{os.getpid()}")
    began = time.monotonic()
    log.info("building %s (pid %d)", archive, os.getpid())
    try:
        train(partial)
        if not partial.is_file():
            raise RuntimeError("the training JVM wrote no archive")
        install(partial, archive)
    except Exception as exc:  # any failure is recorded; an interrupt is none
        log.exception("the training run failed")
        reason = f"{type(exc).__name__}: {exc}".strip()[-600:]
        cds.failed_file(archive).write_text(
            f"{time.ctime()}\n{reason}\nlog: {archive.name}.log\nto try again now: "
            f"{cds.FETCH}\n")
        return 1
    finally:
        partial.unlink(missing_ok=True)
        shutil.rmtree(partial.parent / f"{partial.name}.checkpoint", ignore_errors=True)
    log.info("built %s (%.0f MB) in %.0f s", archive, archive.stat().st_size / 1e6,
             time.monotonic() - began)
    return 0


if __name__ == "__main__":
    if "--background" in sys.argv[2:]:
        os.nice(19)  # before any thread or child: the JVM and Python workers inherit it
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: "
                        "%(message)s")
    sys.exit(build(Path(sys.argv[1])))
