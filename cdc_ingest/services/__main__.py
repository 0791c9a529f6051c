"""``python -m cdc_ingest.services {start,stop,status,fetch} [SERVICE] [--home DIR]``.

SERVICE: ``mariadb``, ``mysql``, ``kafka`` or ``all``.

Prints shell-friendly ``NAME=value`` lines (``eval "$(python -m cdc_ingest.services start)"``).
``all`` (the default) is MariaDB and Kafka; the MySQL 9.7 is only ever named: ``mysql``. Its
lines are ``MYSQL97_*`` so they do not clash with MariaDB's ``MYSQL_*``. Every command is safe
to run twice.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from pathlib import Path

from cdc_ingest.cache import cache_dir
from cdc_ingest.services._process import ServiceError
from cdc_ingest.services.kafka import KafkaBroker, fetch_jars
from cdc_ingest.services.mariadb import MariaDB
from cdc_ingest.services.mysql import MySQL
from cdc_ingest.services.mysql_root import root_dir

SERVICES = ("mariadb", "kafka")  # what `all` means
CHOICES = ("mariadb", "mysql", "kafka", "all")


def _emit(**values: object) -> None:
    for name, value in values.items():
        sys.stdout.write(f"{name}={value}\n")


def _mariadb_env(db: MariaDB) -> None:
    _emit(
        MYSQL_HOST=db.host,
        MYSQL_PORT=db.port,
        MYSQL_USER=db.cdc["user"],
        MYSQL_PASSWORD=db.cdc["password"],
        MYSQL_ROOT_PASSWORD=db.admin["password"],
    )


def _mysql_env(db: MySQL) -> None:
    _emit(
        MYSQL97_HOST=db.host,
        MYSQL97_PORT=db.port,
        MYSQL97_USER=db.cdc["user"],
        MYSQL97_PASSWORD=db.cdc["password"],
        MYSQL97_ROOT_PASSWORD=db.admin["password"],
    )


def _status_name(service: str) -> str:
    return "MYSQL97_STATUS" if service == "mysql" else f"{service.upper()}_STATUS"


def _start(home: Path, service: str) -> int:
    if service == "mariadb":
        db = MariaDB(home / "mariadb")
        db.start()
        _mariadb_env(db)
    elif service == "mysql":
        mysql = MySQL(home / "mysql")
        mysql.start()
        _mysql_env(mysql)
    else:
        broker = KafkaBroker(home / "kafka")
        broker.start()
        _emit(KAFKA_BOOTSTRAP=broker.bootstrap)
    return 0


def _stop(home: Path, service: str) -> int:
    server: MariaDB | MySQL | KafkaBroker
    if service == "mariadb":
        server = MariaDB(home / "mariadb")
    elif service == "mysql":
        server = MySQL(home / "mysql")
    else:
        server = KafkaBroker(home / "kafka")
    server.stop()
    _emit(**{_status_name(service): "stopped"})
    return 0


def _status(home: Path, service: str) -> int:
    if service == "mariadb":
        db = MariaDB(home / "mariadb")
        running = db.is_running()
        if running:
            _mariadb_env(db)
    elif service == "mysql":
        mysql = MySQL(home / "mysql")
        running = mysql.is_running()
        if running:
            _mysql_env(mysql)
    else:
        broker = KafkaBroker(home / "kafka")
        running = broker.is_running()
        if running:
            _emit(KAFKA_BOOTSTRAP=broker.bootstrap)
    _emit(**{_status_name(service): "running" if running else "stopped"})
    return 0 if running else 3


def _fetch(home: Path, service: str) -> int:
    if service == "kafka":
        _emit(KAFKA_LIBS=fetch_jars())
    elif service == "mysql":
        MySQL.ensure_installed()
        _emit(MYSQL97_ROOT=root_dir())
    else:
        MariaDB.ensure_installed()
        _emit(MARIADB_INSTALLED="yes")
    return 0


COMMANDS: dict[str, Callable[[Path, str], int]] = {
    "start": _start,
    "stop": _stop,
    "status": _status,
    "fetch": _fetch,
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m cdc_ingest.services",
        description="Start, stop or inspect the local MariaDB, MySQL 9.7 and Kafka used for dev "
        "and tests.",
    )
    parser.add_argument(
        "command",
        choices=COMMANDS,
        help="fetch: install MariaDB if missing / build the MySQL root (Debian sid, "
        "needs root) / download the Kafka jars; status exits 3 when a service is stopped",
    )
    parser.add_argument(
        "service",
        nargs="?",
        default="all",
        choices=CHOICES,
        help="all (the default) = mariadb and kafka; mysql is MySQL 9.7, only when named",
    )
    parser.add_argument(
        "--home",
        type=Path,
        default=None,
        help="where the services keep data and logs (default: <cache>/services)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    home: Path = (args.home or cache_dir() / "services").resolve()
    services = SERVICES if args.service == "all" else (args.service,)
    command = COMMANDS[args.command]
    try:
        return max(command(home, service) for service in services)
    except ServiceError as exc:
        logging.getLogger(__name__).error("%s", exc)
        return 1


if __name__ == "__main__":
    sys.exit(main())
