"""Every column type through the binlog into the changelog, compared with a fixture file
and with an oracle independent of cdc-ingest's code (``server_oracle``: the server's own
text of each value, and values written by hand for the tricky ones).

On both flavours; MySQL's table has two more columns (VECTOR, and JSON holding opaque and
double values: ``flavors.MYSQL``) and its own reviewed fixture."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import admin_conn
from tests.integration import server_oracle
from tests.integration.flavors import ALL_SERVERS, MARIADB, MYSQL, Facts, Source, facts_of
from tests.integration.pipeline_helpers import (
    changelog,
    gtid_now,
    rows_of,
    start_capture,
    stop,
    wait_for,
    write_pipeline,
)

DDL = """
CREATE TABLE all_types (
 id INT PRIMARY KEY,
 ti TINYINT, tiu TINYINT UNSIGNED, t1 TINYINT(1), si SMALLINT, siu SMALLINT UNSIGNED,
 mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,
 b1 BIT(1), b10 BIT(10), b64 BIT(64), d DECIMAL(10,2), dbig DECIMAL(65,30), d0 DECIMAL(5,0),
 f FLOAT, dd DOUBLE, dt DATE, tm TIME, tm3 TIME(3), tm6 TIME(6), dtm DATETIME, dtm3 DATETIME(3),
 dtm6 DATETIME(6), ts TIMESTAMP NULL, ts3 TIMESTAMP(3) NULL, ts6 TIMESTAMP(6) NULL, yr YEAR,
 ch CHAR(5), vc VARCHAR(300), tx TEXT, mtx MEDIUMTEXT, lat VARCHAR(20) CHARACTER SET latin1,
 bn BINARY(4), vb VARBINARY(10), bl BLOB, lbl LONGBLOB, js JSON,
 en ENUM('a','b','c'), st SET('x','y','z'), g GEOMETRY, p POINT{extra}
) DEFAULT CHARSET=utf8mb4
"""

ROWS = [
    # maxima and minima, multi-byte text, exact decimals, fractional times
    """(1, -128, 255, 1, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295,
     -9223372036854775808, 18446744073709551615, b'1', b'1010101010', b'1111111111111111111111111111111111111111111111111111111111111111',
     -12345678.91, '-12345678901234567890123456789012345.123456789012345678901234567891', 12345,
     3.4028234e38, -1.7976931348623157e308, '2024-01-31', '-838:59:59', '12:34:56.789',
     '100:00:00.000001', '1000-01-01 00:00:00', '2024-02-29 23:59:59.5',
     '9999-12-31 23:59:59.999999', '2038-01-19 03:14:07', '1970-01-01 00:00:01.001',
     '2024-06-01 12:00:00.123456', 2155, 'ab ', REPEAT('é', 300), 'emoji 😀 ok', 'ünïcödé',
     'café', 'ab', 'a\\0b', x'00ff', x'', '{"a": [1, 2.5, "x"], "b": null}', 'b', 'x,z',
     ST_GeomFromText('LINESTRING(0 0,1 1)'), POINT(1.5, -2.25))""",
    # NULL in every nullable column
    "(2" + ", NULL" * 44 + ")",
    # the other extremes and small values
    """(3, 127, 0, 0, 32767, 0, 8388607, 0, 2147483647, 0, 9223372036854775807, 0,
     b'0', b'0000000001', b'0', 0.01, '0.000000000000000000000000000001', -99999, -1.5,
     2.5e-308, '9999-12-31', '838:59:59', '-00:00:00.001', '-01:02:03.000004',
     '9999-12-31 23:59:59', '2000-01-01 00:00:00.001', '2000-01-01 00:00:00.000001',
     '1970-01-01 00:00:01', '2038-01-19 03:14:07.999', '2000-02-29 00:00:00.000001', 1901,
     '', '', '', '', '', x'', x'', x'', x'', '[]', 'c', '', POINT(0, 0), POINT(-180, 90))""",
]


def all_types_ddl(server: Any) -> str:
    """The all-types table of the server's flavour."""
    return DDL.format(extra=facts_of(server).all_types_columns)


def all_types_rows(server: Any) -> list[str]:
    """The ``VALUES`` tuples of ROWS with the flavour's extra columns."""
    extra = facts_of(server).all_types_values
    return [f"{row.rstrip()[:-1]}{more})" for row, more in zip(ROWS, extra, strict=True)]


ZERO_DATES = """INSERT INTO all_types (id, dt, dtm, dtm6, ts, yr, en, st)
 VALUES (4, '0000-00-00', '0000-00-00 00:00:00', '0000-00-00 00:00:00.000000',
 '0000-00-00 00:00:00', 0, '', '')"""


Num = server_oracle.Num  # a JSON number kept as the exact text Kafka holds (0.50 is not 0.5)


def _exact(value: Any) -> Any:
    if isinstance(value, Num):
        return orjson.Fragment(str(value))
    if isinstance(value, dict):
        return {k: _exact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_exact(v) for v in value]
    return value


def fill_all_types(server: Any, db: str) -> str:
    """Create the all-types table and write its rows, a zero-date row, an update and a
    delete; returns the GTID position before the first row."""
    conn = admin_conn(server, db)
    with conn.cursor() as cur:
        cur.execute(all_types_ddl(server))
    start = gtid_now(server)
    with conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")
        for row in all_types_rows(server):
            cur.execute(f"INSERT INTO all_types VALUES {row}")
        cur.execute("SET SESSION sql_mode = ''")
        cur.execute(ZERO_DATES)
        cur.execute("UPDATE all_types SET vc = 'changed', d = 0.5 WHERE id = 3")
        cur.execute("DELETE FROM all_types WHERE id = 2")
    conn.commit()
    conn.close()
    return start


@pytest.mark.parametrize("source", ALL_SERVERS, indirect=True)
def test_every_column_type_maps_to_the_expected_json(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    fresh_db = fresh_source_db
    start = fill_all_types(source, fresh_db)
    fixture = source.facts.all_types_fixture

    config = write_pipeline(
        tmp_path / "types.yaml", source, kafka, f"types-{fresh_db}", f"{fresh_db}.all_types",
        source={"scan.startup.mode": "specific-offset",
                "scan.startup.specific-offset.gtid-set": start},
        pipeline={"parallelism": 1},  # one partition: offset order is binlog order
    )
    proc = start_capture(config, tmp_path / "capture.log")
    try:
        records = wait_for(
            lambda: (rows := rows_of(changelog(kafka, f"types-{fresh_db}", Num)))
            and len(rows) >= 6 and rows,
            what="six row changes",
        )
    finally:
        assert stop(proc) == 0, (tmp_path / "capture.log").read_text()

    got = [
        {"op": r["op"], "pk": r["pk"], "before": r["before"], "after": r["after"]}
        for r in records
    ]
    # the independent oracle first, so a fixture is never rewritten from output it refutes:
    # the rows as the server prints them now (ids 1, 3 updated, 4; 2 is deleted), and the
    # values written by hand (which must also agree with the server's text)
    server = server_oracle.read_server(source.admin, fresh_db)
    mysql = not source.flavor.mariadb
    rules_wrong = server_oracle.hand_written_against_server(server, mysql)
    assert not rules_wrong, "\n".join(rules_wrong)
    latest = server_oracle.latest_rows(got)
    wrong = (server_oracle.differences(server, latest)
             + server_oracle.hand_written_differences(latest, mysql)
             + server_oracle.null_row_differences(got))
    assert not wrong, "capture's values are not the server's:\n" + "\n".join(wrong)

    if os.environ.get("CDC_INGEST_WRITE_FIXTURES") == "1":  # after a reviewed change only
        fixture.write_bytes(b"".join(orjson.dumps(_exact(g)) + b"\n" for g in got))
    expected = _fixture_records(source.facts)
    # and the golden file agrees with the server
    fixture_wrong = server_oracle.differences(server, server_oracle.latest_rows(expected))
    assert not fixture_wrong, f"{fixture.name} is not the server's:\n" + "\n".join(fixture_wrong)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g == e, f"record for pk {e['pk']} differs"
    # BIGINT UNSIGNED max survives as an exact number in the raw message bytes.
    raw = next(r for r in records if r["pk"] == {"id": 1})
    assert raw["after"]["biu"] == 18446744073709551615


def _fixture_records(facts: Facts) -> list[dict[str, Any]]:
    return [
        json.loads(line, parse_float=Num)
        for line in facts.all_types_fixture.read_text().splitlines() if line.strip()
    ]


@pytest.mark.parametrize("facts", [MARIADB, MYSQL], ids=lambda f: f.name)
def test_fixture_holds_the_hand_written_values(facts: Facts) -> None:
    """The reviewed fixture agrees with the values written by hand from the INSERTs and the
    format doc (the live test also checks it against the server's text). Needs no
    services."""
    records = _fixture_records(facts)
    wrong = (server_oracle.hand_written_differences(
        server_oracle.latest_rows(records), facts is MYSQL)
        + server_oracle.null_row_differences(records))
    assert not wrong, "\n".join(wrong)
