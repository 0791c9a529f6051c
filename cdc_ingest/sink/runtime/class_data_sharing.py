"""A class-data sharing archive for the sink's Spark JVM: start-up without loading Spark's
classes from its jars one by one.

Much of the sink's start is the JVM's: parsing, verifying and linking the classes of Spark,
Hadoop, Kafka's client and Arrow. A dynamic CDS archive (JDK 13+) holds them already parsed
and verified; a JVM started with ``-XX:SharedArchiveFile`` maps it instead. What it saves,
measured: docs/decisions/0002.

The archive is made by a training run (:mod:`cdc_ingest.sink.runtime.class_data_training`): a
SparkSession whose JVM dumps the classes it loaded at exit. It lives in ``<cache>/spark-cds/``,
named after what the JVM checks and more: the pyspark version, the connector jars, the java that
Spark runs (resolved), its JDK's ``release`` file and ``libjvm.so``, and where Spark's and the
connector's jars are. Another JDK, pyspark or venv is therefore another name: a missing archive, not
one the JVM ignores (``-Xshare:auto``: it would start without it, and with the JVM's CDS warnings
left on, say so in one line).

``python -m cdc_ingest.sink.runtime.session fetch`` makes it (``scripts/setup.sh``, the Docker
image's build; :func:`build_archive`). A sink that starts without one says so (one WARNING, with
that command) and, once its first batch is written, starts the training run in the background,
detached, at the lowest priority (:func:`after_first_batch`), unless another process is building it,
the last build failed less than a day ago (``<archive>.failed``), or memory or disk are short: that
WARNING says which. ``CDC_INGEST_SPARK_CDS=off`` turns off both using and building it. Readers never
lock.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyspark

from cdc_ingest.download_cache import cache_dir, file_lock
from cdc_ingest.sink.runtime.connector_jars import spark_jars_dir

log = logging.getLogger(__name__)

FETCH = "python -m cdc_ingest.sink.runtime.session fetch"
# no -Xlog:cds=off: an archive the JVM cannot map is then one warning line, not a silent loss
_USE = "-Xshare:auto"
TRAIN_TIMEOUT_S = 300
RETRY_AFTER_S = 24 * 3600  # after a failed build, the sink does not try again for a day
MIN_MEMORY_BYTES = 2.5e9  # MemAvailable the training run's JVM and Python need beside the sink
MIN_DISK_BYTES = 400e6  # the archive, and the partial one beside it while it is written

BatchCallback = Callable[[int, Any], None]  # (batch id, its results): the driver's



class _State:
    pending: Path | None = None  # the archive this process's sink builds after its first batch
    said: Path | None = None  # the missing archive this process has warned of
    said_off = False
    training = False  # the training run's own process: it neither uses nor plans one


STATE = _State()


def _java() -> Path | None:
    """The java Spark's launcher runs (``$JAVA_HOME/bin/java``, else ``java`` on PATH)."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found else None


def _jdk_identity(java: Path | None) -> bytes:
    """The JVM build, cheaply (no JVM started): java's path, its JDK's ``release`` file and
    its ``libjvm.so``'s size (and, without a ``release`` file, its mtime)."""
    if java is None:
        return b"no java"
    home = java.parent.parent
    parts = [str(java).encode()]
    try:
        parts.append((home / "release").read_bytes())
        stamp = False
    except OSError:
        stamp = True
    try:
        jvm = (home / "lib" / "server" / "libjvm.so").stat()
        parts.append(f"{jvm.st_size} {jvm.st_mtime_ns if stamp else ''}".encode())
    except OSError:
        pass
    return b"\n".join(parts)


def archive_path(jars: list[Path]) -> Path:
    digest = hashlib.blake2b(digest_size=6)
    for jar in jars:
        digest.update(jar.name.encode() + b"\n")
    digest.update(_jdk_identity(_java()) + b"\n")
    for folder in [spark_jars_dir(), *sorted({jar.parent for jar in jars})]:
        digest.update(str(folder.resolve()).encode() + b"\n")
    return cache_dir() / "spark-cds" / f"spark-{pyspark.__version__}-{digest.hexdigest()}.jsa"


def _off() -> bool:
    return os.environ.get("CDC_INGEST_SPARK_CDS", "on") == "off"


def java_options(jars: list[Path]) -> list[str]:
    """The driver JVM options that use the archive, or none when there is none; in that case
    it says so once (WARNING) and, when it can, plans the build after the first batch."""
    if _off():
        if not STATE.said_off:
            log.info("class-data sharing archive for the sink's JVM turned off "
                     "(CDC_INGEST_SPARK_CDS=off): neither used nor built")
            STATE.said_off = True
        return []
    archive = archive_path(jars)
    if archive.is_file():
        return [f"-XX:SharedArchiveFile={archive}", *_USE.split()]
    if not STATE.training:
        _plan(archive)
    return []


def _plan(archive: Path) -> None:
    if STATE.said == archive:
        return  # said already (a second session in this process)
    STATE.said = archive
    reason = cannot_build(archive)
    if reason is not None:
        log.warning("no class-data sharing archive for the sink's JVM (%s), so the sink starts "
                    "slower (docs/decisions/0002), and it is not built now: %s. To build it: "
                    "%s", archive, reason, FETCH)
        return
    STATE.pending = archive
    log.warning("no class-data sharing archive for the sink's JVM yet (%s), so this start is "
                "slower (docs/decisions/0002). It will be built once, in the background at "
                "low priority, after the sink's first batch (log: %s). To build it now: %s",
                archive, _log_file(archive), FETCH)


def _log_file(archive: Path) -> Path:
    return archive.with_name(f"{archive.name}.log")


def failed_file(archive: Path) -> Path:
    return archive.with_name(f"{archive.name}.failed")


def _lock_file(archive: Path) -> Path:
    return archive.parent / "build.lock"


def _mem_available() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return float(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _locked(lock: Path) -> bool:
    """True when another process holds ``lock`` (a build under way); never waits."""
    try:
        fd = os.open(lock, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases a lock we got
    return False


def cannot_build(archive: Path) -> str | None:
    """Why the sink must not build ``archive`` in the background now, or None."""
    failed = failed_file(archive)
    if _locked(_lock_file(archive)):
        return "another process is building it now; the next start uses it"
    try:
        age = time.time() - failed.stat().st_mtime
    except OSError:
        age = None
    if age is not None and age < RETRY_AFTER_S:
        return (f"its last build failed, see {failed} (and {_log_file(archive)}); the sink "
                f"tries again {(RETRY_AFTER_S - age) / 3600:.0f} h from now")
    memory = _mem_available()
    if memory is not None and memory < MIN_MEMORY_BYTES:
        return (f"only {memory / 1e9:.1f} GB of memory is available and the build needs "
                f"{MIN_MEMORY_BYTES / 1e9:.1f} GB")
    folder = archive.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(folder).free
        writable = os.access(folder, os.W_OK)
    except OSError:
        free, writable = 0, False
    if not writable or free < MIN_DISK_BYTES:
        what = "is not writable" if not writable else f"has {free / 1e6:.0f} MB free"
        return (f"{folder} {what} and the build needs {MIN_DISK_BYTES / 1e6:.0f} MB there "
                "(fix: CDC_INGEST_CACHE=<a writable folder with room>)")
    return None


def _command(archive: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "cdc_ingest.sink.runtime.class_data_training", str(archive),
            *extra]


def build_in_background() -> subprocess.Popen[bytes] | None:
    """Start the build this process's sink planned at its start (see :func:`java_options`),
    detached: its own session (so stopping the sink, or ``start``'s process group, leaves it
    running), the lowest priority, output in ``<archive>.log``, holding the build lock until
    it exits. Returns it, or None when nothing is to be built (or it cannot be now). Once per
    process; calling it again, or where no build was planned, does nothing."""
    archive, STATE.pending = STATE.pending, None
    if archive is None or archive.is_file():
        return None
    reason = cannot_build(archive)
    if reason is not None:
        log.warning("not building the class-data sharing archive for the sink's JVM (%s): %s."
                    " To build it: %s", archive, reason, FETCH)
        return None
    fd = os.open(_lock_file(archive), os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("the class-data sharing archive is being built by another process")
            return None
        if archive.is_file():
            return None  # made meanwhile
        with _log_file(archive).open("wb") as out:
            # the child inherits the locked descriptor: the lock is held until it exits
            proc = subprocess.Popen(_command(archive, "--background"), stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=subprocess.STDOUT, pass_fds=(fd,),
                                    start_new_session=True)
    except OSError as exc:
        log.warning("could not start building the class-data sharing archive (%s): %s. To "
                    "build it: %s", archive, exc, FETCH)
        return None
    finally:
        os.close(fd)
    log.info("building the class-data sharing archive for the sink's JVM in the background "
             "(pid %d, lowest priority): %s, log %s", proc.pid, archive, _log_file(archive))
    return proc


def after_first_batch(on_batch: BatchCallback | None) -> BatchCallback:
    """``on_batch``, and after the first batch that got through it, :func:`build_in_background`
    (which does nothing when no build was planned)."""
    started = False

    def call(batch_id: int, results: list[dict[str, Any]]) -> None:
        nonlocal started
        if on_batch is not None:
            on_batch(batch_id, results)
        if not started:
            started = True
            try:
                build_in_background()
            except Exception as exc:  # noqa: BLE001 - a faster next start is not worth a batch
                log.warning("could not start building the class-data sharing archive: %s",
                            exc)

    return call


def build_archive(jars: list[Path]) -> Path | None:
    """Make the archive in the foreground unless it is there (``fetch``): waits for a build
    another process runs; tries again even after a failed build. None when it failed (or
    ``CDC_INGEST_SPARK_CDS=off``); the sink then starts without it, only slower."""
    if _off():
        log.info("not making the class-data sharing archive: CDC_INGEST_SPARK_CDS=off")
        return None
    archive = archive_path(jars)
    began = time.monotonic()
    with file_lock(_lock_file(archive)):
        if not archive.is_file():
            try:
                done = subprocess.run(_command(archive), capture_output=True, text=True,
                                      timeout=TRAIN_TIMEOUT_S, check=False)
                reason = done.stderr.strip()[-600:] if done.returncode else ""
            except subprocess.TimeoutExpired:
                reason = f"the training run did not end within {TRAIN_TIMEOUT_S} s"
                failed_file(archive).write_text(f"{time.ctime()}\n{reason}\n")
            if reason or not archive.is_file():
                log.warning("no class-data sharing archive for the sink's JVM (the sink starts"
                            " slower): the training run failed: %s", reason or "no archive")
                return None
    log.info("class-data sharing archive for the sink's JVM: %s (%.0f MB, %.0f s)",
             archive, archive.stat().st_size / 1e6, time.monotonic() - began)
    return archive
