"""cdc_ingest.sink.runtime.worker_daemon: which entries of a Python worker's path are redundant copies."""

from __future__ import annotations

import sys
import zipfile
import zipimport
from pathlib import Path

import pytest

from cdc_ingest.sink.runtime import worker_daemon as pydaemon


def _zip(path: Path, members: dict[str, str]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        for name, text in members.items():
            z.writestr(name, text)
    return str(path)


def _install(site: Path, py4j_version: str = "0.10.9.9") -> dict[str, str]:
    """A pip-style pyspark: the package, its zip copies and its jars; py4j installed."""
    (site / "pyspark" / "jars").mkdir(parents=True)
    (site / "pyspark" / "__init__.py").write_text("")
    (site / "py4j").mkdir()
    (site / "py4j" / "__init__.py").write_text("")
    (site / "py4j" / "version.py").write_text(f'__version__ = "{py4j_version}"\n')
    lib = site / "pyspark" / "python" / "lib"
    return {
        "pyspark_zip": _zip(lib / "pyspark.zip", {"pyspark/__init__.py": ""}),
        "py4j_zip": _zip(lib / "py4j-0.10.9.9-src.zip", {"py4j/__init__.py": ""}),
        "core_jar": _zip(site / "pyspark" / "jars" / "spark-core_2.13-4.0.0.jar",
                         {"org/apache/spark/SparkContext.class": ""}),
    }


def test_copies_of_the_installed_pyspark_and_py4j_and_its_jars_are_redundant(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    files = _install(site)
    path = [files["pyspark_zip"], files["py4j_zip"], files["core_jar"], str(site)]
    assert pydaemon.redundant_entries(path) == path[:3]


def test_a_spark_distribution_another_py4j_and_other_archives_stay(tmp_path: Path) -> None:
    site = tmp_path / "site"
    files = _install(site, py4j_version="0.10.9.7")  # the zip's py4j is another version
    home = tmp_path / "spark-home" / "python" / "lib"
    other = [
        _zip(home / "pyspark.zip", {"pyspark/__init__.py": ""}),  # $SPARK_HOME's own pyspark
        _zip(tmp_path / "deps.zip", {"mylib/__init__.py": ""}),
        _zip(tmp_path / "udfs.jar", {"x.py": ""}),
    ]
    path = [*other, files["pyspark_zip"], files["py4j_zip"], str(site)]
    assert pydaemon.redundant_entries(path) == [files["pyspark_zip"]]


def test_nothing_is_redundant_without_an_installed_pyspark(tmp_path: Path) -> None:
    lib = tmp_path / "spark" / "python" / "lib"
    path = [_zip(lib / "pyspark.zip", {"pyspark/__init__.py": ""}),
            _zip(lib / "py4j-0.10.9.9-src.zip", {"py4j/__init__.py": ""}), str(tmp_path)]
    assert pydaemon.redundant_entries(path) == []


def test_dropping_takes_the_entries_off_the_path_and_their_importers_out_of_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    site = tmp_path / "site"
    files = _install(site)
    kept = _zip(tmp_path / "deps.zip", {"mylib/__init__.py": ""})
    monkeypatch.setattr(sys, "path", [files["pyspark_zip"], kept, str(site), *sys.path])
    cache = dict(sys.path_importer_cache)
    monkeypatch.setattr(sys, "path_importer_cache", cache)
    for entry in (files["pyspark_zip"], files["pyspark_zip"] + "/pyspark", kept):
        cache[entry] = zipimport.zipimporter(entry)
    assert pydaemon.drop_redundant_entries() == [files["pyspark_zip"]]
    assert files["pyspark_zip"] not in sys.path and kept in sys.path
    assert not any(k.startswith(files["pyspark_zip"]) for k in cache)
    assert kept in cache
