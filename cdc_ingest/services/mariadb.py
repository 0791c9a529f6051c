"""A private MariaDB server for dev, demo and tests, configured the way capture needs it."""

from __future__ import annotations

import getpass
import hashlib
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pymysql

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

log = logging.getLogger(__name__)

MARIADBD = Path("/usr/sbin/mariadbd")
ROOT_PASSWORD = "root"
CDC_USER = "cdc"
CDC_PASSWORD = "cdc"
# What `cdc-ingest validate` asks of users. MariaDB 10.5+ shows REPLICATION CLIENT as
# BINLOG MONITOR, which is what SHOW MASTER STATUS / SHOW BINARY LOGS need.
CDC_GRANTS = "REPLICATION SLAVE, REPLICATION CLIENT, SELECT"
ACCESS_DENIED = 1045
# A unix socket path must fit in sockaddr_un (108 bytes on Linux).
MAX_SOCKET_PATH = 100

OptionValue = str | int | bool | None


def _server_options(home: Path, port: int, socket: Path) -> dict[str, OptionValue]:
    """The my.cnf [mariadbd] options; keys use underscores so overrides can replace them."""
    return {
        "datadir": str(home / "data"),
        "port": port,
        "bind_address": LOCALHOST,
        "socket": str(socket),
        "pid_file": str(home / "mariadbd.pid"),
        "server_id": 1,
        "log_bin": str(home / "binlog" / "mysql-bin"),
        "binlog_format": "ROW",
        "binlog_row_image": "FULL",
        "binlog_row_metadata": "FULL",
        "binlog_annotate_row_events": "OFF",
        "gtid_strict_mode": "OFF",
        "max_allowed_packet": "64M",
        "innodb_buffer_pool_size": "256M",
        "character_set_server": "utf8mb4",
        "collation_server": "utf8mb4_general_ci",
        "default_time_zone": "'+00:00'",
        "skip_name_resolve": True,
    }


def _render_cnf(options: dict[str, OptionValue], port: int, socket: Path) -> str:
    lines = ["# written by cdc_ingest.services.mariadb; rewritten on every start", "[mariadbd]"]
    for key, value in options.items():
        if value is None or value is False:
            continue
        lines.append(key if value is True else f"{key}={value}")
    lines += ["", "[client]", f"port={port}", f"socket={socket}", ""]
    return "\n".join(lines)


class MariaDB:
    """One MariaDB server with its data, binlog, config and logs under ``home``.

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
    def config_file(self) -> Path:
        return self.home / "my.cnf"

    @property
    def log_file(self) -> Path:
        return self.home / "mariadbd.log"

    @property
    def pid_file(self) -> Path:
        return self.home / "mariadbd.pid"

    @property
    def datadir(self) -> Path:
        return self.home / "data"

    @property
    def socket(self) -> Path:
        path = self.home / "mariadbd.sock"
        if len(str(path)) <= MAX_SOCKET_PATH:
            return path
        digest = hashlib.sha1(str(self.home).encode()).hexdigest()[:12]
        return Path(tempfile.gettempdir()) / f"cdc-ingest-mariadb-{digest}.sock"

    @property
    def port(self) -> int:
        if self._port is None:
            raise ServiceError(f"MariaDB in {self.home} has no port yet: call start() first")
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
        """Install the Debian packages when ``mariadbd`` is missing."""
        if MARIADBD.exists():
            return
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        apt = [*sudo, "env", "DEBIAN_FRONTEND=noninteractive", "apt-get"]
        log.info("installing mariadb-server and mariadb-client with apt-get")
        run_checked([*apt, "update", "-q"], "apt-get update", timeout=600)
        run_checked(
            [*apt, "install", "-y", "-q", "mariadb-server", "mariadb-client"],
            "apt-get install mariadb-server mariadb-client",
            timeout=1200,
        )

    def is_running(self) -> bool:
        pid = read_pid(self.pid_file)
        return pid is not None and pid_alive(pid, str(self.config_file))

    def start(self) -> None:
        """Start the server (initialising it on first use) and create the users."""
        if self.is_running():
            self._wait_ready(read_pid(self.pid_file) or 0)
            self._provision()
            return
        self.ensure_installed()
        if self._port is None:
            self._port = free_port()
        self.home.mkdir(parents=True, exist_ok=True)
        save_state(self.state_file, {"port": self._port})
        self._initialise()
        self.config_file.write_text(_render_cnf(self._options(), self.port, self.socket))
        user = ["--user=root"] if os.geteuid() == 0 else []
        cmd = [str(MARIADBD), f"--defaults-file={self.config_file}", *user]
        pid = self._pid = spawn_detached(cmd, self.log_file, cwd=self.home)
        self.pid_file.write_text(f"{pid}\n")
        self._wait_ready(pid)
        self._provision()
        log.info("MariaDB ready on %s:%d (home %s)", self.host, self.port, self.home)

    def stop(self, wipe: bool = False) -> None:
        """Stop the server; with ``wipe`` also delete its data, binlogs and config."""
        pid = read_pid(self.pid_file) or self._pid  # _pid: if stopped before it was written
        if pid is not None:
            stop_pid(pid, str(self.config_file))
        self.pid_file.unlink(missing_ok=True)
        if wipe:
            shutil.rmtree(self.home, ignore_errors=True)
            self._port = None

    def restart_with(self, **options: OptionValue) -> None:
        """Restart with my.cnf options changed; ``None`` removes one; no options = defaults.

        Example: ``restart_with(binlog_format="STATEMENT")`` or ``restart_with(log_bin=None)``.
        """
        self.stop()
        self._overrides = {key.replace("-", "_"): value for key, value in options.items()}
        self.start()

    @contextmanager
    def reconfigured(self, **options: OptionValue) -> Iterator[MariaDB]:
        """``restart_with(**options)`` for the body of a ``with``, then back to the defaults."""
        try:
            self.restart_with(**options)
            yield self
        finally:
            self.restart_with()

    # -- internals ------------------------------------------------------------------------

    def _options(self) -> dict[str, OptionValue]:
        return {**_server_options(self.home, self.port, self.socket), **self._overrides}

    def _initialise(self) -> None:
        marker = self.home / ".initialised"
        if marker.exists():
            return
        shutil.rmtree(self.datadir, ignore_errors=True)  # a half-done earlier attempt
        (self.home / "binlog").mkdir(parents=True, exist_ok=True)
        user = "root" if os.geteuid() == 0 else getpass.getuser()
        run_checked(
            [
                "mariadb-install-db",
                "--no-defaults",
                f"--datadir={self.datadir}",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
                "--skip-name-resolve",
                f"--user={user}",
            ],
            "mariadb-install-db",
            timeout=120,
            cwd=self.home,
        )
        marker.touch()

    def _wait_ready(self, pid: int) -> None:
        wait_until(
            self._accepts_connections,
            timeout=60,
            what=f"MariaDB on port {self.port}",
            details=lambda: log_tail(self.log_file),
            alive=lambda: pid_alive(pid, str(self.config_file)),
        )

    def _accepts_connections(self) -> bool:
        try:
            pymysql.connect(**self.admin, connect_timeout=2).close()
        except pymysql.err.OperationalError as exc:
            # Refused before the first start's provisioning: the server is up all the same.
            return exc.args[0] == ACCESS_DENIED
        return True

    def _provision(self) -> None:
        """Give root its password and create the least-privileged ``cdc`` user (idempotent)."""
        try:
            conn = pymysql.connect(**self.admin, autocommit=True)
        except pymysql.err.OperationalError as exc:
            if exc.args[0] != ACCESS_DENIED:
                raise
            # Fresh data directory: root has no password yet and may use the socket.
            conn = pymysql.connect(unix_socket=str(self.socket), user="root", autocommit=True)
        with conn, conn.cursor() as cur:
            # Only these can log in: skip-name-resolve ignores the root@<hostname> account.
            cur.execute(
                "SELECT host FROM mysql.user"
                " WHERE user = 'root' AND host IN ('localhost', '127.0.0.1', '::1')"
            )
            for (host,) in cur.fetchall():
                cur.execute("ALTER USER 'root'@%s IDENTIFIED BY %s", (host, ROOT_PASSWORD))
            cur.execute(
                "CREATE USER IF NOT EXISTS %s@'%%' IDENTIFIED BY %s", (CDC_USER, CDC_PASSWORD)
            )
            cur.execute(f"GRANT {CDC_GRANTS} ON *.* TO %s@'%%'", (CDC_USER,))
