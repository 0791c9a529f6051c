"""The class-data sharing archive built by a sink that started without one: for real (a real
training JVM), in the background, surviving the sink's end, and mapped by the next start.

The cache is empty but for the Kafka connector's jars (linked from the real cache, so no
Maven run): the archive, its log and its lock are made here.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from cdc_ingest.download_cache import cache_dir
from cdc_ingest.sink.runtime import class_data_sharing as cds
from cdc_ingest.sink.runtime.connector_jars import fetch_spark_kafka_jars

# the sink's part in it, as run_sink does it: the session's options, then the first batch
SINK = """
import logging, sys, time
from pathlib import Path
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
from cdc_ingest.sink.runtime import class_data_sharing as cds
jars = [Path(p) for p in sys.argv[1:]]
assert cds.java_options(jars) == []
cds.after_first_batch(None)(0, [])
print("first batch written", flush=True)
time.sleep(600)
"""

# a sink's next start: its driver JVM logs where each class came from
NEXT_START = """
from cdc_ingest.sink.runtime.session import spark_session
spark = spark_session("cds-check")
assert spark.range(3).count() == 3
spark.stop()
"""


def _nice(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])


def test_a_sink_without_the_archive_builds_it_in_the_background(tmp_path: Path) -> None:
    jars = fetch_spark_kafka_jars()  # from the real cache
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / jars[0].parent.parent.name).symlink_to(jars[0].parent.parent)
    env = {**os.environ, "CDC_INGEST_CACHE": str(cache)}
    env.pop("CDC_INGEST_SPARK_CDS", None)
    # the sink leads a process group of its own, as `start` runs it
    sink = subprocess.Popen([sys.executable, "-c", SINK, *map(str, jars)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            process_group=0)
    assert sink.stdout is not None and sink.stdout.readline() == "first batch written\n"
    os.killpg(sink.pid, signal.SIGKILL)  # the sink ends at once; its build goes on
    said = sink.stderr.read() if sink.stderr else ""
    sink.wait()
    os.environ["CDC_INGEST_CACHE"] = str(cache)
    try:
        archive = cds.archive_path(jars)
    finally:
        os.environ.pop("CDC_INGEST_CACHE")
        assert cache_dir() != cache
    assert f"WARNING cdc_ingest.sink.runtime.class_data_sharing: no class-data sharing archive for the sink's JVM " \
           f"yet ({archive}), so this start is slower" in said, said
    assert "python -m cdc_ingest.sink.runtime.session fetch" in said
    [line] = [x for x in said.splitlines() if "in the background (pid" in x]
    builder = int(line.split("(pid ")[1].split(",")[0])
    deadline = time.monotonic() + 240
    while _nice(builder) != 19 and time.monotonic() < deadline:  # it lowers its own priority
        time.sleep(0.05)
    assert _nice(builder) == 19
    log = archive.with_name(f"{archive.name}.log")
    while Path(f"/proc/{builder}").exists() and _state(builder) != "Z" and (
            time.monotonic() < deadline):
        time.sleep(0.5)
    assert archive.is_file(), log.read_text()[-3000:]
    assert "INFO __main__: built" in log.read_text()
    assert not cds.failed_file(archive).exists()
    assert archive.stat().st_size > 50e6
    assert sorted(p.name for p in archive.parent.iterdir()) == sorted(
        ["build.lock", archive.name, log.name])

    # the next start maps it: Spark's classes come from the archive ("(top)": the dynamic one)
    classes = tmp_path / "class-load.log"
    check = subprocess.run(
        [sys.executable, "-c", NEXT_START], capture_output=True, text=True, timeout=120,
        check=False, env={**env, "CDC_INGEST_SPARK_JAVA_OPTIONS":
             f"-XX:TieredStopAtLevel=1 -Xlog:class+load=info:file={classes}"})
    assert check.returncode == 0, check.stderr[-3000:]
    assert "Unable to use shared archive" not in check.stdout + check.stderr
    loaded = classes.read_text().splitlines()
    shared = [x for x in loaded if x.endswith("source: shared objects file (top)")]
    spark_shared = [x for x in shared if " org.apache.spark." in x]
    assert len(shared) > 5000 and len(spark_shared) > 1000, (len(shared), len(loaded))


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"
