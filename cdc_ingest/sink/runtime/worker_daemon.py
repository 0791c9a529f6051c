"""The sink's Python worker daemon (``spark.python.daemon.module``, local masters): pyspark's
own daemon, with pyspark and py4j imported from their installed packages instead of the zip
copies that Spark puts first on the workers' ``PYTHONPATH``.

A pip-installed pyspark carries its Python code twice: as the package, and zipped in
``pyspark/python/lib/pyspark.zip`` (with ``py4j-<version>-src.zip``), which Spark puts on the
path of every Python worker it starts. Imported from the zip, the worker's pyspark is compiled
from source at every worker start (a zip holds no bytecode cache), and its ~60 packages each
get a ``zipimporter``. Every task then starts with ``importlib.invalidate_caches()``
(pyspark's ``setup_spark_files``), and on Python 3.11 each ``zipimporter`` reads the zip's
directory again there, at every task (what that cost, measured: docs/decisions/0010).

Spark 4 also puts its ``spark-core`` jar on that path, which holds no Python but gets
``zipimporter``s of its own when an import looks through it (5,261 entries read again per task).

The daemon also imports what every sink task runs before it forks any worker, so a worker it
forks (the first ones, and any after Spark reaped an idle one) starts with them loaded instead
of importing them in its first task.

This daemon drops the zips from the path when they are copies of the installed packages (the
zip inside the very ``pyspark`` package that the rest of the path finds; py4j of the same
version) and the jars of that package's own ``jars`` folder, then runs ``pyspark.daemon`` as
Spark would. Anything else (a Spark distribution's ``$SPARK_HOME/python/lib``, a py4j of
another version, other jars) stays as it is.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from importlib.machinery import PathFinder

# what a sink task imports (sink/task/columns.py, sink/task/writer.py and pyspark's Arrow path)
TASK_MODULES = ("pyspark.worker", "pyspark.sql.pandas.serializers",
                "cdc_ingest.sink.task.columns", "cdc_ingest.sink.task.writer")
_PY4J_ZIP = re.compile(r"py4j-(?P<version>[0-9][^/]*)-src\.zip$")


def _package_dir(name: str, path: list[str]) -> str | None:
    spec = PathFinder.find_spec(name, path)
    if spec is None or not spec.origin or not spec.origin.endswith("__init__.py"):
        return None
    return os.path.dirname(spec.origin)


def _py4j_version(package: str) -> str | None:
    try:
        with open(os.path.join(package, "version.py"), encoding="utf-8") as f:
            found = re.search(r"""__version__\s*=\s*["']([^"']+)["']""", f.read())
    except OSError:
        return None
    return found.group(1) if found else None


def _archive(entry: str) -> bool:
    return entry.endswith((".zip", ".jar"))


def redundant_entries(path: list[str]) -> list[str]:
    """The entries of ``path`` that are zip copies of packages installed elsewhere on it, and
    the Spark jars of that same installation (Java classes only, no Python)."""
    unpacked = [p for p in path if not _archive(p)]
    pyspark = _package_dir("pyspark", unpacked)
    if pyspark is None:
        return []
    bundled = os.path.realpath(os.path.join(pyspark, "python", "lib"))
    jars = os.path.realpath(os.path.join(pyspark, "jars"))
    py4j = _package_dir("py4j", unpacked)
    py4j_version = _py4j_version(py4j) if py4j else None
    drop = []
    for entry in path:
        if not _archive(entry):
            continue
        where, name = os.path.realpath(os.path.dirname(entry)), os.path.basename(entry)
        match = _PY4J_ZIP.match(name)
        if (where == jars and name.endswith(".jar")) or (where == bundled and (
                name == "pyspark.zip" or (match and match["version"] == py4j_version))):
            drop.append(entry)
    return drop


def drop_redundant_entries() -> list[str]:
    """Take those entries off ``sys.path`` and their importers out of the importer cache."""
    drop = redundant_entries(sys.path)
    for entry in drop:
        while entry in sys.path:
            sys.path.remove(entry)
        for cached in [k for k in sys.path_importer_cache if k == entry
                       or k.startswith(entry + os.sep)]:
            del sys.path_importer_cache[cached]
    return drop


def import_task_modules() -> list[str]:
    """Import :data:`TASK_MODULES`; the ones that failed (the task then reports why)."""
    failed = []
    for name in TASK_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a task importing it says what is wrong
            failed.append(name)
    return failed


if __name__ == "__main__":
    drop_redundant_entries()
    import_task_modules()
    import runpy

    runpy.run_module("pyspark.daemon", run_name="__main__", alter_sys=True)
