"""PyFlink for the Flink read-back test: its own virtualenv and Flink's Kafka SQL connector.

``apache-flink`` pins its own pyarrow, pandas, numpy, apache-beam ..., which would break
PySpark's, so it lives in a virtualenv of its own in the project cache
(``<cache>/pyflink-<version>-venv``), never in the main environment. The connector jar comes
from Maven Central through :func:`cdc_ingest.maven.fetch_jars`. Both are made once, under a
file lock, and a marker written last says they are whole; ``scripts/setup.sh`` makes them::

    python -m tests.integration.flink_env      # prints the venv's python and the jar

and the test makes them too when they are missing.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

from cdc_ingest.cache import cache_dir, file_lock
from cdc_ingest.maven import fetch_jars

FLINK_VERSION = "2.0.2"  # apache-flink on PyPI (Python 3.9-3.12)
CONNECTOR_ARTIFACT = "flink-sql-connector-kafka"
CONNECTOR_VERSION = "4.0.1-2.0"  # the Kafka connector release for Flink 2.0
CONNECTOR = f"org.apache.flink:{CONNECTOR_ARTIFACT}:{CONNECTOR_VERSION}"
PIP_TIMEOUT = 1800


class FlinkEnvError(RuntimeError):
    """The PyFlink virtualenv or the connector jar could not be made; says why and the fix."""


def venv_dir() -> Path:
    return cache_dir() / f"pyflink-{FLINK_VERSION}-venv"


def venv_python() -> Path:
    """The PyFlink virtualenv's interpreter, creating the virtualenv when it is missing."""
    root = venv_dir()
    python, done = root / "bin" / "python", root / ".complete"
    if done.exists():
        return python
    with file_lock(root.parent / f"{root.name}.lock"):
        if done.exists():  # another process made it while we waited
            return python
        started = time.monotonic()
        print(f"flink_env: creating {root} (apache-flink=={FLINK_VERSION})", file=sys.stderr)
        shutil.rmtree(root, ignore_errors=True)
        pip = [str(python), "-m", "pip"]
        try:
            _run([sys.executable, "-m", "venv", str(root)], "create the virtualenv")
        except FlinkEnvError:
            # a Python without ensurepip (Debian's without python3-venv): a venv without pip,
            # filled by this interpreter's pip (--python: pip >= 22.3)
            shutil.rmtree(root, ignore_errors=True)
            _run([sys.executable, "-m", "venv", "--without-pip", str(root)],
                 "create the virtualenv (--without-pip)")
            pip = [sys.executable, "-m", "pip", "--python", str(python)]
        _run([*pip, "install", "-q", "--disable-pip-version-check",
              f"apache-flink=={FLINK_VERSION}"], f"pip install apache-flink=={FLINK_VERSION}")
        _run([str(python), "-c", "import pyflink.table, pyflink.version as v; print(v.__version__)"],
             "import pyflink")
        done.write_text(f"apache-flink=={FLINK_VERSION}\n")
        print(f"flink_env: {root} ready in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return python


def connector_jar() -> Path:
    """Flink's shaded Kafka SQL connector (Kafka clients inside), fetched once into the cache."""
    jars = fetch_jars(
        f"flink-kafka-{CONNECTOR_VERSION}",
        [CONNECTOR],
        what=f"Flink's Kafka SQL connector {CONNECTOR_VERSION}",
        # the shaded jar holds everything it needs; nothing else (no `tests` classifier jars)
        keep=lambda artifact: artifact == CONNECTOR_ARTIFACT,
    )
    jar = jars / f"{CONNECTOR_ARTIFACT}-{CONNECTOR_VERSION}.jar"
    if not jar.is_file():
        raise FlinkEnvError(f"{jar} is missing although {jars.parent}/.complete exists; "
                            f"delete {jars.parent} and run this again")
    return jar


def _run(cmd: list[str], what: str) -> None:
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT,
                                check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FlinkEnvError(f"PyFlink virtualenv: cannot {what}: {exc}") from exc
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-30:])
        raise FlinkEnvError(
            f"PyFlink virtualenv {venv_dir()}: could not {what} (exit {result.returncode}): "
            f"{' '.join(cmd)}\n{tail}\nFix: PyPI must be reachable and apache-flink=="
            f"{FLINK_VERSION} installable on this Python ({sys.version.split()[0]}); "
            "then run `python -m tests.integration.flink_env` again."
        )


def main() -> None:
    print(venv_python())
    print(connector_jar())


if __name__ == "__main__":
    main()
