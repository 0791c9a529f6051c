"""What the sink ships to a Spark cluster's executors: cdc_ingest and the libraries it imports.

Spark's Python workers on a cluster run the executors' own interpreter (``PYSPARK_PYTHON`` of
the sink's environment, else ``python3`` there), which need not have cdc-ingest or any of its
dependencies. So for a master that is not ``local`` the sink packs its own package and every
installed distribution it depends on (transitively, without pyspark and py4j, which Spark
brings) into one ``.tar.gz`` under the cache, and gives it to Spark as ``spark.archives``:
each executor unpacks it into its working directory as :data:`ALIAS`, and
``spark.executorEnv.PYTHONPATH`` puts that directory on the workers' path. The libraries hold
compiled code (pyarrow, orjson, confluent-kafka, our row decoder) for this machine's platform
and Python version, so the executors need a Python of the same minor version (Spark checks it).

The archive is built once per content: its name carries a hash of the distributions' versions, the
Python version and cdc_ingest's files (names, sizes, modification times), so a changed editable
checkout is packed again. ``python -m cdc_ingest.sink.runtime.executor_files`` builds it and prints
the ``spark-submit`` options that ship it.
"""

from __future__ import annotations

import hashlib
import logging
import re
import sys
import tarfile
import time
from importlib import metadata
from pathlib import Path

import cdc_ingest
from cdc_ingest.download_cache import build_once, cache_dir

log = logging.getLogger(__name__)

ALIAS = "cdc_ingest_env"  # the directory each executor unpacks the archive into
SPARK_BRINGS = {"pyspark", "py4j"}
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_EXTRA = re.compile(r";.*\bextra\s*==")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def dependencies(root: str = "cdc-ingest") -> list[metadata.Distribution]:
    """The installed distributions ``root`` needs, transitively (extras' requirements left
    out, requirements that are not installed here skipped: they are for other platforms)."""
    seen: dict[str, metadata.Distribution] = {}
    todo = [root]
    while todo:
        name = _canonical(todo.pop())
        if name in seen or name in SPARK_BRINGS:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen[name] = dist
        for requirement in dist.requires or []:
            if _EXTRA.search(requirement):
                continue
            match = _NAME.match(requirement)
            if match:
                todo.append(match.group(1))
    return [seen[n] for n in sorted(seen)]


def _package_files() -> list[Path]:
    """cdc_ingest's own files, from wherever it is imported (an editable checkout too)."""
    package = Path(cdc_ingest.__file__).resolve().parent
    return sorted(p for p in package.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts
                  and p.suffix not in {".c", ".pyx", ".o"})


def _dist_files(dist: metadata.Distribution) -> list[tuple[Path, str]]:
    """(file on disk, name in the archive) of one installed distribution, site-packages only."""
    out = []
    for entry in dist.files or []:
        name = str(entry)
        if name.startswith("..") or "__pycache__" in entry.parts or name.endswith(".pyc"):
            continue  # scripts in bin/, byte code (the workers compile their own)
        path = Path(str(dist.locate_file(entry)))
        if path.is_file():
            out.append((path, name))
    return out


def _contents() -> tuple[list[tuple[Path, str]], str]:
    """Every file to pack and the hash that names the archive."""
    digest = hashlib.blake2b(digest_size=8)
    digest.update(f"{sys.implementation.cache_tag} {sys.platform}\n".encode())
    files: list[tuple[Path, str]] = []
    for dist in dependencies():
        if _canonical(dist.metadata["Name"]) == "cdc-ingest":
            continue  # an editable install's record names a path hook, not the package
        digest.update(f"{dist.metadata['Name']}=={dist.version}\n".encode())
        files.extend(_dist_files(dist))
    package = Path(cdc_ingest.__file__).resolve().parent
    for path in _package_files():
        name = f"cdc_ingest/{path.relative_to(package).as_posix()}"
        stat = path.stat()
        digest.update(f"{name} {stat.st_size} {stat.st_mtime_ns}\n".encode())
        files.append((path, name))
    return files, digest.hexdigest()


def python_env_archive() -> Path:
    """The archive for this environment, built into the cache if it is not there yet."""
    files, key = _contents()
    archive = cache_dir() / "sink-env" / f"cdc-ingest-env-{key}.tar.gz"

    def pack(partial: Path) -> None:
        began = time.monotonic()
        # level 1: the archive is mostly compiled libraries; a higher level takes far longer
        # for a few percent, and the executors unpack it on every start
        with tarfile.open(partial, "w:gz", compresslevel=1) as tar:
            for path, name in files:
                tar.add(path, arcname=name, recursive=False)
        log.info("packed cdc_ingest and its libraries for the Spark executors (%d files, "
                 "%.0f MB) in %.1f s", len(files), partial.stat().st_size / 1e6,
                 time.monotonic() - began)

    return build_once(archive, pack)


def executor_settings() -> dict[str, str]:
    """Spark settings that give the executors this environment's packages."""
    return {
        "spark.archives": f"{python_env_archive()}#{ALIAS}",
        # relative to the Python worker's working directory, where the executor unpacked it
        "spark.executorEnv.PYTHONPATH": ALIAS,
    }


def main() -> int:
    """Build the archive and print the ``spark-submit`` options that ship it."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    settings = executor_settings()
    sys.stdout.write(f"--archives {settings['spark.archives']} "
                     f"--conf spark.executorEnv.PYTHONPATH={ALIAS}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
