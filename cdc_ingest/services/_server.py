"""What the local MariaDB and MySQL servers share: the home and its state file, the port,
connection settings for root and ``cdc``, readiness, restarts with changed options."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

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
    wait_until,
)

log = logging.getLogger(__name__)

ROOT_PASSWORD = "root"
CDC_USER = "cdc"
CDC_PASSWORD = "cdc"
# What `cdc-ingest validate` asks of users. MariaDB 10.5+ shows REPLICATION CLIENT as
# BINLOG MONITOR, which is what SHOW MASTER STATUS / SHOW BINARY LOGS need.
CDC_GRANTS = "REPLICATION SLAVE, REPLICATION CLIENT, SELECT"

OptionValue = str | int | bool | None


class LocalSqlServer:
    """A server for ``home``. ``start()`` and ``stop()`` are idempotent; the port chosen on
    the first start is kept in ``home/state.json`` so later starts (tests, the CLI) reuse it.
    Subclasses give ``label``, ``pid_file``, ``log_file``, ``_marker``, ``start``, ``stop``
    and ``_accepts_connections``."""

    host = LOCALHOST
    label = "the server"
    ready_timeout = 60.0

    def __init__(self, home: Path, port: int | None = None) -> None:
        self.home = Path(home).resolve()
        self._pid: int | None = None
        self._port = port or load_state(self.state_file).get("port")
        self._overrides: dict[str, OptionValue] = {}

    @property
    def state_file(self) -> Path:
        return self.home / "state.json"

    @property
    def pid_file(self) -> Path:
        raise NotImplementedError

    @property
    def log_file(self) -> Path:
        raise NotImplementedError

    @property
    def _marker(self) -> str:
        """What the server's command line holds, unique to this home (pid reuse guard)."""
        raise NotImplementedError

    @property
    def port(self) -> int:
        if self._port is None:
            raise ServiceError(f"{self.label} in {self.home} has no port yet: call start() first")
        return int(self._port)

    @property
    def admin(self) -> dict[str, Any]:
        """``pymysql.connect(**kw)`` arguments for root."""
        return {"host": self.host, "port": self.port, "user": "root", "password": ROOT_PASSWORD}

    @property
    def cdc(self) -> dict[str, Any]:
        """``pymysql.connect(**kw)`` arguments for the least-privileged capture user."""
        return {"host": self.host, "port": self.port, "user": CDC_USER, "password": CDC_PASSWORD}

    def is_running(self) -> bool:
        pid = read_pid(self.pid_file)
        return pid is not None and pid_alive(pid, self._marker)

    @staticmethod
    def ensure_installed() -> None:
        raise NotImplementedError

    def start(self) -> None:
        """Start the server (initialising it on first use) and create the users."""
        if self.is_running():
            self._wait_ready(read_pid(self.pid_file) or 0)
            self._provision()
            return
        self.ensure_installed()
        self._prepare()
        if self._port is None:
            self._port = free_port()
        self.home.mkdir(parents=True, exist_ok=True)
        save_state(self.state_file, {"port": self._port})
        self._initialise()
        pid = self._pid = spawn_detached(self._launch_command(), self.log_file, cwd=self.home)
        self.pid_file.write_text(f"{pid}\n")
        self._wait_ready(pid)
        self._provision()
        log.info("%s ready on %s:%d (home %s)", self.label, self.host, self.port, self.home)

    def _prepare(self) -> None:
        """Before a start: clean up what an earlier run left (nothing by default)."""

    def _initialise(self) -> None:
        raise NotImplementedError

    def _launch_command(self) -> list[str]:
        raise NotImplementedError

    def _provision(self) -> None:
        raise NotImplementedError

    def stop(self, wipe: bool = False) -> None:
        raise NotImplementedError

    def restart_with(self, **options: OptionValue) -> None:
        """Restart with my.cnf options changed; ``None`` removes one; no options = defaults.

        Example: ``restart_with(binlog_format="STATEMENT")`` or ``restart_with(log_bin=None)``.
        """
        self.stop()
        self._overrides = {key.replace("-", "_"): value for key, value in options.items()}
        self.start()

    @contextmanager
    def reconfigured(self, **options: OptionValue) -> Iterator[Self]:
        """``restart_with(**options)`` for the body of a ``with``, then back to the defaults."""
        try:
            self.restart_with(**options)
            yield self
        finally:
            self.restart_with()

    def _accepts_connections(self) -> bool:
        raise NotImplementedError

    def _wait_ready(self, pid: int) -> None:
        wait_until(
            self._accepts_connections,
            timeout=self.ready_timeout,
            what=f"{self.label} on port {self.port}",
            details=lambda: log_tail(self.log_file),
            alive=lambda: pid_alive(pid, self._marker),
        )
