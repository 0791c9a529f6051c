"""The Debian sid roots that hold the servers Debian 12 lacks: Oracle MySQL 9.7 (the local
``MySQL`` service) and MariaDB 11.8 (``MariaDB118``).

Debian 12 ships no MySQL and only MariaDB 10.11, but Debian sid has ``mysql-server-core`` and
``mariadb-server`` 11.8: :meth:`SidRoot.ensure` builds ``<cache>/<name>`` once with
debootstrap (from the Debian archive this machine's apt uses) and apt-get in a chroot, and
marks it complete only once the server binary runs there. The two packages cannot share a root
(both install ``mysqld``), so each has its own: :data:`MYSQL_ROOT`, :data:`MARIADB_ROOT`.
Servers run in a root under ``chroot``, each from its own directory ``/srv/cdc-ingest/<id>``.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from cdc_ingest.download_cache import cache_dir, file_lock
from cdc_ingest.services._process import ServiceError, run_checked

log = logging.getLogger(__name__)

SUITE = "sid"
COMPLETE_MARKER = ".cdc-ingest-complete"  # in the root: written once the root works
SERVERS_DIR = PurePosixPath("/srv/cdc-ingest")  # inside the root: one directory per home
MIRROR_ENV = "CDC_INGEST_DEBIAN_MIRROR"
APT_NO_VALID_UNTIL = ("-o", "Acquire::Check-Valid-Until=false")


# -- the root ----------------------------------------------------------------------------


def debian_mirror() -> str:
    """The Debian archive this machine's apt uses (``$CDC_INGEST_DEBIAN_MIRROR`` overrides)."""
    override = os.environ.get(MIRROR_ENV)
    if override:
        return override.rstrip("/")
    sources = [Path("/etc/apt/sources.list")]
    sources_d = Path("/etc/apt/sources.list.d")
    if sources_d.is_dir():
        sources += sorted(p for p in sources_d.iterdir() if p.suffix in {".list", ".sources"})
    for path in sources:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        for uri in _debian_uris(text):
            return uri.rstrip("/")
    raise ServiceError(
        "no Debian archive found in /etc/apt/sources.list or /etc/apt/sources.list.d/ to "
        f"build the MySQL root from; set {MIRROR_ENV}=http://<debian mirror>/debian"
    )


def _debian_uris(text: str) -> Iterator[str]:
    """URIs of the main Debian archive (not -security) in a one-line or deb822 sources file."""
    for line in text.splitlines():  # one-line style: deb [opts] URI suite components
        fields = re.sub(r"\[[^]]*\]", " ", line.split("#", 1)[0]).split()
        if len(fields) >= 3 and fields[0] == "deb" and _is_debian_main(fields[1], fields[2:3]):
            yield fields[1]
    for stanza in re.split(r"\n\s*\n", text):  # deb822 style
        entry = dict(
            (key.strip().lower(), value.strip())
            for key, sep, value in (
                line.partition(":") for line in stanza.splitlines() if not line.startswith("#")
            )
            if sep
        )
        if "deb" not in entry.get("types", "").split():
            continue
        for uri in entry.get("uris", "").split():
            if _is_debian_main(uri, entry.get("suites", "").split()):
                yield uri


def _is_debian_main(uri: str, suites: list[str]) -> bool:
    return (
        uri.startswith(("http://", "https://"))
        and "security" not in uri
        and uri.rstrip("/").endswith("/debian")
        and any("security" not in suite for suite in suites)
    )


def sbin(name: str) -> str:
    """A system tool's path: /usr/sbin is not on every user's PATH."""
    return shutil.which(name) or f"/usr/sbin/{name}"


def _chroot_env() -> dict[str, str]:
    env = {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "DEBIAN_FRONTEND": "noninteractive",
        "LC_ALL": "C",
        "HOME": "/root",
    }
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "no_proxy"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def _mounts_under(path: Path) -> list[str]:
    """Mount points at or below ``path`` (deepest first), e.g. a /proc debootstrap left."""
    prefix = str(path.resolve())
    found = []
    with open("/proc/self/mounts") as mounts:
        for line in mounts:
            point = line.split()[1].replace("\\040", " ")
            if point == prefix or point.startswith(prefix + "/"):
                found.append(point)
    return sorted(found, key=len, reverse=True)


def _remove_tree(path: Path) -> None:
    """Delete a (half-built) root, unmounting what a killed debootstrap left mounted in it."""
    if not path.exists():
        return
    for point in _mounts_under(path):
        subprocess.run([sbin("umount"), "-l", point], check=False, capture_output=True)
    if _mounts_under(path):
        raise ServiceError(f"{path} still has file systems mounted in it; unmount them first")
    shutil.rmtree(path)


def _install_debootstrap() -> None:
    if Path(sbin("debootstrap")).exists():
        return
    log.info("installing debootstrap with apt-get")
    apt = ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get"]
    try:
        run_checked([*apt, "update", "-q"], "apt-get update", timeout=600)
        run_checked(
            [*apt, "install", "-y", "-q", "--no-install-recommends", "debootstrap"],
            "apt-get install debootstrap",
            timeout=600,
        )
    except ServiceError as exc:
        raise ServiceError(
            f"{exc}\nFix: install Debian's debootstrap package (apt-get install debootstrap)"
        ) from exc


@dataclass(frozen=True)
class SidRoot:
    """One Debian sid root: its directory name in the cache, the packages installed into it
    and the server binary whose ``--version`` proves it works."""

    name: str
    packages: tuple[str, ...]
    daemon: str  # the server binary, inside the root
    what: str  # for messages: "MySQL", "MariaDB 11.8"
    fetch_name: str  # `python -m cdc_ingest.services fetch <fetch_name>` builds it

    @property
    def path(self) -> Path:
        """``<cache>/<name>``."""
        return cache_dir() / self.name

    def complete(self, root: Path | None = None) -> bool:
        return ((root or self.path) / COMPLETE_MARKER).is_file()

    def ensure(self) -> None:
        """Build the root unless it exists.

        Needs root (debootstrap, chroot). Runs once across processes (a file lock); the root
        is built next to its final place and renamed there only once the server runs in it.
        """
        root = self.path
        if self.complete(root):
            return
        if os.geteuid() != 0:
            raise ServiceError(
                f"building the {self.what} root ({root}) needs root (debootstrap, chroot): "
                f"run `sudo python -m cdc_ingest.services fetch {self.fetch_name}` once"
            )
        with file_lock(root.with_name(self.name + ".lock")):
            if self.complete(root):
                return
            _install_debootstrap()
            mirror = debian_mirror()
            build = root.with_name(self.name + ".build")
            _remove_tree(build)
            version = self._build(build, mirror)
            (build / COMPLETE_MARKER).write_text(f"{version}\nmirror: {mirror}\n")
            _remove_tree(root)  # an incomplete root from an older attempt
            build.rename(root)

    def _build(self, build: Path, mirror: str) -> str:
        """debootstrap sid into ``build`` and install the packages; return ``--version``."""
        started = time.monotonic()
        log.info("debootstrap %s from %s into %s (about a minute or two)", SUITE, mirror, build)
        try:
            run_checked(
                [sbin("debootstrap"), "--variant=minbase", SUITE, str(build), mirror],
                "debootstrap",
                timeout=1800,
            )
        except ServiceError as exc:
            raise ServiceError(
                f"{exc}\nFix: check that {mirror} is reachable and serves '{SUITE}' (or set "
                f"{MIRROR_ENV}), and see {build}/debootstrap/debootstrap.log if it exists"
            ) from exc
        packages = " ".join(self.packages)
        log.info("debootstrap done in %.0f s; apt-get install %s",
                 time.monotonic() - started, packages)
        env = _chroot_env()
        apt = [sbin("chroot"), str(build), "apt-get", *APT_NO_VALID_UNTIL]
        where = f"in the {self.what} root"
        try:
            run_checked([*apt, "update", "-q"], f"apt-get update {where}", 600, env=env)
            run_checked(
                [*apt, "install", "-y", "-q", "--no-install-recommends", *self.packages],
                f"apt-get install {where}",
                1200,
                env=env,
            )
            run_checked([*apt, "clean"], f"apt-get clean {where}", 120, env=env)
        except ServiceError as exc:
            raise ServiceError(
                f"{exc}\nFix: check that {mirror} is reachable and has {packages} in "
                f"'{SUITE}'; then run `python -m cdc_ingest.services fetch {self.fetch_name}` "
                "again"
            ) from exc
        version = subprocess.run(
            [sbin("chroot"), str(build), self.daemon, "--version"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
        if version.returncode != 0 or "Ver " not in version.stdout:
            raise ServiceError(f"{self.daemon} in the new root does not run: "
                               f"{(version.stdout + version.stderr).strip()}")
        log.info("%s root built in %.0f s: %s", self.what, time.monotonic() - started,
                 version.stdout.strip())
        return version.stdout.strip()

    def prune_abandoned_servers(self) -> list[Path]:
        """Delete the server directories in the root whose home is gone and whose server is
        not running (a test session killed before its clean-up, a home deleted by hand)."""
        servers = self.path / SERVERS_DIR.relative_to("/")
        pruned = []
        for server in sorted(servers.iterdir()) if servers.is_dir() else []:
            try:
                home = Path((server / "home").read_text().strip())
            except OSError:  # no owner recorded yet: being initialised right now
                continue
            run = SERVERS_DIR / server.name
            if home.exists() or server_pids(run):
                continue
            log.info("deleting %s: its home %s is gone and nothing runs from it", server, home)
            shutil.rmtree(server, ignore_errors=True)
            pruned.append(server)
        return pruned


MYSQL_ROOT = SidRoot("mysql-root", ("mysql-server-core", "mysql-client-core"),
                     "/usr/sbin/mysqld", "MySQL", "mysql")
# mariadb-server brings mariadb-install-db and the client; its recommends are left out.
MARIADB_ROOT = SidRoot("mariadb-root", ("mariadb-server", "mariadb-client"),
                       "/usr/sbin/mariadbd", "MariaDB 11.8", "mariadb118")


# -- the servers in it ------------------------------------------------------------------


def server_pids(run: PurePosixPath) -> list[int]:
    """The processes whose command line names the server directory ``run`` (any home's)."""
    needle = f"--defaults-file={run}/".encode()
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if needle in (proc / "cmdline").read_bytes():
                pids.append(int(proc.name))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return sorted(pids)
