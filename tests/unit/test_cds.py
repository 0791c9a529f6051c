"""The sink JVM's class-data sharing archive (cdc_ingest/sink/runtime/class_data_sharing.py, cds_train.py): its
name, what a start without it says and plans, when the background build is skipped, and
what a build leaves behind. No JVM is started here (the real training run:
tests/integration/test_cds_build.py)."""

from __future__ import annotations

import fcntl
import logging
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cdc_ingest.sink.runtime import class_data_sharing as cds
from cdc_ingest.sink.runtime import class_data_training as cds_train

FETCH = "python -m cdc_ingest.sink.runtime.session fetch"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache, a fake JDK (never run), plenty of memory, a fresh process state."""
    root = tmp_path / "cache"
    monkeypatch.setenv("CDC_INGEST_CACHE", str(root))
    monkeypatch.delenv("CDC_INGEST_SPARK_CDS", raising=False)
    jdk = tmp_path / "jdk"
    (jdk / "bin").mkdir(parents=True)
    (jdk / "bin" / "java").write_text("#!/bin/sh\nexit 99\n")  # not executable: never run
    (jdk / "release").write_text('JAVA_RUNTIME_VERSION="17.0.15+6"\n')
    (jdk / "lib" / "server").mkdir(parents=True)
    (jdk / "lib" / "server" / "libjvm.so").write_bytes(b"\0" * 100)
    monkeypatch.setenv("JAVA_HOME", str(jdk))
    monkeypatch.setattr(cds, "STATE", cds._State())
    monkeypatch.setattr(cds, "_mem_available", lambda: 16e9)
    return root


@pytest.fixture
def jars(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "connector" / "jars"
    folder.mkdir(parents=True)
    found = [folder / "spark-sql-kafka-0-10_2.13-4.0.0.jar", folder / "kafka-clients-3.9.0.jar"]
    for jar in found:
        jar.write_bytes(b"PK")
    return found


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "cdc_ingest.sink.runtime.class_data_sharing" and r.levelno == logging.WARNING]


@pytest.fixture
def held_lock(cache: Path) -> Iterator[Path]:
    """build.lock held, as by another process's build."""
    lock = cache / "spark-cds" / "build.lock"
    lock.parent.mkdir(parents=True)
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield lock


# -- the name ------------------------------------------------------------------------------


def test_the_name_changes_with_the_jdk_the_jars_and_where_they_are(
        cache: Path, jars: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = cds.archive_path(jars)
    assert first.parent == cache / "spark-cds"
    assert first.name.startswith("spark-") and first.suffix == ".jsa"
    assert cds.archive_path(jars) == first  # no JVM was started: the fake java exits 99
    jdk = tmp_path / "jdk"
    (jdk / "release").write_text('JAVA_RUNTIME_VERSION="17.0.16+8"\n')  # a JDK upgrade
    upgraded = cds.archive_path(jars)
    assert upgraded != first
    (jdk / "release").unlink()  # no release file: libjvm.so's size and mtime instead
    bare = cds.archive_path(jars)
    (jdk / "lib" / "server" / "libjvm.so").write_bytes(b"\0" * 101)
    assert cds.archive_path(jars) not in (bare, upgraded, first)
    # another java on the path (JAVA_HOME unset: java on PATH, resolved)
    monkeypatch.delenv("JAVA_HOME")
    other = tmp_path / "other-jdk" / "bin"
    other.mkdir(parents=True)
    (other / "java").write_text("#!/bin/sh\nexit 99\n")
    (other / "java").chmod(0o755)
    monkeypatch.setenv("PATH", f"{other}:{os.environ['PATH']}")
    on_path = cds.archive_path(jars)
    monkeypatch.setenv("JAVA_HOME", str(jdk))
    assert on_path != cds.archive_path(jars)
    # the same jars elsewhere (a moved venv or cache)
    moved = tmp_path / "moved"
    (tmp_path / "connector").rename(moved)
    assert cds.archive_path([moved / "jars" / j.name for j in jars]) != cds.archive_path(jars)


# -- a start without the archive ----------------------------------------------------------


def test_a_start_without_the_archive_says_so_once_and_plans_the_build(
        cache: Path, jars: list[Path], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    archive = cds.archive_path(jars)
    assert cds.java_options(jars) == []
    assert cds.java_options(jars) == []  # a second session in the process: nothing new said
    [warning] = _warnings(caplog)
    assert str(archive) in warning and "slower" in warning and FETCH in warning
    assert "in the background at low priority, after the sink's first batch" in warning
    assert cds.STATE.pending == archive
    archive.write_bytes(b"archive")
    assert cds.java_options(jars) == [f"-XX:SharedArchiveFile={archive}", "-Xshare:auto"]


def test_off_neither_uses_nor_builds(cache: Path, jars: list[Path],
                                     caplog: pytest.LogCaptureFixture,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    caplog.set_level(logging.INFO)
    archive = cds.archive_path(jars)
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"archive")
    monkeypatch.setenv("CDC_INGEST_SPARK_CDS", "off")
    assert cds.java_options(jars) == [] and cds.java_options(jars) == []
    said = [r.getMessage() for r in caplog.records if r.name == "cdc_ingest.sink.runtime.class_data_sharing"]
    assert len(said) == 1 and "CDC_INGEST_SPARK_CDS=off" in said[0]
    assert caplog.records[0].levelno == logging.INFO
    archive.unlink()
    assert cds.java_options(jars) == [] and cds.build_in_background() is None
    assert cds.build_archive(jars) is None
    assert sorted(p.name for p in archive.parent.iterdir()) == []


def test_a_recent_failure_is_not_retried_within_a_day(
        cache: Path, jars: list[Path], caplog: pytest.LogCaptureFixture) -> None:
    archive = cds.archive_path(jars)
    archive.parent.mkdir(parents=True)
    failed = cds.failed_file(archive)
    failed.write_text("then\nRuntimeError: no\n")
    assert cds.java_options(jars) == [] and cds.STATE.pending is None
    [warning] = _warnings(caplog)
    assert str(failed) in warning and FETCH in warning and "slower" in warning
    assert cds.build_in_background() is None
    day_ago = time.time() - 25 * 3600
    os.utime(failed, (day_ago, day_ago))
    assert cds.cannot_build(archive) is None


def test_another_build_running_is_left_alone(cache: Path, jars: list[Path], held_lock: Path,
                                             caplog: pytest.LogCaptureFixture) -> None:
    assert cds.java_options(jars) == [] and cds.STATE.pending is None
    [warning] = _warnings(caplog)
    assert "another process is building it" in warning


def test_a_build_that_started_meanwhile_is_not_started_twice(
        cache: Path, jars: list[Path], caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    caplog.set_level(logging.INFO)
    assert cds.java_options(jars) == [] and cds.STATE.pending is not None
    started: list[object] = []
    monkeypatch.setattr(cds.subprocess, "Popen", lambda *a, **k: started.append(a))
    lock = cds.archive_path(jars).parent / "build.lock"
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        assert cds.build_in_background() is None
    assert started == []
    assert cds.build_in_background() is None  # once per process


def test_little_memory_skips_the_build(cache: Path, jars: list[Path],
                                       caplog: pytest.LogCaptureFixture,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cds, "_mem_available", lambda: 1.2e9)
    assert cds.java_options(jars) == [] and cds.STATE.pending is None
    assert cds.java_options(jars) == []  # a second session: said once
    [warning] = _warnings(caplog)
    assert "1.2 GB of memory" in warning and FETCH in warning


def test_little_disk_skips_the_build(cache: Path, jars: list[Path],
                                     caplog: pytest.LogCaptureFixture,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    real = cds.shutil.disk_usage
    monkeypatch.setattr(cds.shutil, "disk_usage",
                        lambda p: real(p)._replace(free=100_000_000))
    assert cds.java_options(jars) == [] and cds.STATE.pending is None
    [warning] = _warnings(caplog)
    assert "has 100 MB free" in warning and "CDC_INGEST_CACHE" in warning


def test_a_cache_that_cannot_be_written_skips_the_build(
        tmp_path: Path, cache: Path, jars: list[Path], caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("CDC_INGEST_CACHE", str(blocked))  # no folder can be made under it
    assert cds.java_options(jars) == [] and cds.STATE.pending is None
    [warning] = _warnings(caplog)
    assert "is not writable" in warning and "CDC_INGEST_CACHE" in warning


# -- the background build -----------------------------------------------------------------


def test_the_build_after_the_first_batch_runs_detached_and_holds_the_lock(
        cache: Path, jars: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    archive = cds.archive_path(jars)
    assert cds.java_options(jars) == []
    release = archive.parent / "release-the-build"
    # a stand-in for the training run: says it runs, waits to be told, writes the archive
    stand_in = ("import sys, time, pathlib; print('training', flush=True); "
                f"r = pathlib.Path({str(release)!r}); "
                "[time.sleep(0.05) for _ in range(400) if not r.exists()]; "
                "pathlib.Path(sys.argv[1]).write_bytes(b'archive')")
    monkeypatch.setattr(cds, "_command", lambda a, *x: [sys.executable, "-c", stand_in, str(a)])
    batches: list[int] = []
    on_batch = cds.after_first_batch(lambda batch_id, results: batches.append(batch_id))
    on_batch(0, [])
    assert cds.STATE.pending is None  # started: nothing planned any more
    on_batch(1, [])
    assert batches == [0, 1]
    # the child: its own session (start's and the sink's process-group signals miss it),
    # holding the build lock, logging next to the archive
    deadline = time.monotonic() + 10
    while True:  # a forked child shows the stand-in's command line once it has exec'd
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
        mine = [int(p) for p in pids if _cmdline(p).startswith(f"{sys.executable}\0-c\0")
                and str(archive) in _cmdline(p) and _parent(p) == os.getpid()]
        if mine or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert len(mine) == 1, [(p, _parent(str(p)), _cmdline(str(p))[:200]) for p in mine]
    assert os.getsid(mine[0]) == mine[0] != os.getsid(0)
    log_file = archive.with_name(f"{archive.name}.log")
    while "training" not in log_file.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "another process is building it" in (cds.cannot_build(archive) or "")
    release.write_text("")
    while not archive.is_file() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert archive.read_bytes() == b"archive"
    while cds.cannot_build(archive) is not None and time.monotonic() < deadline:
        time.sleep(0.05)  # the lock goes with the child
    assert cds.cannot_build(archive) is None


def _parent(pid: str) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return ""


# -- what a build leaves ------------------------------------------------------------------


def test_a_failed_training_run_leaves_a_failed_file_and_no_partial(
        cache: Path, jars: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    archive = cds.archive_path(jars)

    def fails(out: Path) -> None:
        out.write_bytes(b"half")
        raise RuntimeError("the training query failed: boom")

    monkeypatch.setattr(cds_train, "train", fails)
    assert cds_train.build(archive) == 1
    failed = cds.failed_file(archive).read_text()
    assert "RuntimeError: the training query failed: boom" in failed and FETCH in failed
    assert time.ctime()[:10] in failed
    assert sorted(p.name for p in archive.parent.iterdir()) == [f"{archive.name}.failed"]


def test_a_build_replaces_older_archives_and_stale_partials(
        cache: Path, jars: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    archive = cds.archive_path(jars)
    folder = archive.parent
    folder.mkdir(parents=True)
    older = folder / "spark-4.0.0-000000000000.jsa"
    for path in (older, folder / f"{older.name}.log", folder / f"{older.name}.failed",
                 cds.failed_file(archive), folder / f".{archive.name}.1"):
        path.write_bytes(b"x")
    fresh = folder / f".{archive.name}.2"  # another build's, still running
    fresh.write_bytes(b"x")
    checkpoint = folder / f".{archive.name}.1.checkpoint"
    (checkpoint / "offsets").mkdir(parents=True)
    hour_ago = time.time() - 3700
    for stale in (folder / f".{archive.name}.1", checkpoint):
        os.utime(stale, (hour_ago, hour_ago))
    monkeypatch.setattr(cds_train, "train", lambda out: out.write_bytes(b"archive"))
    assert cds_train.build(archive) == 0
    assert archive.read_bytes() == b"archive"
    assert sorted(p.name for p in folder.iterdir()) == sorted([archive.name, fresh.name])
