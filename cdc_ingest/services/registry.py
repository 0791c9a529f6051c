"""A local Confluent-compatible Schema Registry for dev and tests: Apicurio Registry 2.6.

Run from Maven Central like Kafka: ``io.apicurio:apicurio-registry-app:<version>:zip:all``
(142 MB) is copied with Maven (:func:`cdc_ingest.maven.fetch_artifact`) and unpacked once into
``<cache>/apicurio-registry-<version>/app`` (``...-runner.jar`` and ``lib/``), under a file
lock, with a ``.complete`` marker written last so that a half unpack is redone.
``java -jar ...-runner.jar`` (Quarkus, Java 17) then serves on 127.0.0.1 and a free port, with
its in-memory storage (the default: every start begins empty), output in ``<home>/registry.log``.

Clients use :attr:`SchemaRegistry.url`, the Confluent-compatible API
(``http://127.0.0.1:<port>/apis/ccompat/v7``); it is ready when ``GET <url>/config`` answers 200.

Compatibility: Apicurio's default global level is NONE, Confluent's BACKWARD. Both ways are
used, because neither alone is enough:

- the startup property ``registry.rules.global.compatibility=BACKWARD`` (Apicurio's default
  global rules, prefix ``registry.rules.global`` in its ``RulesConfiguration``) is enforced
  from the first request (probe: adding a field without a default got 409), but the ccompat
  ``GET /config`` still answered ``{"compatibilityLevel":"NONE"}`` (it reports only a stored
  global rule, not the configured default);
- so right after it is ready a new process also gets ``PUT <url>/config
  {"compatibility":"BACKWARD"}``, after which ``GET /config`` answers BACKWARD, as Confluent's.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

from cdc_ingest import maven
from cdc_ingest.download_cache import cache_dir, file_lock
from cdc_ingest.services._process import (
    LOCALHOST,
    ServiceError,
    free_port,
    load_state,
    log_tail,
    pid_alive,
    read_pid,
    save_state,
    spawn_detached,
    stop_pid,
    wait_until,
)
from cdc_ingest.services.kafka import _require

log = logging.getLogger(__name__)

DEFAULT_VERSION = "2.6.13.Final"
READY_TIMEOUT = 120.0
COMPATIBILITY = "BACKWARD"  # Confluent's default global level


def _runner_name(version: str) -> str:
    return f"apicurio-registry-app-{version}-runner.jar"


def fetch_app(version: str = DEFAULT_VERSION) -> Path:
    """Download and unpack Apicurio Registry once into the cache; return its runner jar."""
    root = cache_dir() / f"apicurio-registry-{version}"
    app, done = root / "app", root / ".complete"
    runner = app / _runner_name(version)
    if done.exists():
        return runner
    with file_lock(root.parent / f"{root.name}.lock"):
        if done.exists():  # another process unpacked it while we waited
            return runner
        started = time.monotonic()
        shutil.rmtree(app, ignore_errors=True)
        download = root / "download"
        try:
            archive = maven.fetch_artifact(
                f"io.apicurio:apicurio-registry-app:{version}:zip:all",
                download,
                what=f"Apicurio Registry {version} (142 MB)",
            )
        except maven.MavenError as exc:
            raise ServiceError(str(exc)) from exc
        log.info("unpacking %s into %s", archive.name, app)
        try:
            with zipfile.ZipFile(archive) as zipped:
                zipped.extractall(app)
        except (OSError, zipfile.BadZipFile) as exc:
            raise ServiceError(f"cannot unpack {archive} into {app}: {exc}") from exc
        if not runner.is_file() or not (app / "lib").is_dir():
            raise ServiceError(f"{archive} unpacked into {app} lacks {runner.name} or lib/")
        shutil.rmtree(download, ignore_errors=True)  # Maven's local repository keeps a copy
        done.write_text(f"{runner.name}\n")
        log.info(
            "Apicurio Registry %s ready in the cache in %.1f s", version, time.monotonic() - started
        )
    return runner


def _get(url: str, timeout: float = 2.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except (OSError, ValueError):
        return 0, b""


class SchemaRegistry:
    """One Apicurio Registry (in-memory storage) with its logs under ``home``.

    ``start()`` and ``stop()`` are idempotent; the port is kept in ``home/state.json`` so later
    starts reuse it. The schemas live only as long as the process: a new start is empty.
    """

    host = LOCALHOST

    def __init__(self, home: Path, port: int | None = None, version: str = DEFAULT_VERSION):
        self.home = Path(home).resolve()
        self._pid: int | None = None
        self.version = version
        state = load_state(self.state_file)
        self._port: int | None = port or state.get("port")

    @property
    def state_file(self) -> Path:
        return self.home / "state.json"

    @property
    def pid_file(self) -> Path:
        return self.home / "registry.pid"

    @property
    def log_file(self) -> Path:
        """The JVM's output (Quarkus logs to the console)."""
        return self.home / "registry.log"

    @property
    def _marker(self) -> str:
        """On the JVM's command line, so a recycled pid is not taken for the registry."""
        return f"-Dcdc_ingest.service.home={self.home}"

    @property
    def port(self) -> int:
        if self._port is None:
            raise ServiceError(f"the registry in {self.home} has no port yet: call start() first")
        return int(self._port)

    @property
    def url(self) -> str:
        """The Confluent-compatible base URL: ``http://127.0.0.1:<port>/apis/ccompat/v7``."""
        return f"http://{self.host}:{self.port}/apis/ccompat/v7"

    def is_running(self) -> bool:
        pid = read_pid(self.pid_file)
        return pid is not None and pid_alive(pid, self._marker)

    def start(self) -> None:
        """Start the registry and wait until its ccompat API answers."""
        if self.is_running():
            self._wait_ready(read_pid(self.pid_file) or 0)
            return
        _require("java", "default-jdk-headless")
        runner = fetch_app(self.version)
        self._port = self._port or free_port()
        self.home.mkdir(parents=True, exist_ok=True)
        save_state(self.state_file, {"port": self._port})
        cmd = [
            "java", "-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Xss512k", "-Djava.awt.headless=true", self._marker,
            f"-Dquarkus.http.host={self.host}", f"-Dquarkus.http.port={self._port}",
            "-Dquarkus.banner.enabled=false",
            f"-Dregistry.rules.global.compatibility={COMPATIBILITY}",
            "-jar", str(runner),
        ]  # fmt: skip
        started = time.monotonic()
        pid = self._pid = spawn_detached(cmd, self.log_file, self.home)
        self.pid_file.write_text(f"{pid}\n")
        self._wait_ready(pid)
        self._set_compatibility(COMPATIBILITY)
        log.info(
            "Schema Registry ready at %s in %.1f s (home %s)",
            self.url,
            time.monotonic() - started,
            self.home,
        )

    def stop(self, wipe: bool = False) -> None:
        """Stop the registry; with ``wipe`` also delete its home (logs, state)."""
        pid = read_pid(self.pid_file) or self._pid  # _pid: if stopped before it was written
        if pid is not None:
            stop_pid(pid, self._marker)
        self.pid_file.unlink(missing_ok=True)
        if wipe:
            shutil.rmtree(self.home, ignore_errors=True)
            self._port = None

    def compatibility(self) -> str:
        """The global compatibility level (``GET <url>/config``)."""
        status, body = _get(f"{self.url}/config", timeout=10)
        if status != 200:
            raise ServiceError(f"GET {self.url}/config answered {status}: {body[:300]!r}")
        level: str = json.loads(body)["compatibilityLevel"]
        return level

    def _set_compatibility(self, level: str) -> None:
        request = urllib.request.Request(
            f"{self.url}/config",
            data=json.dumps({"compatibility": level}).encode(),
            method="PUT",
            headers={"Content-Type": "application/vnd.schemaregistry.v1+json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                response.read()
        except (OSError, ValueError) as exc:
            raise ServiceError(
                f"PUT {self.url}/config {level} failed: {exc}\n{log_tail(self.log_file)}"
            ) from exc

    def _wait_ready(self, pid: int) -> None:
        wait_until(
            lambda: _get(f"{self.url}/config")[0] == 200,
            timeout=READY_TIMEOUT,
            what=f"Schema Registry at {self.url}",
            details=lambda: log_tail(self.log_file),
            alive=lambda: pid_alive(pid, self._marker),
        )
