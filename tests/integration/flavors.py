"""What differs between MariaDB and MySQL as a source under test, in one place.

Tests that prove a server-dependent path take the ``source`` fixture (``tests/conftest.py``),
parametrised over :data:`FLAVORS`: a :class:`Source` is the running server (``mariadb`` or
``mysql`` fixture, same attributes) plus what the tests must know about its flavour. Server
state (binlog head, GTID state) comes from the product's own :class:`cdc_ingest.mysql.Flavor`;
the rest (expected texts, fixture files, extra all-types columns) is in :class:`Facts`. The
module-level helpers take any server object, so single-flavour tests use them too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymysql

from cdc_ingest.mysql import Flavor

FLAVORS = ("mariadb", "mysql")  # the ``source`` fixture's parameters: fixture names
# the servers the tests that must hold everywhere run on (parametrize "source" with these)
ALL_SERVERS = ("mariadb", "mysql", "mariadb118")
FIXTURES = Path(__file__).parent / "fixtures"


@dataclass(frozen=True)
class Facts:
    """What the tests expect of one flavour."""

    name: str
    # one transaction's GTID as it appears in a changelog record's ``pos``
    tx_gtid: re.Pattern[str]
    # the grants `validate` asks for (MariaDB 10.5+ calls REPLICATION CLIENT BINLOG MONITOR)
    grants: str
    # what `validate` says of a GTID position whose binlog was purged
    purged: str
    # the all-types table: extra columns (DDL), one extra value list per ROWS entry
    all_types_columns: str
    all_types_values: tuple[str, ...]
    # the reviewed expected records of the all-types table: changelog and sink
    all_types_fixture: Path
    all_types_sink_fixture: Path
    # whether rows events carry their binlog position (MariaDB 11.4+ writes the events inside
    # a transaction with end_log_pos 0: binlog_legacy_event_pos=OFF by default)
    rows_events_positioned: bool = True


MARIADB = Facts(
    name="mariadb",
    tx_gtid=re.compile(r"0-\d+-\d+"),
    grants="REPLICATION SLAVE, BINLOG MONITOR, SELECT",
    purged="is older than the oldest binlog",
    all_types_columns="",
    all_types_values=("", "", ""),
    all_types_fixture=FIXTURES / "all_types.expected.jsonl",
    all_types_sink_fixture=FIXTURES / "all_types.sink.expected.jsonl",
)

# MySQL 9's VECTOR, and JSON whose binary form holds opaque DECIMAL/TIME/DATETIME/DATE/binary
# values and doubles (large, tiny, with exponents): MySQL prints those its own way.
MYSQL_JSON_OBJECT = (
    "JSON_OBJECT('d', CAST(1.50 AS DECIMAL(5,2)), 't', CAST('12:34:56.5' AS TIME(6)), "
    "'dt', CAST('2024-01-31 12:34:56' AS DATETIME), 'dd', CAST('2024-01-31' AS DATE), "
    "'b', CAST(x'00ff' AS BINARY), 'big', 1e300, 'tiny', 0.00001, 'e', 1.5e-20)"
)
MYSQL_JSON_ARRAY = (
    "JSON_ARRAY(-0.0e0, 1e-5, 1e-7, 1.2345678901234567e29, 123456789012345678901234567890, "
    "CAST(-1.5 AS DECIMAL(3,1)), CAST('-838:59:59' AS TIME), "
    "TIMESTAMP'2024-01-31 12:34:56.123456', CAST(x'' AS BINARY), 1.7976931348623157e308, "
    "-2.2250738585072014e-308, 18446744073709551615, -9223372036854775808, TRUE, NULL, '')"
)

# MariaDB 11.8 (Debian sid's): the same records as 10.11 for the all-types table
MARIADB118 = Facts(
    name="mariadb118",
    tx_gtid=MARIADB.tx_gtid,
    grants=MARIADB.grants,
    purged=MARIADB.purged,
    all_types_columns="",
    all_types_values=("", "", ""),
    all_types_fixture=MARIADB.all_types_fixture,
    all_types_sink_fixture=MARIADB.all_types_sink_fixture,
    rows_events_positioned=False,
)

MYSQL = Facts(
    name="mysql",
    tx_gtid=re.compile(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}:\d+"),
    grants="REPLICATION SLAVE, REPLICATION CLIENT, SELECT",
    purged="were purged from the binlog but are not in the position's set",
    all_types_columns=", vec VECTOR(3), jx JSON",
    all_types_values=(
        f", STRING_TO_VECTOR('[1.5,2,3]'), {MYSQL_JSON_OBJECT}",
        ", NULL, NULL",
        f", STRING_TO_VECTOR('[0.1,-1e-7,3.4e38]'), {MYSQL_JSON_ARRAY}",
    ),
    all_types_fixture=FIXTURES / "all_types.mysql.expected.jsonl",
    all_types_sink_fixture=FIXTURES / "all_types.mysql.sink.expected.jsonl",
)


# -- the server's flavour and state, through the product's Flavor ---------------------------


def _query(server: Any, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
    with pymysql.connect(**server.admin, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute(sql, args)
        return list(cur.fetchall())


def flavor_of(server: Any) -> Flavor:
    """The product's view of the server's flavour (from ``SELECT VERSION()``)."""
    if isinstance(server, Source):
        return server.flavor
    return Flavor.of(str(_query(server, "SELECT VERSION()")[0][0]))


def facts_of(server: Any) -> Facts:
    if isinstance(server, Source):
        return server.facts
    return _facts(str(_query(server, "SELECT VERSION()")[0][0]))


def _facts(version: str) -> Facts:
    if not Flavor.of(version).mariadb:
        return MYSQL
    return MARIADB118 if int(version.split(".", maxsplit=1)[0]) >= 11 else MARIADB


def gtid_now(server: Any) -> str:
    """The GTID state of everything in the binlog now (MariaDB ``0-1-5``, MySQL
    ``uuid:1-5``): a ``scan.startup.specific-offset.gtid-set`` for changes from here on."""
    flavor = flavor_of(server)
    with pymysql.connect(**server.admin, autocommit=True) as conn:
        return flavor.gtid_state(_runner(conn))


def binlog_head(server: Any) -> tuple[str, int]:
    """The binlog file and position of the head (SHOW MASTER / BINARY LOG STATUS)."""
    flavor = flavor_of(server)
    with pymysql.connect(**server.admin, autocommit=True) as conn:
        row = flavor.binlog_status(_runner(conn))
    return str(row[0]), int(row[1])


def _runner(conn: pymysql.Connection[Any]) -> Any:
    def query(sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        with conn.cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())

    return query


def gtid_seq(gtid: str) -> int:
    """The sequence number of a GTID (``0-1-5``, ``uuid:5``) or the last one of a one-range
    GTID set (``uuid:1-5``). In a MySQL set with tagged GTIDs (``uuid:1-9:tag:1-3``, once a
    test wrote tagged transactions on the server) the last of the untagged ones: the
    transactions tests write are untagged."""
    text = gtid.strip()
    untagged: list[str] = []
    if ":" in text:
        for token in text.split(",")[-1].split(":")[1:]:
            if not token[:1].isdigit():
                break  # a tag: its intervals follow
            untagged.append(token)
    if untagged:
        return max(int(interval.split("-")[-1]) for interval in untagged)
    return int(re.split(r"[-:]", text)[-1])


def insert_sequence(cur: Any, table: str, columns: str, first: int, last: int) -> None:
    """``INSERT INTO table SELECT <columns> FROM (first..last)``, ``seq`` naming the number
    in ``columns``: a recursive CTE on both servers (MariaDB's seq_1_to_N tables are its own)."""
    limit = "max_recursive_iterations" if flavor_of_cursor(cur).mariadb else (
        "cte_max_recursion_depth")  # both 1000 by default
    cur.execute(f"SET SESSION {limit} = %s", (last - first + 1,))
    cur.execute(
        f"INSERT INTO {table} SELECT {columns} FROM (WITH RECURSIVE s (seq) AS "
        f"(SELECT {int(first)} UNION ALL SELECT seq + 1 FROM s WHERE seq < {int(last)}) "
        "SELECT seq FROM s) AS seqs"
    )


def flavor_of_cursor(cur: Any) -> Flavor:
    cur.execute("SELECT VERSION()")
    return Flavor.of(str(cur.fetchone()[0]))


# -- the ``source`` fixture's value ---------------------------------------------------------


class Source:
    """A running source server (``mariadb`` or ``mysql`` fixture) and its flavour: the
    server's attributes (``host``, ``port``, ``admin``, ``cdc``, ``reconfigured``...) plus
    ``flavor`` (the product's) and ``facts`` (the tests')."""

    def __init__(self, server: Any) -> None:
        self.server = server
        version = str(_query(server, "SELECT VERSION()")[0][0])
        self.flavor = Flavor.of(version)
        self.facts = _facts(version)

    @property
    def name(self) -> str:
        return self.facts.name

    def __getattr__(self, name: str) -> Any:
        return getattr(self.server, name)

    def __repr__(self) -> str:
        return f"Source({self.name}, port {self.server.port})"
