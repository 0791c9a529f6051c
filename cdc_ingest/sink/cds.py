"""A class-data sharing archive for the sink's Spark JVM: start-up without loading Spark's
classes from its jars one by one.

Much of the sink's start is the JVM's: parsing, verifying and linking the classes of Spark,
Hadoop, Kafka's client and Arrow. A dynamic CDS archive (JDK 13+) holds them already parsed
and verified; a JVM started with ``-XX:SharedArchiveFile`` maps it instead. What it saves,
measured: docs/decisions/0002.

The archive is made by a training run (``python -m cdc_ingest.sink.spark fetch`` does it,
which ``scripts/setup.sh`` runs): a SparkSession whose JVM dumps the classes it loaded at
exit, after a streaming query through ``foreachBatch`` and ``mapInArrow`` as the sink runs
and the Kafka source's analysis. It lives in the cache, named after the pyspark version and
the connector jars; the JVM itself checks the rest (same JDK build, same class path) and
ignores an archive that does not match, silently (``-Xshare:auto``, CDS logging off), so a
stale or missing archive costs only the time it would have saved. Nothing is built or
downloaded at start.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyspark

from cdc_ingest.cache import build_once, cache_dir

log = logging.getLogger(__name__)

_QUIET = "-Xshare:auto -Xlog:cds=off -Xlog:cds+dynamic=off"
TRAIN_TIMEOUT_S = 300


def archive_path(jars: list[Path]) -> Path:
    digest = hashlib.blake2b(digest_size=6)
    for jar in jars:
        digest.update(jar.name.encode() + b"\n")
    return cache_dir() / "spark-cds" / f"spark-{pyspark.__version__}-{digest.hexdigest()}.jsa"


def java_options(jars: list[Path]) -> list[str]:
    """The driver JVM options that use the archive, or none when there is none."""
    archive = archive_path(jars)
    if os.environ.get("CDC_INGEST_SPARK_CDS", "on") == "off" or not archive.is_file():
        return []
    return [f"-XX:SharedArchiveFile={archive}", *_QUIET.split()]


def build_archive(jars: list[Path]) -> Path | None:
    """Make the archive by a training run in a child process, unless it is there; None when
    the training run failed (the sink then starts without it, only slower)."""
    began = time.monotonic()

    def train(partial: Path) -> None:
        done = subprocess.run([sys.executable, "-m", "cdc_ingest.sink.cds", str(partial)],
                              capture_output=True, text=True, timeout=TRAIN_TIMEOUT_S,
                              check=False)
        if done.returncode != 0 or not partial.is_file():
            raise RuntimeError(done.stderr.strip()[-600:])

    try:
        archive = build_once(archive_path(jars), train)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        log.warning("no class-data sharing archive for the sink's JVM (the sink starts a few "
                    "seconds slower): the training run failed: %s", exc)
        return None
    log.info("class-data sharing archive for the sink's JVM: %s (%.0f MB, %.0f s)",
             archive, archive.stat().st_size / 1e6, time.monotonic() - began)
    return archive


def _train(out: Path) -> None:
    """The training run: the sink's code paths in a JVM that writes ``out`` at exit."""
    from pyspark import SparkContext  # noqa: PLC0415 - only this child needs them

    from cdc_ingest.sink.spark import spark_session  # noqa: PLC0415 - spark imports cds

    spark = spark_session("cdc-ingest-cds-training", conf={
        "spark.driver.extraJavaOptions": f"-XX:ArchiveClassesAtExit={out} -Xlog:cds=off "
                                         "-Xlog:cds+dynamic=off"})

    def batch(df: object, batch_id: int) -> None:
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
        gateway.proc.wait(120)


def _identity(batches):  # type: ignore[no-untyped-def]
    yield from batches


if __name__ == "__main__":
    import shutil

    target = Path(sys.argv[1])
    try:
        _train(target)
    finally:
        shutil.rmtree(target.parent / f"{target.name}.checkpoint", ignore_errors=True)
