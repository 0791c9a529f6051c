"""How the sink's query stops: between batches, so no batch is cut off half-written, and
quietly, because a requested stop is not a failure.

A stop request (the ``stop_event`` of :func:`~cdc_ingest.sink.driver.query.run_sink`) acts in
two places:

- the batch function refuses to begin a batch once it is set (:func:`refuse_new_batch` raises
  :class:`StopBeforeBatch` before anything is written). Spark has logged the batch's offsets
  in the checkpoint and never commits the batch, so the next start writes it: nothing is lost
  or written twice;
- :func:`stop_query` lets a batch already running finish (up to ``STOP_GRACE_S``), then stops
  the query. Only a batch still running after that is interrupted (its Kafka transactions are
  never committed; the next start redoes it).

Without the first, a batch Spark began between the waiting loop's look and ``stop()`` was
interrupted in the middle of a Spark job, and py4j and Spark printed pages of stack traces
(the JVM's stream thread even overflowed its stack matching a regex against the Python
traceback) at every such stop. py4j logs the batch function's exception with its traceback,
and Spark logs "Query terminated with error": once a stop is requested, both stay silent
about :class:`StopBeforeBatch`, and any other failure still reaches the caller.
"""

from __future__ import annotations

import logging
import threading
import time

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from cdc_ingest.sink.driver.failures import query_failed
from cdc_ingest.sink.runtime.session import log4j_levels

log = logging.getLogger(__name__)

STOP_GRACE_S = 30.0  # how long a stop waits for the running batch to finish
_WAIT_S = 0.1

# where Spark logs a query's failure ("Query [...] terminated with error"), Spark 4.0 and 4.1
_QUERY_LOGGERS = (
    "org.apache.spark.sql.execution.streaming.MicroBatchExecution",
    "org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution",
)


class StopBeforeBatch(Exception):
    """A batch the sink did not begin because a stop was requested; the next start writes it."""

    def __init__(self, batch_id: int) -> None:
        super().__init__(f"stop requested: batch {batch_id} is left to the next start")
        self.batch_id = batch_id


def refuse_new_batch(spark: SparkSession, stop_event: threading.Event | None,
                     batch_id: int) -> None:  # fmt: skip
    """In the batch function, before it writes anything."""
    if stop_event is not None and stop_event.is_set():
        quiet_stop(spark)
        raise StopBeforeBatch(batch_id)


def is_stop_before_batch(failure: BaseException | None) -> bool:
    """Whether the query ended by :class:`StopBeforeBatch` (its text crossed the JVM)."""
    return failure is not None and StopBeforeBatch.__name__ in str(failure)


class _DropStopBeforeBatch(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, StopBeforeBatch)


_PY4J_FILTER = _DropStopBeforeBatch()


def quiet_stop(spark: SparkSession) -> None:
    """Once a stop is requested: keep py4j's traceback of :class:`StopBeforeBatch` out of the
    log, and Spark's report of the query's end (the sink reports a failure itself)."""
    logging.getLogger("py4j.clientserver").addFilter(_PY4J_FILTER)  # once: a set
    log4j_levels(spark, _QUERY_LOGGERS, "OFF")


def stop_query(spark: SparkSession, query: StreamingQuery, checkpoint: str) -> None:
    """Stop between batches when possible (the stop event is already set: no batch begins)."""
    quiet_stop(spark)
    deadline = time.monotonic() + STOP_GRACE_S
    while query.isActive and query.status.get("isTriggerActive") and (
        time.monotonic() < deadline
    ):
        time.sleep(_WAIT_S)
    failure = query.exception()
    if failure is not None and not is_stop_before_batch(failure):
        raise query_failed(failure, checkpoint) from failure
    query.stop()
    failure = query.exception()
    if failure is not None and not is_stop_before_batch(failure):
        # stop() interrupted a batch running past the grace: its transactions are aborted
        # and it is redone on the next start, so this is not a failure of the sink.
        log.warning("the sink stopped during a batch that ran over %.0f s; the next start "
                    "redoes it", STOP_GRACE_S)
    log.info("sink query stopped")
