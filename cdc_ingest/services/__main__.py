"""``python -m cdc_ingest.services {start,stop,status,fetch} [SERVICE] [--home DIR]``.

SERVICE: ``mariadb``, ``mysql``, ``mariadb118``, ``kafka``, ``registry`` or ``all``.

Prints shell-friendly ``NAME=value`` lines (``eval "$(python -m cdc_ingest.services start)"``).
``all`` (the default) is MariaDB and Kafka; the MySQL 9.7 and the MariaDB 11.8 are only ever
named: ``mysql``, ``mariadb118``. Their lines are ``MYSQL97_*`` and ``MARIADB118_*`` so they do
not clash with MariaDB's ``MYSQL_*``. ``registry`` (a Confluent-compatible Schema Registry,
Apicurio Registry, in-memory) is also only ever named; its line is ``SCHEMA_REGISTRY_URL``.
Every command is safe
to run twice.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from pathlib import Path

from cdc_ingest.download_cache import cache_dir
from cdc_ingest.services._process import ServiceError
from cdc_ingest.services.kafka import KafkaBroker, fetch_jars
from cdc_ingest.services.mariadb import MariaDB
from cdc_ingest.services.mariadb118 import MariaDB118
from cdc_ingest.services.mysql import ChrootServer, MySQL
from cdc_ingest.services.registry import SchemaRegistry, fetch_app

SERVICES = ("mariadb", "kafka")  # what `all` means
CHOICES = ("mariadb", "mysql", "mariadb118", "kafka", "registry", "all")
# the servers that run chrooted in a Debian sid root: class, prefix of their lines
CHROOTED: dict[str, tuple[type[ChrootServer], str]] = {
    "mysql": (MySQL, "MYSQL97"),
    "mariadb118": (MariaDB118, "MARIADB118"),
}


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


def _chrooted_env(db: ChrootServer, prefix: str) -> None:
    _emit(**{
        f"{prefix}_HOST": db.host,
        f"{prefix}_PORT": db.port,
        f"{prefix}_USER": db.cdc["user"],
        f"{prefix}_PASSWORD": db.cdc["password"],
        f"{prefix}_ROOT_PASSWORD": db.admin["password"],
    })


def _status_name(service: str) -> str:
    if service == "registry":
        return "SCHEMA_REGISTRY_STATUS"
    prefix = CHROOTED[service][1] if service in CHROOTED else service.upper()
    return f"{prefix}_STATUS"


def _start(home: Path, service: str) -> int:
    if service == "mariadb":
        db = MariaDB(home / "mariadb")
        db.start()
        _mariadb_env(db)
    elif service in CHROOTED:
        kind, prefix = CHROOTED[service]
        server = kind(home / service)
        server.start()
        _chrooted_env(server, prefix)
    elif service == "registry":
        registry = SchemaRegistry(home / "registry")
        registry.start()
        _emit(SCHEMA_REGISTRY_URL=registry.url)
    else:
        broker = KafkaBroker(home / "kafka")
        broker.start()
        _emit(KAFKA_BOOTSTRAP=broker.bootstrap)
    return 0


def _stop(home: Path, service: str) -> int:
    server: MariaDB | ChrootServer | KafkaBroker | SchemaRegistry
    if service == "mariadb":
        server = MariaDB(home / "mariadb")
    elif service in CHROOTED:
        server = CHROOTED[service][0](home / service)
    elif service == "registry":
        server = SchemaRegistry(home / "registry")
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
    elif service in CHROOTED:
        kind, prefix = CHROOTED[service]
        chrooted = kind(home / service)
        running = chrooted.is_running()
        if running:
            _chrooted_env(chrooted, prefix)
    elif service == "registry":
        registry = SchemaRegistry(home / "registry")
        running = registry.is_running()
        if running:
            _emit(SCHEMA_REGISTRY_URL=registry.url)
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
    elif service == "registry":
        _emit(SCHEMA_REGISTRY_JAR=fetch_app())
    elif service in CHROOTED:
        kind, prefix = CHROOTED[service]
        kind.ensure_installed()
        _emit(**{f"{prefix}_ROOT": kind.root.path})
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
        description="Start, stop or inspect the local MariaDB, MySQL 9.7, MariaDB 11.8, "
        "Kafka and Schema Registry used for dev and tests.",
    )
    parser.add_argument(
        "command",
        choices=COMMANDS,
        help="fetch: install MariaDB if missing / build the MySQL or MariaDB 11.8 root "
        "(Debian sid, needs root) / download the Kafka jars / download and unpack Apicurio "
        "Registry; status exits 3 when a service is stopped",
    )
    parser.add_argument(
        "service",
        nargs="?",
        default="all",
        choices=CHOICES,
        help="all (the default) = mariadb and kafka; mysql is MySQL 9.7, mariadb118 is "
        "MariaDB 11.8 and registry a Confluent-compatible Schema Registry (Apicurio), only "
        "when named",
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
