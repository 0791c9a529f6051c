"""The Spark session for the sink, with the Kafka connector jars it needs from Maven Central
(:mod:`cdc_ingest.sink.runtime.connector_jars`).

``python -m cdc_ingest.sink.runtime.session fetch`` downloads the jars ahead of time (tests,
images).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pyspark
from pyspark import SparkContext
from pyspark.sql import SparkSession

from cdc_ingest import maven
from cdc_ingest.sink.runtime import class_data_sharing as cds
from cdc_ingest.sink.runtime.connector_jars import fetch_spark_kafka_jars
from cdc_ingest.sink.runtime.executor_files import executor_settings

log = logging.getLogger(__name__)

DEFAULT_MASTER = "local[*]"
# The driver's JVM compiles with C1 only: C2's compiler threads compete with capture and the
# first batch for the cores at start, and the sink's JVM work per record (Kafka fetch, Arrow
# conversion) is small next to the Python writer's (what it saves, measured:
# docs/decisions/0002). $CDC_INGEST_SPARK_JAVA_OPTIONS replaces it ("" for the JVM default).
DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"


def spark_context_exists() -> bool:
    """True when this process already has a SparkContext (a test, a notebook, spark-submit)."""
    return SparkContext._active_spark_context is not None


def _under_spark_submit() -> bool:
    # spark-submit starts the JVM first and hands pyspark its gateway through the environment;
    # then master, jars and memory are already decided by the spark-submit command line.
    return spark_context_exists() or "PYSPARK_GATEWAY_PORT" in os.environ


def is_local(master: str | None) -> bool:
    """True for a local master (None: the default, local[*])."""
    master = master or DEFAULT_MASTER
    return master == "local" or master.startswith("local[")


# Source options whose key or value matches are shown as *********(redacted) in plans, logs
# and the UI: Spark's own (`url`), and the Kafka logins and keys (kafka/java_client.py puts a
# client key inline); Spark's spark.redaction.regex (secret, password, token) applies too.
REDACTED_OPTIONS = r"(?i)url|jaas|keystore\.key|sasl\.oauthbearer|BEGIN [A-Z ]*PRIVATE KEY"


def _settings(master: str) -> dict[str, str]:
    jars = fetch_spark_kafka_jars()
    settings = {
        "spark.jars": ",".join(str(p) for p in jars),
        # Local mode runs the Kafka consumers in the driver JVM; 2g leaves room for MariaDB,
        # Kafka and capture on a small (2 cores, 24 GiB) machine. Python workers are extra.
        "spark.driver.memory": "2g",
        # Reused Python workers: the writer makes a transactional producer per task (never
        # cached across tasks, since a partition's next task may land in another worker and
        # fence it), so reuse only saves the worker's start-up.
        "spark.python.worker.reuse": "true",
        "spark.sql.shuffle.partitions": "2",  # the sink never shuffles
        "spark.log.level": "WARN",
        "spark.ui.showConsoleProgress": "false",  # progress bars would garble the log
        "spark.sql.adaptive.enabled": "false",  # streaming turns it off anyway, with a warning
        # With trigger.interval 0 an idle query asks Kafka for the changelog's ends after
        # every pollingDelay (Spark's default 10 ms), which kept the idle sink's JVM and the
        # broker busy; 50 ms costs an idle query at most 50 ms more before it sees a new
        # change, and busy batches run back to back anyway (measured: docs/decisions/0010).
        "spark.sql.streaming.pollingDelay": "50ms",
        "spark.sql.redaction.options.regex": REDACTED_OPTIONS,
    }
    # the JIT choice, and Spark's classes from the CDS archive (when missing: a WARNING, and
    # its build planned for after the first batch, cds.after_first_batch)
    java_options = [os.environ.get("CDC_INGEST_SPARK_JAVA_OPTIONS", DRIVER_JAVA_OPTIONS),
                    *cds.java_options(jars)]
    settings["spark.driver.extraJavaOptions"] = " ".join(o for o in java_options if o)
    if is_local(master):
        settings.update({
            "spark.ui.enabled": "false",
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            # the workers import pyspark from its package, not from the zip copy Spark puts
            # first on their path: less CPU per task and per worker start (docs/decisions/0010)
            "spark.python.daemon.module": "cdc_ingest.sink.runtime.worker_daemon",
        })  # fmt: skip
    else:
        # a cluster's executors get cdc_ingest and its libraries from us, not from their Python
        settings.update(executor_settings())
    return settings


def spark_session(
    app_name: str, master: str | None = None, conf: dict[str, str] | None = None
) -> SparkSession:
    """A SparkSession for the sink: ``local[*]`` with the Kafka connector unless told otherwise.

    ``master`` picks another master (``local[2]``, ``spark://host:7077``); the connector jars,
    and for a cluster cdc_ingest with its libraries
    (:mod:`cdc_ingest.sink.runtime.executor_files`), are then
    shipped to its executors. Under ``spark-submit`` (or when this process already
    has a SparkContext) the existing master, jars and memory settings stay as they are: pass
    ``--packages org.apache.spark:spark-sql-kafka-0-10_2.13:<spark version>`` there.
    ``conf`` entries win over ours.

    A SIGINT handler that the caller installed survives: pyspark would replace it with one
    that cancels every job and raises KeyboardInterrupt, but the sink stops between batches.
    """
    builder = SparkSession.builder.appName(app_name)
    if master is None and _under_spark_submit():
        for key, value in (conf or {}).items():
            builder = builder.config(key, value)
        return builder.getOrCreate()
    master = master or DEFAULT_MASTER
    if is_local(master):
        # the Python workers must import cdc_ingest from this very environment
        os.environ["PYSPARK_PYTHON"] = sys.executable
        # the JVM reads it at launch; else it warns that the hostname is a loopback address
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # what pyspark finds anyway; set, spark-submit's script does not start a Python
        # process to find it again
        os.environ.setdefault("SPARK_HOME", str(Path(pyspark.__file__).parent))
    settings = {**_settings(master), **(conf or {})}
    for key, value in settings.items():
        builder = builder.config(key, value)
    caller_sigint = signal.getsignal(signal.SIGINT)
    session = builder.master(master).getOrCreate()
    _restore_sigint(caller_sigint)
    session.sparkContext.setLogLevel(settings["spark.log.level"])
    _quiet(session)
    # py4j logs every foreachBatch callback at INFO
    logging.getLogger("py4j").setLevel(logging.WARNING)
    return session


class SessionLaunch(threading.Thread):
    """:func:`spark_session` in a thread, started at once: the JVM starts while the caller
    does what needs no JVM (sink/driver/startup.py). A caller that fails meanwhile still calls
    :meth:`session` (or :meth:`discard`), so the JVM it started is stopped, not left behind."""

    def __init__(self, app_name: str, master: str | None) -> None:
        super().__init__(name="spark-session-launch", daemon=True)
        self._args = (app_name, master)
        self._session: SparkSession | None = None
        self._failure: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self._session = spark_session(*self._args)
        except BaseException as exc:  # noqa: BLE001 - handed to the thread that waits
            self._failure = exc

    def session(self) -> SparkSession:
        """The session once it is up; raises what stopped it from starting."""
        self.join()
        if self._failure is not None:
            raise self._failure
        assert self._session is not None
        return self._session

    def discard(self) -> None:
        """Stop the session once it is up (when this launch started it); never raises."""
        with contextlib.suppress(BaseException):
            self.session().stop()


CHECKPOINT_MANAGER_CONF = "spark.sql.streaming.checkpointFileManagerClass"
# Spark's FileSystem-based checkpoint manager, where this Spark has it (4.1 moved the class)
_FILE_SYSTEM_MANAGERS = (
    "org.apache.spark.sql.execution.streaming.FileSystemBasedCheckpointFileManager",
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager",
)


def local_checkpoint_manager(spark: SparkSession, checkpoint: str) -> str | None:
    """For a checkpoint on the local disk, Spark's FileSystem-based checkpoint manager instead
    of its FileContext-based default; returns the class set, None when left alone.

    Without Hadoop's native library, FileContext's rename of the local file system asks for
    each file's link status by running ``readlink`` in a child process, so every offset and
    commit log entry of every micro-batch spawned processes from the 2 GB JVM (what that cost
    and what this saves, measured: docs/decisions/0010). On a local disk both managers write a
    temporary file, check that the log entry does not exist yet and rename the file into place
    (Spark asks neither to overwrite an entry). A manager the user set, and checkpoints
    elsewhere (HDFS, S3), stay as they are.
    """
    if urlparse(checkpoint).scheme not in ("", "file") or spark.conf.get(
            CHECKPOINT_MANAGER_CONF, None):
        return None
    jvm: Any = spark.sparkContext._jvm
    for name in _FILE_SYSTEM_MANAGERS:
        try:
            jvm.java.lang.Class.forName(name)
        except Exception:  # noqa: BLE001 - py4j raises its own error for a missing class
            continue
        spark.conf.set(CHECKPOINT_MANAGER_CONF, name)
        return name
    return None


# Spark warnings that read as failures but are not: a batch that took longer than
# trigger.interval (the next one simply starts at once), a job group already finished when
# the query stops, the Python worker factory noting an idle worker it reaped.
_QUIET_LOGGERS = (
    "org.apache.spark.sql.execution.streaming.ProcessingTimeExecutor",
    "org.apache.spark.sql.execution.streaming.runtime.ProcessingTimeExecutor",
    "org.apache.spark.scheduler.DAGScheduler",
)


def _quiet(session: SparkSession) -> None:
    """Raise those loggers to ERROR."""
    log4j_levels(session, _QUIET_LOGGERS, "ERROR")


def log4j_levels(session: SparkSession, names: tuple[str, ...], level: str) -> None:
    """Set the driver JVM's log4j2 ``level`` (``ERROR``, ``OFF``, ...) of the loggers
    ``names``; never fatal."""
    try:
        jvm: Any = session.sparkContext._jvm  # log4j2 has no Python API
        value = getattr(jvm.org.apache.logging.log4j.Level, level)
        for name in names:
            jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, value)
    except Exception as exc:  # noqa: BLE001 - a log level is not worth failing the sink
        log.debug("could not set Spark's loggers %s to %s: %s", names, level, exc)


def _restore_sigint(handler: object) -> None:
    keep = callable(handler) and handler is not signal.default_int_handler
    if keep and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, handler)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    """``python -m cdc_ingest.sink.runtime.session fetch``: download the jars, print where they are,
    and make the JVM's class-data sharing archive
    (:mod:`cdc_ingest.sink.runtime.class_data_sharing`)."""
    parser = argparse.ArgumentParser(
        prog="python -m cdc_ingest.sink.runtime.session",
        description="Download the Kafka connector jars for the installed pyspark into the cache "
        "and make the class-data sharing archive that starts the sink's JVM faster.",
    )
    parser.add_argument("command", choices=["fetch"])
    parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        jars = fetch_spark_kafka_jars()
    except maven.MavenError as exc:
        log.error("%s", exc)
        return 1
    sys.stdout.write(f"SPARK_KAFKA_JARS={','.join(str(p) for p in jars)}\n")
    archive = cds.build_archive(jars)
    if archive is not None:
        sys.stdout.write(f"SPARK_CDS_ARCHIVE={archive}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
