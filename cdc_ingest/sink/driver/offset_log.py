"""A micro-batch's changelog offset ranges, from the query's checkpoint (decision 0016).

Before it runs batch N, Spark writes the Kafka source's end offsets of N to
``<checkpoint>/offsets/N``; the batch starts where batch N-1 ended (``offsets/N-1``) or, for
the query's first batch, at the source's initial offsets (``sources/0/0``). That is how Spark's
own Kafka source computes the ranges of its tasks, also when a restart re-runs an uncommitted
batch, so these are exactly the records Spark would have handed to ``foreachBatch``.

Both files are read through Hadoop, as Spark writes them, unless the checkpoint is on the local
disk (read directly).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from cdc_ingest.errors import SinkError
from cdc_ingest.sink.task.range_read import ChangelogRange

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

EARLIEST = -2  # a partition the previous batch did not have starts at its earliest offset


def local_path(path: str) -> str | None:
    """``path`` on the local disk (a plain path or a ``file:`` URL), else None (HDFS, S3)."""
    url = urlparse(path)
    if url.scheme not in ("", "file"):
        return None
    return url.path if url.scheme else path


def _read(spark: SparkSession, path: str) -> str:
    local = local_path(path)
    if local is not None:
        with open(local, "rb") as f:
            return f.read().decode("utf-8", errors="replace")
    sc = spark.sparkContext
    jvm = sc._jvm
    assert jvm is not None
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    stream = hadoop_path.getFileSystem(sc._jsc.hadoopConfiguration()).open(hadoop_path)
    try:
        return str(jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
    finally:
        stream.close()


def source_offsets(text: str, topic: str) -> dict[int, int]:
    """The Kafka source's offsets of ``topic`` in an offset-log entry (a version line, the
    batch's metadata, then one JSON line per source) or the initial-offsets file."""
    for raw in reversed(text.splitlines()):
        line = raw.strip().lstrip("\x00")
        if not line.startswith("{"):
            continue
        value = json.loads(line)
        if isinstance(value, dict) and isinstance(value.get(topic), dict):
            return {int(p): int(o) for p, o in value[topic].items()}
    raise SinkError(f"no offsets of the changelog topic {topic} in this checkpoint file")


def batch_ranges(spark: SparkSession, checkpoint: str, batch_id: int,
                 topic: str) -> list[ChangelogRange]:  # fmt: skip
    """Batch ``batch_id``'s non-empty ranges, one per changelog partition that has records."""
    base = checkpoint.rstrip("/")
    files = [f"{base}/offsets/{batch_id}",
             f"{base}/offsets/{batch_id - 1}" if batch_id > 0 else f"{base}/sources/0/0"]
    offsets = []
    for path in files:
        try:
            offsets.append(source_offsets(_read(spark, path), topic))
        except (OSError, SinkError, ValueError) as exc:
            raise SinkError(
                f"cannot read the offsets of batch {batch_id} from the Spark checkpoint "
                f"{checkpoint}: {path}: {exc}. Fix: stop the pipeline, delete that checkpoint "
                "directory and start again: the sink then resumes from its group's committed "
                "offsets in Kafka (exactly-once is kept)") from exc
    end, start = offsets
    return [ChangelogRange(p, start.get(p, EARLIEST), e) for p, e in sorted(end.items())
            if e > max(start.get(p, EARLIEST), 0)]
