"""PyFlink for the Flink read-back tests: its own virtualenv, Flink's Kafka SQL connector and
its avro-confluent format.

``apache-flink`` pins its own pyarrow, pandas, numpy, apache-beam ..., which would break
PySpark's, so it lives in a virtualenv of its own in the project cache
(``<cache>/pyflink-<version>-venv``), never in the main environment. The connector jar and
the avro-confluent format jar (``flink-sql-avro-confluent-registry``, shaded: Avro and
Confluent's registry client inside) come from Maven Central through
:func:`cdc_ingest.maven.fetch_jars`. Each is made once, under a file lock, and a marker
written last says it is whole; ``scripts/setup.sh`` makes them::

    python -m tests.integration.flink_env      # prints the venv's python and the two jars

The format jar is 2.0.0 while PyFlink is 2.0.2: 2.0.1 and 2.0.2 of it do not resolve through
this workplace's Maven (docs/decisions/0013-avro-confluent-proposal.md, section 6), a
patch-level mix.

and the test makes them too when they are missing.

:func:`read_back` runs ``flink_readback_job.py`` on a topic (json or avro-confluent key and
value) and returns Flink's final row per key, values as Python values.
"""

from __future__ import annotations

import base64
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from cdc_ingest.download_cache import cache_dir, file_lock
from cdc_ingest.maven import fetch_jars

FLINK_VERSION = "2.0.2"  # apache-flink on PyPI (Python 3.9-3.12)
CONNECTOR_ARTIFACT = "flink-sql-connector-kafka"
CONNECTOR_VERSION = "4.0.1-2.0"  # the Kafka connector release for Flink 2.0
CONNECTOR = f"org.apache.flink:{CONNECTOR_ARTIFACT}:{CONNECTOR_VERSION}"
AVRO_CONFLUENT_ARTIFACT = "flink-sql-avro-confluent-registry"
AVRO_CONFLUENT_VERSION = "2.0.0"  # 2.0.1 / 2.0.2 do not resolve here
AVRO_CONFLUENT = f"org.apache.flink:{AVRO_CONFLUENT_ARTIFACT}:{AVRO_CONFLUENT_VERSION}"
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


def avro_confluent_jar() -> Path:
    """Flink's shaded avro-confluent format (``'key.format' = 'avro-confluent'``), fetched once
    into the cache; add it to ``pipeline.jars`` beside :func:`connector_jar`."""
    jars = fetch_jars(
        f"flink-avro-confluent-{AVRO_CONFLUENT_VERSION}",
        [AVRO_CONFLUENT],
        what=f"Flink's avro-confluent SQL format {AVRO_CONFLUENT_VERSION}",
        # the shaded jar holds everything it needs; nothing else
        keep=lambda artifact: artifact == AVRO_CONFLUENT_ARTIFACT,
    )
    jar = jars / f"{AVRO_CONFLUENT_ARTIFACT}-{AVRO_CONFLUENT_VERSION}.jar"
    if not jar.is_file():
        raise FlinkEnvError(f"{jar} is missing although {jars.parent}/.complete exists; "
                            f"delete {jars.parent} and run this again")
    return jar


JOB = Path(__file__).with_name("flink_readback_job.py")
JOB_TIMEOUT = 180


class FlinkJobError(RuntimeError):
    """The read-back job failed or did not end; the message has the end of its output."""


@dataclass(frozen=True)
class ReadBack:
    """What :func:`read_back` found: ``rows``, one per live key, each ``{"values": {column:
    value}, "tableName": header or None}``; ``summary``: ``kinds`` (count per Flink row kind,
    ``+I``, ``-U``, ``+U``, ``-D``), ``table_names``, ``live_keys``, ``seconds``."""

    rows: list[dict[str, Any]]
    summary: dict[str, Any]


def decode(value: Any) -> Any:
    """The job's tagged JSON value back to Flink's Python value (Decimal, date, time,
    datetime, bytes; lists element by element; a MAP as ``{"map": [[k, v], ...]}`` stays)."""
    if isinstance(value, dict) and len(value) == 1:
        (tag, text), = value.items()
        decoders = {"decimal": Decimal, "date": datetime.date.fromisoformat,
                    "time": datetime.time.fromisoformat,
                    "datetime": datetime.datetime.fromisoformat, "bytes": base64.b64decode}
        if tag in decoders:
            return decoders[tag](text)
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def read_back(
    bootstrap: str,
    topic: str,
    columns: Sequence[tuple[str, str]],
    primary_key: Sequence[str],
    workdir: Path,
    *,
    key_value_format: str = "json",
    registry_url: str | None = None,
    fields_include: str = "ALL",
    timeout: float = JOB_TIMEOUT,
) -> ReadBack:
    """Read ``topic`` back with Flink's ``upsert-kafka`` table and fold it per key.

    ``columns``: ``(name, Flink SQL type)`` pairs, e.g. ``("id", "INT NOT NULL")``;
    ``primary_key``: column names. ``key_value_format``: ``json`` or ``avro-confluent`` (then
    ``registry_url``, the Confluent-compatible base URL, subjects ``<topic>-key`` /
    ``<topic>-value``). ``fields_include``: ``ALL`` (the value holds the key columns too) or
    ``EXCEPT_KEY``. TIMESTAMP / TIMESTAMP_LTZ columns come back as Flink's text
    (``2024-01-31 12:00:00.123``, UTC). Provisions the virtualenv and jars if missing; runs in
    ``workdir`` (its files ``flink.jsonl``, ``flink-summary.json`` are kept);
    raises :class:`FlinkJobError` when the job fails or outlives ``timeout`` seconds.
    """
    python = venv_python()
    jars = [connector_jar()]
    if key_value_format == "avro-confluent":
        if not registry_url:
            raise ValueError("avro-confluent needs registry_url")
        jars.append(avro_confluent_jar())
    elif key_value_format != "json":
        raise ValueError(f"key_value_format {key_value_format!r}: want json or avro-confluent")
    out, summary = workdir / "flink.jsonl", workdir / "flink-summary.json"
    cmd = [str(python), str(JOB), "--bootstrap", bootstrap, "--topic", topic,
           *(arg for jar in jars for arg in ("--jar", str(jar))),
           "--format", key_value_format, "--fields-include", fields_include,
           "--primary-key", ", ".join(f"`{k}`" for k in primary_key),
           "--columns", ", ".join(f"`{n}` {flink_type}" for n, flink_type in columns),
           "--out", str(out), "--summary", str(summary)]
    if registry_url:
        cmd += ["--registry-url", registry_url]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    try:
        job = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False,
                             cwd=workdir, env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise FlinkJobError(
            f"the Flink job did not end within {timeout:.0f} s (a bounded read that never "
            f"reaches the latest offsets?):\n{exc.stderr!r}"[-6000:]) from exc
    if job.returncode != 0:
        raise FlinkJobError(f"the Flink job failed (exit {job.returncode}):\n"
                            f"{job.stderr[-6000:]}")
    rows = []
    for line in out.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        rows.append({"values": {n: decode(v) for n, v in entry["values"].items()},
                     "tableName": entry["tableName"]})
    return ReadBack(rows=rows, summary=json.loads(summary.read_text()))


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
    print(avro_confluent_jar())


if __name__ == "__main__":
    main()
