"""What the sink says when its query fails: the innermost Python error of Spark's nested
failure text, and whether the failure passes by itself (``start`` then restarts the sink)."""

from __future__ import annotations

import re

from cdc_ingest import exit_codes
from cdc_ingest.errors import TRANSIENT_EXIT_CODE, SinkError
from cdc_ingest.kafka.errors import KafkaAccessDenied, is_denied

# "RuntimeError: ..." or "cdc_ingest.kafka.errors.FencedError: ..." at the start of a line
_PYTHON_ERROR = re.compile(r"^(?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception): .*$", re.MULTILINE)
_JVM_PACKAGES = ("org.", "java.", "javax.", "scala.", "py4j.", "com.")


def _cause(text: str) -> str:
    """The innermost Python error in a query failure (its text nests tracebacks and JVM
    stack traces), else the failure's first line."""
    python = [m.group(0) for m in _PYTHON_ERROR.finditer(text)
              if not m.group(0).startswith(_JVM_PACKAGES)]
    return python[-1] if python else text.strip().splitlines()[0]


# Failures that pass by themselves: a batch's transaction Kafka aborted after
# transaction.timeout.ms (the sink was frozen), Kafka unreachable past the clients' timeouts.
_TRANSIENT = ("TransactionTimedOut", "org.apache.kafka.common.errors.TimeoutException",
              "ChangelogStalledError")
# a task's changelog records were deleted by retention (sink/task/range_read.py): its own fix
_GONE = "ChangelogGoneError: "


class SinkUnavailable(SinkError):
    """The sink query failed for a reason that passes by itself; ``start`` restarts it."""

    exit_code = TRANSIENT_EXIT_CODE


# Spark's Kafka source finds the checkpoint's offsets beyond the changelog topic's end
_STALE_CHECKPOINT = ("Some data may have been lost", "offset was changed from")


# Spark cannot restart from the checkpoint's offset log: an entry before its last is missing
_MISSING_LOG_ENTRY = re.compile(r"batch (\d+) doesn't exist")


class SinkAccessDenied(SinkError):
    """Kafka's authorizer refused the sink (a task, or Spark's Kafka source) a topic, group
    or transactional id: the message names the ACL to grant."""

    exit_code = exit_codes.KAFKA_DENIED


# the Java client's refusal, in Spark's Kafka source: its class and message
_JAVA_DENIED = re.compile(r"org\.apache\.kafka\.common\.errors\.(\w+AuthorizationException: .*)")
# a task's own (cdc_ingest/kafka/errors.py), pickled through Spark
_TASK_DENIED = re.compile(r"KafkaAccessDenied: (.*)")


def query_failed(exc: BaseException, checkpoint: str = "") -> SinkError:
    text = str(exc)
    if is_denied(text):
        found = _TASK_DENIED.search(text) or _JAVA_DENIED.search(text)
        said = found.group(1) if found else _cause(text)
        return SinkAccessDenied(f"the sink query failed: {KafkaAccessDenied(said)}")
    missing = _MISSING_LOG_ENTRY.search(text)
    if missing:
        return SinkError(
            f"the sink query failed: the Spark checkpoint "
            f"{checkpoint or '(pipeline.checkpoint.dir)'} is damaged: its offset log has no "
            f"entry for batch {missing.group(1)}, which a restart needs (files of it were "
            "lost: it was deleted while a killed sink's Spark JVM was still writing it, or "
            "the disk lost them). Nothing was written. Fix: stop the pipeline, delete that "
            "checkpoint directory and start again: the sink then resumes from its group's "
            "committed offsets in Kafka (exactly-once is kept)")
    if all(m in text for m in _STALE_CHECKPOINT):
        return SinkError(
            "the sink query failed: the Spark checkpoint "
            f"{checkpoint or '(pipeline.checkpoint.dir)'} holds offsets beyond the end of the "
            "changelog topic, so it belongs to an earlier topic of this name (Kafka or the "
            "topic was recreated, or another pipeline with this pipeline.name ran against "
            "another Kafka). Nothing was written. Fix: stop the pipeline, delete that "
            "checkpoint directory and start again: the sink then resumes from its group's "
            "committed offsets in Kafka (exactly-once is kept), or set pipeline.state.dir / "
            "checkpoint.dir apart for each Kafka cluster")
    if _GONE in text:
        return SinkError(f"the sink query failed: {_cause(text).split(_GONE, 1)[-1]}")
    if "PYTHON_VERSION_MISMATCH" in text or "Python in worker has different version" in text:
        return SinkError(
            f"the sink query failed: {_cause(text)}. The sink ships its libraries to the "
            "executors compiled for its own Python. Fix: give the executors a Python of the "
            "sink's minor version (python3 on their PATH, or PYSPARK_PYTHON in the sink's "
            "environment naming one that every executor host has)")
    if "ModuleNotFoundError" in text:
        return SinkError(
            f"the sink query failed: {_cause(text)} in Spark's Python workers. Fix: with "
            "--master the sink ships cdc_ingest and its libraries itself; under spark-submit "
            "add the options `python -m cdc_ingest.sink.runtime.executor_files` prints "
            "(docs/operations.md, "
            "Scaling out)")
    kind = SinkUnavailable if any(m in text for m in _TRANSIENT) else SinkError
    return kind(
        f"the sink query failed: {_cause(text)}\n(Spark's log above has the details; "
        "--debug shows them all.) Fix the cause and start the sink again: it resumes from its "
        "checkpoint and the sink group's committed offsets."
    )
