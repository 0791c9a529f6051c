"""The sink on a Spark standalone cluster, started as docs/operations.md's recipe says.

The master and two 1-core workers come from the pip pyspark's ``spark-class``, with the
recipe's lines run as written (only the address is this machine's). The executors' Python is
a fresh virtualenv with nothing installed, so every import of the sink's tasks (cdc_ingest,
pyarrow, pandas, confluent-kafka, ...) must come from what the sink ships. The output is
checked message by message against the contract that ``local[*]`` is held to
(test_sink_pipeline): per-key sequences, tombstones, Java partitions, and ``verify``.
"""

from __future__ import annotations

import decimal
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cdc_ingest.kafka.partition import java_partition
from cdc_ingest.services._process import free_port
from tests.conftest import admin_conn
from tests.integration.pipeline_helpers import cli, sink_topic, stop, wait_for, write_pipeline

ROOT = Path(__file__).resolve().parents[2]
RECIPE_HOST = "10.0.0.5"  # the address docs/operations.md's recipe uses


def recipe() -> list[str]:
    """The command lines of operations.md's standalone-cluster block, comments left out."""
    text = (ROOT / "docs" / "operations.md").read_text()
    block = text.split("A standalone cluster from the pip `pyspark`", 1)[1]
    block = block.split("```sh", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.splitlines()
            if line.strip() and not line.strip().startswith("#")]


@dataclass
class Cluster:
    url: str
    work_dirs: list[Path]
    logs: list[Path]


def _launch(line: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    export = recipe()[0]
    command = line.removesuffix("&").strip()  # backgrounded here by Popen instead
    with log.open("ab") as out:
        return subprocess.Popen(["bash", "-c", f"set -e\n{export}\nexec {command}"], env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                cwd=log.parent)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    export, master, worker, start = recipe()
    assert export.startswith("export SPARK_HOME=") and "pyspark" in export
    assert master.startswith('"$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master')
    assert worker.startswith('"$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker')
    assert start == f"cdc-ingest start --config pipeline.yaml --master spark://{RECIPE_HOST}:7077"
    port = free_port()
    master = master.replace(f"--host {RECIPE_HOST} --port 7077", f"--host 127.0.0.1 --port {port}")
    worker = worker.replace(f"spark://{RECIPE_HOST}:7077", f"spark://127.0.0.1:{port}")
    # web UIs on any free port; each worker its own work directory
    # (and nothing of this checkout on the executors' path: they import only what is shipped)
    env = {**_without_pythonpath(), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_MASTER_WEBUI_PORT": "0", "SPARK_WORKER_WEBUI_PORT": "0"}
    procs, logs, work_dirs = [], [tmp_path / "master.log"], []
    try:
        procs.append(_launch(master, env, logs[0]))
        wait_for(lambda: "elected leader" in logs[0].read_text(), timeout=90,
                 what="the Spark master")
        for n in (1, 2):
            work_dirs.append(tmp_path / f"worker{n}")
            logs.append(tmp_path / f"worker{n}.log")
            procs.append(_launch(worker, {**env, "SPARK_WORKER_DIR": str(work_dirs[-1])},
                                 logs[-1]))
        for log in logs[1:]:
            wait_for(lambda log=log: "Successfully registered with master" in log.read_text(),
                     timeout=90, what=f"{log.stem} registered")
        yield Cluster(f"spark://127.0.0.1:{port}", work_dirs, logs)
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


def _without_pythonpath() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _clean_python(tmp_path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "clean")],
                   check=True)
    python = tmp_path / "clean" / "bin" / "python"
    for module in ("cdc_ingest", "pyarrow", "pandas", "confluent_kafka", "orjson"):
        probe = subprocess.run([python, "-c", f"import {module}"], capture_output=True,
                               check=False, cwd=tmp_path, env=_without_pythonpath())
        assert probe.returncode != 0, f"{module} is importable by the 'clean' Python"
    return python


def test_sink_on_a_standalone_cluster_with_a_clean_executor_python(
    mariadb: Any, kafka: Any, fresh_db: str, tmp_path: Path, cluster: Cluster
) -> None:
    db = fresh_db
    python = _clean_python(tmp_path)
    conn = admin_conn(mariadb, db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20), amount DECIMAL(10,2))")
        cur.executemany("INSERT INTO t VALUES (%s, %s, %s)",
                        [(i, f"r{i}", f"{i}.25") for i in range(1, 41)])
    config = write_pipeline(
        tmp_path / "pipeline.yaml", mariadb, kafka, f"cluster-{db}", rf"{db}.t",
        source={"scan.startup.mode": "initial"},
        sink={"sink.delivery-guarantee": "exactly-once", "topic.partitions": 3},
    )
    topic = f"{db}.t"
    log = tmp_path / "start.log"
    env = {**os.environ, "PYSPARK_PYTHON": str(python), "SPARK_LOCAL_IP": "127.0.0.1"}
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cdc_ingest.cli", "start", "--config", str(config),
             "--master", cluster.url], env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: len(sink_topic(kafka, topic)) >= 40 or proc.poll() is not None,
                 timeout=240, what="the snapshot's 40 rows in the sink topic")
        # the driver's head start may have written them before Spark's first batch: the
        # changes below go once Spark's tasks write, so that the executors write them
        wait_for(lambda: re.search(r"sink\.driver\.query: batch \d+: ", log.read_text())
                 or proc.poll() is not None, timeout=240, what="Spark's first batch written")
        assert proc.poll() is None, log.read_text()[-4000:]
        with conn.cursor() as cur:
            cur.execute("UPDATE t SET v = CONCAT(v, '-u') WHERE id <= 10")
            cur.execute("DELETE FROM t WHERE id BETWEEN 11 AND 15")
            cur.executemany("INSERT INTO t VALUES (%s, %s, %s)",
                            [(i, f"r{i}", f"{i}.25") for i in range(41, 46)])
        verify = cli("verify", "--config", str(config), "--wait", "120", timeout=180)
    finally:
        code = stop(proc, timeout=60)
    output = log.read_text()
    assert code == 0, output[-4000:]
    assert verify.returncode == 0, verify.stdout + verify.stderr

    def row(i: int, v: str) -> dict[str, Any]:
        return {"id": i, "v": v, "amount": decimal.Decimal(f"{i}.25")}

    expected: dict[bytes, list[Any]] = {}
    for i in range(1, 46):
        seq: list[Any] = [row(i, f"r{i}")]
        if i <= 10:
            seq.append(row(i, f"r{i}-u"))
        elif i <= 15:
            seq.append(None)
        expected[json.dumps({"id": i}, separators=(",", ":")).encode()] = seq
    got: dict[bytes, list[Any]] = {}
    messages = sink_topic(kafka, topic)
    for m in messages:
        got.setdefault(m.key, []).append(
            None if m.value is None else json.loads(m.value, parse_float=decimal.Decimal))
        assert m.partition == java_partition(m.key, 3), m.key
    assert got == expected

    # the tasks ran in the cluster's executors, from the archive the sink shipped
    unpacked = [p for d in cluster.work_dirs
                for p in d.glob("app-*/*/cdc_ingest_env/cdc_ingest/__init__.py")]
    assert unpacked, "no executor unpacked the sink's Python environment"
    executor_logs = "".join(p.read_text(errors="replace")
                            for d in cluster.work_dirs for p in d.glob("app-*/*/stderr"))
    assert "ModuleNotFoundError" not in executor_logs
    assert "ModuleNotFoundError" not in output and "Traceback" not in output
