"""A private MariaDB 11.8 (Debian sid's) for dev and tests, run chrooted in its own root.

Debian 12 has MariaDB 10.11 only; 11.8 is MariaDB's current long-term release and the first
with its own ``VECTOR`` type. Like :class:`cdc_ingest.services.MySQL`, the server runs from a
directory of its own inside the root (``/srv/cdc-ingest/<id>``), configured as the 10.11
service is (:mod:`cdc_ingest.services.mariadb`).
"""

from __future__ import annotations

from cdc_ingest.services._process import run_checked
from cdc_ingest.services._server import OptionValue
from cdc_ingest.services.mariadb import (
    accepts_connections,
    provision,
    render_cnf,
    server_options,
)
from cdc_ingest.services.mysql import ChrootServer
from cdc_ingest.services.mysql_root import MARIADB_ROOT


class MariaDB118(ChrootServer):
    """One MariaDB 11.8 server for ``home``, run chrooted in the shared MariaDB root."""

    label = "MariaDB 11.8"
    ready_timeout = 120.0
    root = MARIADB_ROOT
    daemon_log = "mariadbd.log"

    def _options(self) -> dict[str, OptionValue]:
        run = self.run_dir
        options = server_options(run, self.port, run / "mysqld.sock")
        options["tmpdir"] = str(run / "tmp")
        return {**options, **self._overrides}

    def _render_cnf(self) -> str:
        return render_cnf(self._options(), self.port, self.run_dir / "mysqld.sock")

    def _initialise(self) -> None:
        if not self._claim():
            return
        run_checked(
            self._in_root(
                "mariadb-install-db",
                "--no-defaults",
                f"--datadir={self.run_dir / 'data'}",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
                "--skip-name-resolve",
                "--force",  # the root has no resolver set-up; the accounts use addresses
                "--user=root",
            ),
            "mariadb-install-db (MariaDB 11.8)",
            timeout=300,
        )
        (self.server_dir / ".initialised").touch()

    def _accepts_connections(self) -> bool:
        return accepts_connections(self.admin)

    def _provision(self) -> None:
        provision(self.admin, self.socket)
