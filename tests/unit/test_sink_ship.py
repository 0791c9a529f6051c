"""What the sink ships to a cluster's executors (cdc_ingest.sink.runtime.executor_files)."""

from __future__ import annotations

import pytest

from cdc_ingest.download_cache import build_once
from cdc_ingest.sink.runtime import executor_files as ship


def test_the_closure_holds_the_libraries_the_tasks_import_and_not_spark() -> None:
    names = {ship._canonical(d.metadata["Name"]) for d in ship.dependencies()}
    # what Spark's Python workers import for the sink's tasks, and what those import
    assert {"cdc-ingest", "pyarrow", "pandas", "numpy", "confluent-kafka", "orjson",
            "msgspec", "python-dateutil"} <= names
    assert not names & {"pyspark", "py4j"}  # Spark brings its own
    assert "pytest" not in names  # an extra's requirement (cdc-ingest[test]) is left out


def test_the_archive_holds_the_package_and_the_compiled_libraries() -> None:
    files, key = ship._contents()
    names = {name for _, name in files}
    assert "cdc_ingest/__init__.py" in names and "cdc_ingest/sink/task/writer.py" in names
    assert any(n.startswith("orjson/") and n.endswith(".so") for n in names)
    assert any(n.startswith("pyarrow/") for n in names)
    assert not any(n.startswith("pyspark/") or "__pycache__" in n or n.startswith("..")
                   for n in names)
    assert ship._contents()[1] == key  # the same environment names the same archive


def test_executor_settings_put_the_unpacked_archive_on_the_workers_path(monkeypatch) -> None:
    monkeypatch.setattr(ship, "python_env_archive", lambda: ship.Path("/cache/env.tar.gz"))
    assert ship.executor_settings() == {
        "spark.archives": "/cache/env.tar.gz#cdc_ingest_env",
        "spark.executorEnv.PYTHONPATH": "cdc_ingest_env",
    }


def test_build_once_makes_a_file_once_and_replaces_an_earlier_version(tmp_path) -> None:
    made: list[str] = []

    def build(partial) -> None:
        made.append(partial.name)
        partial.write_text("x")

    (tmp_path / "spark-old.jsa").write_text("old")
    target = tmp_path / "spark-new.jsa"
    assert build_once(target, build) == target and build_once(target, build) == target
    assert len(made) == 1 and target.read_text() == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build.lock", "spark-new.jsa"]

    def fail(partial) -> None:
        partial.write_text("half")
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        build_once(tmp_path / "spark-other.jsa", fail)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build.lock", "spark-new.jsa"]
