"""The Docker engine, Compose v2 and the images of the Docker Compose test.

``tests/integration/test_docker_compose.py`` runs ``docker/compose.yaml`` with
``docker/compose.test.yaml`` on a real engine. This machine reaches no container registry, so
everything that test runs is built here:

- **the engine**: Debian's ``docker.io`` (``dockerd``), installed with apt and started in the
  background when ``docker info`` does not answer (needs root);
- **Compose v2**: the ``docker compose`` CLI plugin, taken from Debian sid's
  ``docker-compose`` package (Compose 2.x; Debian 12 has only the old Python 1.29), which the
  MySQL root's apt downloads; its one binary goes to ``/usr/local/lib/docker/cli-plugins``;
- **the bases**: ``debian:bookworm-slim`` and ``debian:sid-slim``, each a
  ``debootstrap --variant=minbase`` root imported with ``docker import``, only when no image of
  that name is there (a machine that can pull has the real ones; the Dockerfiles work on both);
- **the images**: ``docker compose ... build`` (cdc-ingest from docker/Dockerfile, and the
  stand-ins for ``mysql`` and ``apache/kafka``), cached by the engine between runs.

``scripts/setup.sh`` runs ``python -m tests.integration.docker_env`` (as root); when a step
fails it says why and setup goes on: the Docker test then fails with the same reason, never
passes or skips.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cdc_ingest.download_cache import cache_dir, file_lock
from cdc_ingest.services.mysql_root import (
    APT_NO_VALID_UNTIL,
    MYSQL_ROOT,
    _chroot_env,
    debian_mirror,
    sbin,
)

REPO = Path(__file__).resolve().parents[2]
DOCKER_DIR = REPO / "docker"
COMPOSE_FILES = (DOCKER_DIR / "compose.yaml", DOCKER_DIR / "compose.test.yaml")
PROJECT = "cdc-ingest-test"  # not the users' "cdc-ingest": a test never touches their stack
PLUGIN = Path("/usr/local/lib/docker/cli-plugins/docker-compose")
ENGINE_WAIT_S = 60
BUILD_TIMEOUT_S = 1800
# the bases the Dockerfiles start FROM, made locally when missing: tag -> Debian suite
BASES = {"debian:bookworm-slim": "bookworm", "debian:sid-slim": "sid"}
# what the official slim images leave out (their dpkg configuration), so that a Dockerfile
# that works here works on them (openjdk's postinst needs the man1 folder slim images drop)
SLIM_DPKG = """\
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
"""


class DockerUnavailable(RuntimeError):
    """The engine, Compose or an image could not be had here; the message says why."""


def _run(cmd: list[str], what: str, timeout: float = 600, **kwargs: object) -> str:
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                check=False, stdin=subprocess.DEVNULL, **kwargs)  # type: ignore[call-overload]
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DockerUnavailable(f"{what}: {' '.join(cmd)}: {exc}") from exc
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-30:])
        raise DockerUnavailable(f"{what} failed (exit {result.returncode}): "
                                f"{' '.join(cmd)}\n{tail}")
    return str(result.stdout)


def _answers(cmd: list[str]) -> bool:
    try:
        return subprocess.run(cmd, capture_output=True, timeout=30, check=False,
                              stdin=subprocess.DEVNULL).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


# -- the engine ----------------------------------------------------------------------------


def ensure_engine() -> None:
    """``docker info`` answers: install and start Debian's dockerd when it does not."""
    if shutil.which("docker") and _answers(["docker", "info"]):
        return
    if os.geteuid() != 0:
        raise DockerUnavailable(
            "no Docker engine answers `docker info`, and starting one needs root: run "
            "`sudo python -m tests.integration.docker_env` (or start dockerd yourself)")
    if not Path(sbin("dockerd")).exists() or not shutil.which("docker"):
        apt = ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get"]
        _run([*apt, "update", "-q"], "apt-get update")
        _run([*apt, "install", "-y", "-q", "--no-install-recommends", "docker.io"],
             "apt-get install docker.io")
    logfile = cache_dir() / "dockerd.log"
    logfile.parent.mkdir(parents=True, exist_ok=True)
    with logfile.open("ab") as out:
        subprocess.Popen([sbin("dockerd")], stdout=out, stderr=out, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    deadline = time.monotonic() + ENGINE_WAIT_S
    while time.monotonic() < deadline:
        if _answers(["docker", "info"]):
            return
        time.sleep(1)
    tail = "\n".join(logfile.read_text(errors="replace").splitlines()[-20:])
    raise DockerUnavailable(
        f"dockerd did not answer within {ENGINE_WAIT_S} s; its log ({logfile}) ends:\n{tail}")


# -- Compose v2 ----------------------------------------------------------------------------


def ensure_compose() -> None:
    """``docker compose version`` answers (Compose v2): install sid's plugin when it does not."""
    if _answers(["docker", "compose", "version"]):
        return
    if os.geteuid() != 0:
        raise DockerUnavailable(
            "`docker compose` (Compose v2) is not installed; installing it needs root: run "
            "`sudo python -m tests.integration.docker_env`, or install Docker's "
            "docker-compose-plugin")
    MYSQL_ROOT.ensure()  # a Debian sid root whose apt can download sid's docker-compose
    root = MYSQL_ROOT.path
    with tempfile.TemporaryDirectory(dir=root / "tmp") as tmp:
        inside = "/tmp/" + Path(tmp).name
        _run(["chroot", str(root), "sh", "-c",
              f"cd {inside} && apt-get {' '.join(APT_NO_VALID_UNTIL)} update -q >/dev/null && "
              f"apt-get {' '.join(APT_NO_VALID_UNTIL)} download docker-compose"],
             "download sid's docker-compose package", env=_chroot_env())
        debs = sorted(Path(tmp).glob("docker-compose_*.deb"))
        if not debs:
            raise DockerUnavailable(f"apt-get download docker-compose left no .deb in {tmp}")
        unpacked = Path(tmp) / "x"
        _run(["dpkg-deb", "-x", str(debs[-1]), str(unpacked)], "unpack docker-compose")
        binary = unpacked / "usr/libexec/docker/cli-plugins/docker-compose"
        if not binary.is_file():
            raise DockerUnavailable(f"{debs[-1].name} has no {binary.relative_to(unpacked)}")
        PLUGIN.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(binary, PLUGIN)
        PLUGIN.chmod(0o755)
    if not _answers(["docker", "compose", "version"]):
        raise DockerUnavailable(f"{PLUGIN} is installed but `docker compose version` fails")


# -- the bases -----------------------------------------------------------------------------


def ensure_bases() -> None:
    for tag, suite in BASES.items():
        if not _answers(["docker", "image", "inspect", tag]):
            _import_base(tag, suite)


def _import_base(tag: str, suite: str) -> None:
    """``tag`` from a debootstrap minbase root of ``suite``, with slim images' settings."""
    if os.geteuid() != 0:
        raise DockerUnavailable(f"no image {tag}, and making it (debootstrap) needs root")
    mirror = debian_mirror()
    with file_lock(cache_dir() / "docker-base.lock"):
        work = cache_dir() / f"docker-base-{suite}"
        shutil.rmtree(work, ignore_errors=True)
        try:
            _run([sbin("debootstrap"), "--variant=minbase", suite, str(work), mirror],
                 f"debootstrap {suite}", timeout=1200)
            (work / "etc/dpkg/dpkg.cfg.d/docker").write_text(SLIM_DPKG)
            (work / "etc/apt/apt.conf.d/docker-clean").write_text(
                'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb '
                '/var/cache/apt/archives/partial/*.deb || true"; };\n'
                'Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";\n')
            if suite == "bookworm":  # as the real image: updates and security too
                (work / "etc/apt/sources.list").unlink(missing_ok=True)
                (work / "etc/apt/sources.list.d/debian.sources").write_text(
                    f"Types: deb\nURIs: {mirror}\nSuites: bookworm bookworm-updates\n"
                    "Components: main\n"
                    "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n"
                    f"Types: deb\nURIs: {mirror}-security\nSuites: bookworm-security\n"
                    "Components: main\n"
                    "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n")
            for leftover in ("var/lib/apt/lists", "var/cache/apt/archives"):
                for path in (work / leftover).glob("*"):
                    if path.is_file():
                        path.unlink()
            tar = subprocess.Popen(["tar", "-C", str(work), "-c", "."],
                                   stdout=subprocess.PIPE)
            result = subprocess.run(
                ["docker", "import", "-c", 'CMD ["bash"]', "-c",
                 f"LABEL org.cdc-ingest.base=debootstrap-{suite}", "-", tag],
                stdin=tar.stdout, capture_output=True, text=True, timeout=600, check=False)
            tar.wait()
            if result.returncode != 0:
                raise DockerUnavailable(f"docker import {tag} failed: {result.stderr.strip()}")
        finally:
            shutil.rmtree(work, ignore_errors=True)


# -- the images ----------------------------------------------------------------------------


def compose_cmd(*args: str) -> list[str]:
    """``docker compose`` on compose.yaml + compose.test.yaml, in the test's project."""
    files = [item for path in COMPOSE_FILES for item in ("-f", str(path))]
    return ["docker", "compose", *files, "-p", PROJECT, *args]


def build_images() -> None:
    _run(compose_cmd("build"), "docker compose build", timeout=BUILD_TIMEOUT_S)


def ensure_all() -> None:
    """Everything the Docker test needs; raises :class:`DockerUnavailable` saying what not."""
    ensure_engine()
    ensure_compose()
    ensure_bases()
    build_images()


def main() -> int:
    started = time.monotonic()
    try:
        ensure_all()
    except DockerUnavailable as exc:
        print(f"docker_env: the Docker Compose test will fail: {exc}", file=sys.stderr)
        return 1
    print(f"docker_env: engine, compose and images ready in {time.monotonic() - started:.0f} s",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
