"""A private Oracle MySQL 9.7 for dev, demo and tests, run chrooted in a Debian sid root.

``ensure_installed()`` builds the root once (``mysql_root``, needs root). A server's files are
split between its ``home`` (``state.json``, ``mysqld.pid``, ``mysqld.log``) and a directory of
its own inside the root, ``/srv/cdc-ingest/<id>`` with ``<id>`` a hash of the home, so two
homes never share one (data, binlog, my.cnf, socket, tmp). ``home/server`` links to it;
``stop(wipe=True)`` deletes both, and a later start deletes those whose home is gone.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any

import pymysql

from cdc_ingest.services._mysql_cnf import OptionValue, render_cnf, server_options
from cdc_ingest.services._process import (
    LOCALHOST,
    ServiceError,
    free_port,
    load_state,
    log_tail,
    pid_alive,
    read_pid,
    run_checked,
    save_state,
    spawn_detached,
    stop_pid,
    wait_until,
)
from cdc_ingest.services.mysql_root import (
    MYSQLD,
    SERVERS_DIR,
    ensure_root,
    prune_abandoned_servers,
    root_dir,
    sbin,
    server_pids,
)

log = logging.getLogger(__name__)


ROOT_PASSWORD = "root"
CDC_USER = "cdc"
CDC_PASSWORD = "cdc"
# What `cdc-ingest validate` asks of users; MySQL's default plugin (caching_sha2_password).
CDC_GRANTS = "REPLICATION SLAVE, REPLICATION CLIENT, SELECT"


class MySQL:
    """One MySQL 9.7 server for ``home``, run chrooted in the shared MySQL root.

    ``start()`` and ``stop()`` are idempotent; the port chosen on the first start is kept in
    ``home/state.json`` so later starts (from tests or the CLI) reuse it.
    """

    host = LOCALHOST

    def __init__(self, home: Path, port: int | None = None) -> None:
        self.home = Path(home).resolve()
        self._pid: int | None = None
        self._port = port or load_state(self.state_file).get("port")
        self._overrides: dict[str, OptionValue] = {}

    # -- paths and connection settings ---------------------------------------------------

    @property
    def state_file(self) -> Path:
        return self.home / "state.json"

    @property
    def log_file(self) -> Path:
        """mysqld's output (its error log goes to the console)."""
        return self.home / "mysqld.log"

    @property
    def pid_file(self) -> Path:
        return self.home / "mysqld.pid"

    @property
    def run_dir(self) -> PurePosixPath:
        """This server's directory as mysqld sees it, inside the root."""
        digest = hashlib.sha1(str(self.home).encode()).hexdigest()[:16]
        return SERVERS_DIR / digest

    @property
    def server_dir(self) -> Path:
        """This server's directory inside the root, as seen from outside it."""
        return root_dir() / self.run_dir.relative_to("/")

    @property
    def config_file(self) -> Path:
        return self.server_dir / "my.cnf"

    @property
    def datadir(self) -> Path:
        return self.server_dir / "data"

    @property
    def socket(self) -> Path:
        return self.server_dir / "mysqld.sock"

    @property
    def _marker(self) -> str:
        """What mysqld's command line holds, unique to this home (guards against pid reuse)."""
        return f"--defaults-file={self.run_dir / 'my.cnf'}"

    @property
    def port(self) -> int:
        if self._port is None:
            raise ServiceError(f"MySQL in {self.home} has no port yet: call start() first")
        return int(self._port)

    @property
    def admin(self) -> dict[str, Any]:
        """``pymysql.connect(**kw)`` arguments for root."""
        return {"host": self.host, "port": self.port, "user": "root", "password": ROOT_PASSWORD}

    @property
    def cdc(self) -> dict[str, Any]:
        """``pymysql.connect(**kw)`` arguments for the least-privileged capture user."""
        return {"host": self.host, "port": self.port, "user": CDC_USER, "password": CDC_PASSWORD}

    # -- lifecycle ------------------------------------------------------------------------

    @staticmethod
    def ensure_installed() -> None:
        """Build the MySQL root (``<cache>/mysql-root``) unless it exists; needs root."""
        ensure_root()

    def is_running(self) -> bool:
        pid = read_pid(self.pid_file)
        return pid is not None and pid_alive(pid, self._marker)

    def start(self) -> None:
        """Start the server (initialising it on first use) and create the users."""
        if self.is_running():
            self._wait_ready(read_pid(self.pid_file) or 0)
            self._provision()
            return
        self.ensure_installed()
        prune_abandoned_servers()
        if not self.state_file.exists():
            self._discard_leftovers()
        if self._port is None:
            self._port = free_port()
        self.home.mkdir(parents=True, exist_ok=True)
        save_state(self.state_file, {"port": self._port})
        self._initialise()
        self.config_file.write_text(render_cnf(self._options()))
        cmd = [sbin("chroot"), str(root_dir()), MYSQLD, self._marker, "--user=root"]
        pid = self._pid = spawn_detached(cmd, self.log_file, cwd=self.home)
        self.pid_file.write_text(f"{pid}\n")
        self._wait_ready(pid)
        self._provision()
        log.info("MySQL ready on %s:%d (home %s)", self.host, self.port, self.home)

    def stop(self, wipe: bool = False) -> None:
        """Stop the server; with ``wipe`` also delete its data, binlogs, config and home."""
        pid = read_pid(self.pid_file) or self._pid  # _pid: if stopped before it was written
        if pid is not None:
            stop_pid(pid, self._marker, timeout=60)
        self.pid_file.unlink(missing_ok=True)
        if wipe:
            shutil.rmtree(self.server_dir, ignore_errors=True)
            shutil.rmtree(self.home, ignore_errors=True)
            self._port = None

    def restart_with(self, **options: OptionValue) -> None:
        """Restart with my.cnf options changed; ``None`` removes one; no options = defaults.

        Example: ``restart_with(binlog_format="STATEMENT")`` or ``restart_with(log_bin=None)``
        (binlog off: that adds ``skip_log_bin``, since MySQL logs by default).
        """
        self.stop()
        self._overrides = {key.replace("-", "_"): value for key, value in options.items()}
        self.start()

    @contextmanager
    def reconfigured(self, **options: OptionValue) -> Iterator[MySQL]:
        """``restart_with(**options)`` for the body of a ``with``, then back to the defaults."""
        try:
            self.restart_with(**options)
            yield self
        finally:
            self.restart_with()

    # -- internals ------------------------------------------------------------------------

    def _options(self) -> dict[str, OptionValue]:
        options = {**server_options(self.run_dir, self.port), **self._overrides}
        if options.get("log_bin") in (None, False):
            # MySQL 8+ writes a binlog even without log_bin: turn it off as MariaDB would be.
            options.setdefault("skip_log_bin", True)
        return options

    def _discard_leftovers(self) -> None:
        """A new home at a path used before: drop what the old one left in the root."""
        if not self.server_dir.exists():
            return
        pids = server_pids(self.run_dir)
        if pids:
            raise ServiceError(
                f"mysqld (pid {', '.join(map(str, pids))}) still runs from {self.server_dir} "
                f"but {self.home} has no state: stop it (kill {pids[0]}) and start again"
            )
        log.info("deleting %s, left by an earlier %s", self.server_dir, self.home)
        shutil.rmtree(self.server_dir)

    def _initialise(self) -> None:
        """``mysqld --initialize-insecure`` once; root gets its password for 127.0.0.1."""
        link = self.home / "server"
        if not link.is_symlink():
            link.symlink_to(self.server_dir)
        marker = self.server_dir / ".initialised"
        if marker.exists():
            return
        shutil.rmtree(self.datadir, ignore_errors=True)  # a half-done earlier attempt
        for sub in ("binlog", "tmp"):
            (self.server_dir / sub).mkdir(parents=True, exist_ok=True)
        (self.server_dir / "home").write_text(f"{self.home}\n")  # whose directory this is
        init_sql = self.server_dir / "init.sql"
        init_sql.write_text(
            f"ALTER USER 'root'@'localhost' IDENTIFIED BY '{ROOT_PASSWORD}';\n"
            f"CREATE USER 'root'@'127.0.0.1' IDENTIFIED BY '{ROOT_PASSWORD}';\n"
            "GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;\n"
            "GRANT PROXY ON ''@'' TO 'root'@'127.0.0.1' WITH GRANT OPTION;\n"
        )
        run = self.run_dir
        run_checked(
            [
                sbin("chroot"),
                str(root_dir()),
                MYSQLD,
                "--no-defaults",
                "--initialize-insecure",
                f"--datadir={run / 'data'}",
                f"--tmpdir={run / 'tmp'}",
                f"--init-file={run / 'init.sql'}",
                "--user=root",
                "--innodb-buffer-pool-size=64M",
                "--innodb-redo-log-capacity=64M",
            ],
            "mysqld --initialize-insecure",
            timeout=300,
        )
        init_sql.unlink()
        marker.touch()

    def _wait_ready(self, pid: int) -> None:
        wait_until(
            self._accepts_connections,
            timeout=120,
            what=f"MySQL on port {self.port}",
            details=lambda: log_tail(self.log_file),
            alive=lambda: pid_alive(pid, self._marker),
        )

    def _accepts_connections(self) -> bool:
        try:
            pymysql.connect(**self.admin, connect_timeout=2).close()
        except pymysql.err.OperationalError:
            return False
        return True

    def _provision(self) -> None:
        """Create the least-privileged ``cdc`` user (caching_sha2_password; idempotent)."""
        with pymysql.connect(**self.admin, autocommit=True) as conn, conn.cursor() as cur:
            cur.execute(
                "CREATE USER IF NOT EXISTS %s@'%%' IDENTIFIED WITH caching_sha2_password BY %s",
                (CDC_USER, CDC_PASSWORD),
            )
            cur.execute(f"GRANT {CDC_GRANTS} ON *.* TO %s@'%%'", (CDC_USER,))
