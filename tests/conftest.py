"""Shared fixtures: one MariaDB/MySQL and one Kafka per test run, stopped at the end.

The servers are the project's own local services (``cdc_ingest.services``), the same way on
every machine, Docker engine or not: only the Docker Compose test
(``tests/integration/test_docker_compose.py``) runs containers, of images it builds itself.

The ``mysql`` fixture is always the local Oracle MySQL 9.7 (``cdc_ingest.services.MySQL``, run
chrooted in ``<cache>/mysql-root``, which ``scripts/setup.sh`` builds), started only by the
tests that ask for it.

The ``mariadb118`` fixture is the local MariaDB 11.8 (``cdc_ingest.services.MariaDB118``,
chrooted in ``<cache>/mariadb-root``), started only by the tests that ask for it.

The ``registry`` fixture is a local Confluent-compatible Schema Registry
(``cdc_ingest.services.SchemaRegistry``: Apicurio Registry, in-memory, ``.url``), started only
by the tests that ask for it.

``source`` / ``fresh_source_db`` run a test once per flavour (ids ``[mariadb]``, ``[mysql]``);
the tests that must hold on every server take ``[mariadb118]`` too
(``@pytest.mark.parametrize("source", ALL_SERVERS, indirect=True)``). What differs between
the servers is in ``tests/integration/flavors.py``.
"""

from __future__ import annotations

import functools
import os
import signal
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

import pymysql
import pytest

from cdc_ingest.services import KafkaBroker, MariaDB, MariaDB118, MySQL, SchemaRegistry
from cdc_ingest.services.kafka_secured import SecuredKafkaBroker
from cdc_ingest.sink.task.writer import close_clients
from tests.integration.flavors import FLAVORS, Source

INTEGRATION_DIR = Path(__file__).parent / "integration"


class MySqlServer(Protocol):
    """What tests may use of a server fixture (``mariadb``, ``mysql``, ``mariadb118``)."""

    host: str

    @property
    def port(self) -> int: ...
    @property
    def admin(self) -> dict[str, Any]: ...
    @property
    def cdc(self) -> dict[str, Any]: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...
    def restart_with(self, **options: Any) -> None: ...
    def reconfigured(self, **options: Any) -> AbstractContextManager[Any]: ...


class KafkaServer(Protocol):
    @property
    def bootstrap(self) -> str: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...


class RegistryServer(Protocol):
    @property
    def url(self) -> str: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...


# -- pytest hooks ------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    # A CI timeout sends SIGTERM: turn it into KeyboardInterrupt so that pytest still runs
    # the session finalizers that stop the servers.
    signal.signal(signal.SIGTERM, _interrupt)
    # Pipelines without state.dir (Flink CDC's files, run unchanged) keep their state in the
    # user's state home by default; a run's services are new, so its state must be too (a
    # Spark checkpoint of an earlier run's changelog topic would be refused as data loss).
    if "CDC_INGEST_STATE" not in os.environ:
        os.environ["CDC_INGEST_STATE"] = tempfile.mkdtemp(prefix="cdc-ingest-test-state-")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if INTEGRATION_DIR in item.path.parents:
            item.add_marker(pytest.mark.integration)


# -- fixtures ------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def mariadb(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A running server with binlog ROW/FULL/FULL, root/``root`` and least-privileged
    ``cdc``/``cdc``. Attributes: ``host``, ``port``, ``admin``, ``cdc`` (pymysql kwargs),
    ``restart_with(**my_cnf_options)``, ``reconfigured(**my_cnf_options)``."""
    server = MariaDB(tmp_path_factory.mktemp("services") / "mariadb")
    _start(server, request)
    return server


@pytest.fixture(scope="session")
def mysql(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> MySQL:
    """A running Oracle MySQL 9.7 with binlog ROW/FULL/FULL, GTIDs on, root/``root`` and
    least-privileged ``cdc``/``cdc`` (caching_sha2_password). Same attributes as ``mariadb``."""
    server = MySQL(tmp_path_factory.mktemp("services") / "mysql")
    # wipe: its data lives in the shared MySQL root, not under the session's tmp dir.
    request.addfinalizer(functools.partial(server.stop, wipe=True))
    try:
        server.start()
    except BaseException:
        server.stop(wipe=True)
        raise
    return server


@pytest.fixture(scope="session")
def mariadb118(request: pytest.FixtureRequest,
               tmp_path_factory: pytest.TempPathFactory) -> MariaDB118:
    """A running MariaDB 11.8 (Debian sid's, chrooted in ``<cache>/mariadb-root``), set up as
    the ``mariadb`` fixture's server. Same attributes as ``mariadb``."""
    server = MariaDB118(tmp_path_factory.mktemp("services") / "mariadb118")
    request.addfinalizer(functools.partial(server.stop, wipe=True))
    try:
        server.start()
    except BaseException:
        server.stop(wipe=True)
        raise
    return server


@pytest.fixture(scope="session")
def kafka(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A running single-node Kafka whose transaction coordinator is ready: ``.bootstrap``."""
    server = KafkaBroker(tmp_path_factory.mktemp("services") / "kafka")
    _start(server, request)
    # Finalizers run last-in first-out: close the clients tests cached in this process
    # before the broker goes away, so they do not retry against a stopped broker.
    request.addfinalizer(close_clients)
    return server


@pytest.fixture(scope="session")
def secured_kafka(request: pytest.FixtureRequest,
                  tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A Kafka with TLS, SCRAM and PLAIN logins, client certificates and the
    StandardAuthorizer (``cdc_ingest.services.kafka_secured.SecuredKafkaBroker``), started
    only by the tests that ask for it; ``.bootstrap`` is the harness's own super-user door."""
    server = SecuredKafkaBroker(tmp_path_factory.mktemp("services") / "secured-kafka")
    _start(server, request)
    return server


@pytest.fixture(scope="session")
def registry(request: pytest.FixtureRequest,
             tmp_path_factory: pytest.TempPathFactory) -> SchemaRegistry:
    """A running Confluent-compatible Schema Registry (``cdc_ingest.services.SchemaRegistry``:
    Apicurio Registry, in-memory, global compatibility BACKWARD), started only by the tests
    that ask for it: ``.url`` is ``http://127.0.0.1:<port>/apis/ccompat/v7``. Shared by the
    whole run: use subjects of fresh topics."""
    server = SchemaRegistry(tmp_path_factory.mktemp("services") / "registry")
    _start(server, request)
    return server


def _start(server: MySqlServer | KafkaServer | RegistryServer,
           request: pytest.FixtureRequest) -> None:
    """Start a session server and make sure it is stopped whatever happens."""
    request.addfinalizer(server.stop)
    try:
        server.start()
    except BaseException:
        # pytest runs no finalizer of a fixture interrupted (Ctrl-C, SIGTERM) during setup.
        server.stop()
        raise


@pytest.fixture
def fresh_db(mariadb: MySqlServer) -> Iterator[str]:
    """The name of a new, empty database (utf8mb4), dropped after the test."""
    yield from _fresh_database(mariadb)


@pytest.fixture
def fresh_mysql_db(mysql: MySQL) -> Iterator[str]:
    """``fresh_db`` on the ``mysql`` fixture's server."""
    yield from _fresh_database(mysql)


@pytest.fixture(params=FLAVORS)
def source(request: pytest.FixtureRequest) -> Source:
    """The ``mariadb`` or the ``mysql`` server, one test run each, with its flavour's facts
    (``tests.integration.flavors.Source``)."""
    return Source(request.getfixturevalue(request.param))


@pytest.fixture
def fresh_source_db(source: Source) -> Iterator[str]:
    """``fresh_db`` on the ``source`` fixture's server."""
    yield from _fresh_database(source)


def _fresh_database(server: MySqlServer) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:12]}"
    with admin_conn(server) as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
    yield name
    with admin_conn(server) as conn, conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{name}`")


def admin_conn(server: MySqlServer, database: str | None = None) -> pymysql.Connection[Any]:
    """A root connection in autocommit mode (use it as a context manager to close it)."""
    return pymysql.connect(**server.admin, database=database, autocommit=True)
