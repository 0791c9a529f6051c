"""Sets of jars from Maven Central, fetched once into the cache: Kafka, Spark's connector, ...

:func:`fetch_jars` writes a pom listing the artifacts into ``<cache>/<name>/``, runs
``mvn dependency:copy-dependencies`` there and keeps the jars in one flat folder beside it.
A file lock makes concurrent processes fetch once; a ``.complete`` marker, written last, tells
later calls that the folder is whole. :func:`fetch_artifact` copies one artifact of any type
(a ``zip`` with a classifier, say) into a folder, for callers that unpack it themselves.
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from xml.sax.saxutils import escape

from cdc_ingest.download_cache import cache_dir, file_lock
from cdc_ingest.errors import CdcIngestError

log = logging.getLogger(__name__)

DEPENDENCY_PLUGIN = "3.8.1"  # maven-dependency-plugin, pinned so every fetch runs the same

_NETWORK_FIX = (
    "Fix: Maven must reach Maven Central (check the network, a proxy, ~/.m2/settings.xml) "
    "and every artifact in {pom} must exist there."
)


class MavenError(CdcIngestError):
    """Maven could not fetch a set of jars; the message says what failed and how to fix it."""


def fetch_jars(
    name: str,
    artifacts: Sequence[str],
    *,
    what: str = "",
    folder: str = "jars",
    keep: Callable[[str], bool] | None = None,
    required: Sequence[str] = (),
    fix: str = "",
    timeout: float = 1800,
) -> Path:
    """The jar set ``name``: ``artifacts`` and their runtime dependencies, in one flat folder.

    ``artifacts`` are ``group:artifact:version`` or ``group:artifact:version:classifier``.
    The jars land in ``<cache>/<name>/<folder>`` (``name`` may contain ``/``), fetched with
    Maven on the first call only; later calls, also from other processes, return the folder
    as it is. ``keep(artifact_id)`` decides which fetched jars stay (default: all). The fetch
    fails, and is retried by the next call, when a jar of ``artifacts`` (that ``keep``
    keeps) or a file named in ``required`` is missing afterwards. ``what`` names the set in
    logs and errors; ``fix`` is added to the error when Maven fails.
    """
    root = cache_dir() / name
    jars, done = root / folder, root / ".complete"
    if done.exists():
        return jars
    what = what or f"the {name} jars"
    coordinates = [_coordinates(text) for text in artifacts]
    with file_lock(root.parent / f"{root.name}.lock"):
        if done.exists():  # another process fetched them while we waited
            return jars
        if shutil.which("mvn") is None:
            raise MavenError(
                f"fetching {what} needs Maven, and `mvn` is not on PATH. "
                "Fix: install it (Debian: apt-get install maven)."
            )
        log.info("fetching %s from Maven Central into %s", what, jars)
        started = time.monotonic()
        staging = root / "staging"
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(jars, ignore_errors=True)
        root.mkdir(parents=True, exist_ok=True)
        pom = root / "pom.xml"
        pom.write_text(_pom(name, what, coordinates))
        _run_maven(
            [
                "mvn", "-q", "-B", "-Dstyle.color=never", "dependency:copy-dependencies",
                f"-DoutputDirectory={staging}", "-DincludeScope=runtime",
                # group/artifact/version folders: the artifact id of each jar is then
                # certain, not guessed from its file name
                "-Dmdep.useRepositoryLayout=true",
            ],
            what=what,
            cwd=root,
            timeout=timeout,
            fix=" ".join(filter(None, [_NETWORK_FIX.format(pom=pom), fix])),
        )  # fmt: skip
        _keep_jars(staging, jars, keep)
        shutil.rmtree(staging)
        wanted = [
            f"{artifact}-{version}{f'-{classifier}' if classifier else ''}.jar"
            for _, artifact, version, classifier in coordinates
            if keep is None or keep(artifact)
        ] + list(required)
        missing = [jar for jar in wanted if not (jars / jar).is_file()]
        if missing:
            raise MavenError(f"Maven finished but {jars} lacks {', '.join(missing)} (see {pom})")
        names = sorted(p.name for p in jars.glob("*.jar"))
        done.write_text("".join(f"{jar}\n" for jar in names))
        log.info("fetched %d jars in %.1f s", len(names), time.monotonic() - started)
    return jars


def fetch_artifact(artifact: str, into: Path, *, what: str = "", timeout: float = 1800) -> Path:
    """One file, ``group:artifact:version:type[:classifier]`` (no dependencies), copied by
    ``mvn dependency:copy`` into the folder ``into``; return its path.

    No cache marker or lock here: the caller holds its own (it usually unpacks the file).
    """
    parts = artifact.split(":")
    if len(parts) not in (4, 5) or not all(parts):
        raise ValueError(f"{artifact!r}: want group:artifact:version:type[:classifier]")
    _, artifact_id, version, kind = parts[:4]
    classifier = f"-{parts[4]}" if len(parts) == 5 else ""
    what = what or artifact
    if shutil.which("mvn") is None:
        raise MavenError(
            f"fetching {what} needs Maven, and `mvn` is not on PATH. "
            "Fix: install it (Debian: apt-get install maven)."
        )
    into.mkdir(parents=True, exist_ok=True)
    log.info("fetching %s from Maven Central into %s", what, into)
    _run_maven(
        [
            "mvn", "-q", "-B", "-Dstyle.color=never",
            f"org.apache.maven.plugins:maven-dependency-plugin:{DEPENDENCY_PLUGIN}:copy",
            f"-Dartifact={artifact}", f"-DoutputDirectory={into}",
        ],
        what=what,
        cwd=into,
        timeout=timeout,
        fix=f"Fix: Maven must reach Maven Central (check the network, a proxy, "
        f"~/.m2/settings.xml) and {artifact} must exist there.",
    )  # fmt: skip
    path = into / f"{artifact_id}-{version}{classifier}.{kind}"
    if not path.is_file():
        raise MavenError(f"Maven finished but {into} lacks {path.name}")
    return path


def _coordinates(text: str) -> tuple[str, str, str, str]:
    parts = text.split(":")
    if len(parts) not in (3, 4) or not all(parts):
        raise ValueError(f"{text!r}: want group:artifact:version or ...:version:classifier")
    group, artifact, version = parts[:3]
    return group, artifact, version, parts[3] if len(parts) == 4 else ""


def _pom(name: str, what: str, coordinates: list[tuple[str, str, str, str]]) -> str:
    dependencies = "".join(
        "    <dependency>\n"
        f"      <groupId>{escape(group)}</groupId>\n"
        f"      <artifactId>{escape(artifact)}</artifactId>\n"
        f"      <version>{escape(version)}</version>\n"
        + (f"      <classifier>{escape(classifier)}</classifier>\n" if classifier else "")
        + "    </dependency>\n"
        for group, artifact, version, classifier in coordinates
    )
    comment = what.replace("--", "- -")
    artifact_id = re.sub(r"[^A-Za-z0-9_.-]+", "-", name)
    return f"""\
<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by cdc_ingest.maven: {comment}. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.cdc-ingest.local</groupId>
  <artifactId>{artifact_id}</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
{dependencies}  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-dependency-plugin</artifactId>
        <version>{DEPENDENCY_PLUGIN}</version>
      </plugin>
    </plugins>
  </build>
</project>
"""


def _run_maven(cmd: list[str], *, what: str, cwd: Path, timeout: float, fix: str) -> None:
    """Run Maven; on failure raise with the end of its output and ``fix``."""
    command = " ".join(cmd)
    try:
        result = subprocess.run(
            cmd,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise MavenError(
            f"fetching {what} with Maven did not finish in {timeout:.0f} s: {command} "
            f"(in {cwd})\n{fix}"
        ) from exc
    except OSError as exc:
        raise MavenError(f"fetching {what}: cannot run {command}: {exc}") from exc
    if result.returncode != 0:
        output = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout + result.stderr)
        tail = "\n".join(output.strip().splitlines()[-40:])
        raise MavenError(
            f"fetching {what} with Maven failed (exit {result.returncode}): {command} "
            f"(in {cwd})\n{tail}\n{fix}"
        )


def _keep_jars(staging: Path, jars: Path, keep: Callable[[str], bool] | None) -> None:
    """Move the jars of Maven's repository layout (``.../<artifact>/<version>/<jar>``) that
    ``keep`` keeps into the flat folder ``jars``."""
    jars.mkdir()
    for jar in sorted(staging.rglob("*.jar")):
        artifact = jar.parent.parent.name
        if keep is not None and not keep(artifact):
            log.debug("not keeping %s", jar.name)
            continue
        if (jars / jar.name).exists():
            log.warning("two artifacts have the jar name %s; keeping one", jar.name)
        jar.replace(jars / jar.name)
