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
from pathlib import Path, PurePosixPath

import pymysql

from cdc_ingest.services._mysql_cnf import OptionValue, render_cnf, server_options
from cdc_ingest.services._process import (
    ServiceError,
    read_pid,
    run_checked,
    stop_pid,
)
from cdc_ingest.services._server import (
    CDC_GRANTS,
    CDC_PASSWORD,
    CDC_USER,
    ROOT_PASSWORD,
    LocalSqlServer,
)
from cdc_ingest.services.mysql_root import (
    MYSQL_ROOT,
    SERVERS_DIR,
    SidRoot,
    sbin,
    server_pids,
)

log = logging.getLogger(__name__)




class ChrootServer(LocalSqlServer):
    """A server for ``home`` run chrooted in a shared Debian sid root (:attr:`root`)."""

    root: SidRoot = MYSQL_ROOT
    daemon_log = "mysqld.log"

    @property
    def log_file(self) -> Path:
        """mysqld's output (its error log goes to the console)."""
        return self.home / self.daemon_log

    @property
    def pid_file(self) -> Path:
        return self.home / (self.daemon_log.removesuffix(".log") + ".pid")

    @property
    def run_dir(self) -> PurePosixPath:
        """This server's directory as mysqld sees it, inside the root."""
        digest = hashlib.sha1(str(self.home).encode()).hexdigest()[:16]
        return SERVERS_DIR / digest

    @property
    def server_dir(self) -> Path:
        """This server's directory inside the root, as seen from outside it."""
        return self.root.path / self.run_dir.relative_to("/")

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

    # -- lifecycle ------------------------------------------------------------------------

    @classmethod
    def ensure_installed(cls) -> None:
        """Build the server's root (``<cache>/<root name>``) unless it exists; needs root."""
        cls.root.ensure()

    def _render_cnf(self) -> str:
        raise NotImplementedError

    def _launch_command(self) -> list[str]:
        """Write the config file; return the server's command line."""
        self.config_file.write_text(self._render_cnf())
        return [sbin("chroot"), str(self.root.path), self.root.daemon, self._marker,
                "--user=root"]

    def _prepare(self) -> None:
        self.root.prune_abandoned_servers()
        if not self.state_file.exists():
            self._discard_leftovers()

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

    def _discard_leftovers(self) -> None:
        """A new home at a path used before: drop what the old one left in the root."""
        if not self.server_dir.exists():
            return
        pids = server_pids(self.run_dir)
        if pids:
            raise ServiceError(
                f"{self.label} (pid {', '.join(map(str, pids))}) still runs from "
                f"{self.server_dir} but {self.home} has no state: stop it (kill {pids[0]}) "
                "and start again"
            )
        log.info("deleting %s, left by an earlier %s", self.server_dir, self.home)
        shutil.rmtree(self.server_dir)

    def _claim(self) -> bool:
        """Link ``home/server`` to the server directory and record its owner; False when
        the server directory is already initialised."""
        link = self.home / "server"
        if not link.is_symlink():
            link.symlink_to(self.server_dir)
        if (self.server_dir / ".initialised").exists():
            return False
        shutil.rmtree(self.datadir, ignore_errors=True)  # a half-done earlier attempt
        for sub in ("binlog", "tmp"):
            (self.server_dir / sub).mkdir(parents=True, exist_ok=True)
        (self.server_dir / "home").write_text(f"{self.home}\n")  # whose directory this is
        return True

    def _in_root(self, *command: str) -> list[str]:
        return [sbin("chroot"), str(self.root.path), *command]


class MySQL(ChrootServer):
    """One MySQL 9.7 server for ``home``, run chrooted in the shared MySQL root."""

    label = "MySQL"
    ready_timeout = 120.0
    root = MYSQL_ROOT

    def restart_with(self, **options: OptionValue) -> None:
        """See :meth:`LocalSqlServer.restart_with`; ``log_bin=None`` adds ``skip_log_bin``,
        since MySQL logs by default."""
        super().restart_with(**options)

    # -- internals ------------------------------------------------------------------------

    def _render_cnf(self) -> str:
        return render_cnf(self._options())

    def _options(self) -> dict[str, OptionValue]:
        options = {**server_options(self.run_dir, self.port), **self._overrides}
        if options.get("log_bin") in (None, False):
            # MySQL 8+ writes a binlog even without log_bin: turn it off as MariaDB would be.
            options.setdefault("skip_log_bin", True)
        return options

    def _initialise(self) -> None:
        """``mysqld --initialize-insecure`` once; root gets its password for 127.0.0.1."""
        if not self._claim():
            return
        init_sql = self.server_dir / "init.sql"
        init_sql.write_text(
            f"ALTER USER 'root'@'localhost' IDENTIFIED BY '{ROOT_PASSWORD}';\n"
            f"CREATE USER 'root'@'127.0.0.1' IDENTIFIED BY '{ROOT_PASSWORD}';\n"
            "GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;\n"
            "GRANT PROXY ON ''@'' TO 'root'@'127.0.0.1' WITH GRANT OPTION;\n"
        )
        run = self.run_dir
        run_checked(
            self._in_root(
                self.root.daemon,
                "--no-defaults",
                "--initialize-insecure",
                f"--datadir={run / 'data'}",
                f"--tmpdir={run / 'tmp'}",
                f"--init-file={run / 'init.sql'}",
                "--user=root",
                "--innodb-buffer-pool-size=64M",
                "--innodb-redo-log-capacity=64M",
            ),
            "mysqld --initialize-insecure",
            timeout=300,
        )
        init_sql.unlink()
        (self.server_dir / ".initialised").touch()

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
