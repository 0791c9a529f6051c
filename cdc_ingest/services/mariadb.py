"""A private MariaDB server for dev, demo and tests, configured the way capture needs it."""

from __future__ import annotations

import getpass
import hashlib
import logging
import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

import pymysql

from cdc_ingest.services._process import (
    LOCALHOST,
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
    OptionValue,
)

log = logging.getLogger(__name__)

MARIADBD = Path("/usr/sbin/mariadbd")
ACCESS_DENIED = 1045
# A unix socket path must fit in sockaddr_un (108 bytes on Linux).
MAX_SOCKET_PATH = 100



def server_options(home: PurePosixPath | Path, port: int, socket: PurePosixPath | Path
                   ) -> dict[str, OptionValue]:
    """The my.cnf [mariadbd] options, paths under ``home`` (as the server sees it); keys use
    underscores so overrides can replace them."""
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


def render_cnf(options: dict[str, OptionValue], port: int, socket: PurePosixPath | Path) -> str:
    lines = ["# written by cdc_ingest.services.mariadb; rewritten on every start", "[mariadbd]"]
    for key, value in options.items():
        if value is None or value is False:
            continue
        lines.append(key if value is True else f"{key}={value}")
    lines += ["", "[client]", f"port={port}", f"socket={socket}", ""]
    return "\n".join(lines)


class MariaDB(LocalSqlServer):
    """One MariaDB server with its data, binlog, config and logs under ``home``."""

    label = "MariaDB"

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
    def _marker(self) -> str:
        return str(self.config_file)

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

    def _launch_command(self) -> list[str]:
        """Write the config file; return the server's command line."""
        self.config_file.write_text(render_cnf(self._options(), self.port, self.socket))
        user = ["--user=root"] if os.geteuid() == 0 else []
        return [str(MARIADBD), f"--defaults-file={self.config_file}", *user]

    def stop(self, wipe: bool = False) -> None:
        """Stop the server; with ``wipe`` also delete its data, binlogs and config."""
        pid = read_pid(self.pid_file) or self._pid  # _pid: if stopped before it was written
        if pid is not None:
            stop_pid(pid, self._marker)
        self.pid_file.unlink(missing_ok=True)
        if wipe:
            shutil.rmtree(self.home, ignore_errors=True)
            self._port = None

    # -- internals ------------------------------------------------------------------------

    def _options(self) -> dict[str, OptionValue]:
        return {**server_options(self.home, self.port, self.socket), **self._overrides}

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

    def _accepts_connections(self) -> bool:
        return accepts_connections(self.admin)

    def _provision(self) -> None:
        provision(self.admin, self.socket)


def accepts_connections(admin: dict[str, Any]) -> bool:
    """Whether the server answers; refused before the first start's provisioning (root has
    no password yet) counts: the server is up all the same."""
    try:
        pymysql.connect(**admin, connect_timeout=2).close()
    except pymysql.err.OperationalError as exc:
        return bool(exc.args[0] == ACCESS_DENIED)
    return True


def provision(admin: dict[str, object], socket: Path) -> None:
    """Give root its password and create the least-privileged ``cdc`` user (idempotent)."""
    try:
        conn = pymysql.connect(**admin, autocommit=True)
    except pymysql.err.OperationalError as exc:
        if exc.args[0] != ACCESS_DENIED:
            raise
        # Fresh data directory: root has no password yet and may use the socket.
        conn = pymysql.connect(unix_socket=str(socket), user="root", autocommit=True)
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
