"""A PyFlink job that reads a cdc-ingest upsert topic back with Flink's `upsert-kafka` connector.

Run by tests/integration/test_flink_readback.py with the PyFlink virtualenv's python (see
flink_env.py), never imported by pytest (its name does not start with ``test_``)::

    python flink_readback_job.py --bootstrap HOST:PORT --topic T --jar CONNECTOR.jar \\
        [--jar AVRO_CONFLUENT.jar --format avro-confluent --registry-url URL] \\
        [--fields-include ALL|EXCEPT_KEY] \\
        --columns '`id` INT NOT NULL, `name` STRING' --primary-key '`id`' \\
        --out rows.jsonl --summary summary.json

It declares the topic as a Flink SQL table (key and value ``json`` by default, a missing field
an error; or ``--format avro-confluent``: key and value Avro in Confluent's wire format, the
writer schema fetched by id from the registry at ``--registry-url``, subjects
``<topic>-key`` / ``<topic>-value``; the whole row in the value: ``value.fields-include =
ALL`` unless ``--fields-include EXCEPT_KEY``; read ``read_committed``, bounded at the latest
offsets) with the message headers as a metadata column, runs a
streaming query over it and folds the changelog Flink emits (+I, -U, +U, -D) into the final
row per key. ``--out`` gets one JSON line per live key: ``{"values": {column: value},
"tableName": header}``; ``--summary`` the count of each row kind and every ``tableName``
header seen on an emitted row.

Values are Flink's own Python values, tagged so that the test gets them back exactly:
``{"decimal": "1.50"}``, ``{"date": "2024-01-31"}``, ``{"time": "12:34:56.789000"}``,
``{"bytes": base64}``; TIMESTAMP and TIMESTAMP_LTZ columns are cast to STRING in the query
(Flink prints them; ``table.local-time-zone`` is UTC) because PyFlink's Python conversion of
TIMESTAMP goes through a float and can lose a microsecond. Arrays of strings travel as
``JSON_STRING`` text and come out as lists again, because PyFlink's conversion fails on a
NULL element.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import decimal
import json
import sys
import time
from pathlib import Path
from typing import Any

from pyflink.table import EnvironmentSettings, TableEnvironment
from pyflink.table.types import (
    ArrayType,
    CharType,
    LocalZonedTimestampType,
    RowKind,
    TimestampType,
    VarCharType,
)

HEADERS = "__headers"
FORMATS = ("json", "avro-confluent")


def _encode(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, decimal.Decimal):
        return {"decimal": str(value)}
    if isinstance(value, datetime.datetime):
        return {"datetime": value.isoformat()}
    if isinstance(value, datetime.date):
        return {"date": value.isoformat()}
    if isinstance(value, datetime.time):
        return {"time": value.isoformat()}
    if isinstance(value, bytes | bytearray):
        return {"bytes": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {"map": [[_encode(k), _encode(v)] for k, v in value.items()]}
    raise TypeError(f"no JSON form for {type(value).__name__} {value!r}")


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _format_options(fmt: str, registry_url: str | None) -> str:
    """The upsert-kafka table's key and value format options."""
    if fmt == "json":
        options = {"key.format": "json", "key.json.fail-on-missing-field": "true",
                   "value.format": "json", "value.json.fail-on-missing-field": "true"}
    else:  # avro-confluent: subjects default to <topic>-key / <topic>-value
        options = {"key.format": "avro-confluent",
                   "key.avro-confluent.url": str(registry_url),
                   "value.format": "avro-confluent",
                   "value.avro-confluent.url": str(registry_url)}
    return ",\n          ".join(f"{_literal(k)} = {_literal(v)}" for k, v in options.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--jar", required=True, action="append",
                        help="flink-sql-connector-kafka jar; again for a format's jar "
                        "(flink-sql-avro-confluent-registry)")
    parser.add_argument("--format", default="json", choices=FORMATS,
                        help="key and value format (default json)")
    parser.add_argument("--registry-url", help="Schema Registry URL, for avro-confluent")
    parser.add_argument("--fields-include", default="ALL", choices=("ALL", "EXCEPT_KEY"))
    parser.add_argument("--columns", required=True, help="Flink SQL physical column DDL")
    parser.add_argument("--primary-key", required=True, help="e.g. `id`, `tag`")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--summary", required=True, type=Path)
    args = parser.parse_args()
    if args.format == "avro-confluent" and not args.registry_url:
        parser.error("--format avro-confluent needs --registry-url")
    started = time.monotonic()

    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    config = t_env.get_config()
    config.set("pipeline.jars", ";".join(Path(jar).resolve().as_uri() for jar in args.jar))
    config.set("parallelism.default", "1")
    config.set("table.local-time-zone", "UTC")

    t_env.execute_sql(f"""
        CREATE TABLE src (
          {args.columns},
          {HEADERS} MAP<STRING, BYTES> METADATA FROM 'headers' VIRTUAL,
          PRIMARY KEY ({args.primary_key}) NOT ENFORCED
        ) WITH (
          'connector' = 'upsert-kafka',
          'topic' = '{args.topic}',
          'properties.bootstrap.servers' = '{args.bootstrap}',
          'properties.isolation.level' = 'read_committed',
          'scan.bounded.mode' = 'latest-offset',
          {_format_options(args.format, args.registry_url)},
          'value.fields-include' = '{args.fields_include}'
        )""")
    schema = t_env.from_path("src").get_schema()
    names = [n for n in schema.get_field_names() if n != HEADERS]
    types = dict(zip(schema.get_field_names(), schema.get_field_data_types(), strict=True))
    keys = [k.strip().strip("`") for k in args.primary_key.split(",")]
    # PyFlink's collect() cannot convert an array holding a NULL element (pickle.loads of
    # empty bytes: EOFError), so arrays of strings travel as JSON_STRING text, parsed below.
    text_arrays = {n for n in names if isinstance(types[n], ArrayType)
                   and isinstance(types[n].element_type, CharType | VarCharType)}
    select = [
        f"CAST({_quote(n)} AS STRING)"
        if isinstance(types[n], TimestampType | LocalZonedTimestampType)
        else f"JSON_STRING({_quote(n)})" if n in text_arrays else _quote(n)
        for n in names
    ]
    query = f"SELECT {', '.join(select)}, {HEADERS}['tableName'] FROM src"

    state: dict[tuple[Any, ...], dict[str, Any]] = {}
    kinds: dict[str, int] = {}
    table_names: set[str | None] = set()
    with t_env.execute_sql(query).collect() as results:
        for row in results:
            kind = row.get_row_kind()
            kinds[str(kind)] = kinds.get(str(kind), 0) + 1
            fields = list(row)
            header = fields[-1]
            table_name = None if header is None else bytes(header).decode("utf-8")
            table_names.add(table_name)
            values = dict(zip(names, fields[:-1], strict=True))
            for n in text_arrays:
                if values[n] is not None:
                    values[n] = json.loads(values[n])
            key = tuple(_encode(values[k]) for k in keys)
            frozen = tuple(json.dumps(k, sort_keys=True) for k in key)
            if kind in (RowKind.INSERT, RowKind.UPDATE_AFTER):
                state[frozen] = {"values": {n: _encode(v) for n, v in values.items()},
                                 "tableName": table_name}
            elif kind == RowKind.DELETE:
                if state.pop(frozen, None) is None:
                    raise SystemExit(f"Flink deleted key {key} that it never inserted")
            elif frozen not in state:  # UPDATE_BEFORE retracts a live row
                raise SystemExit(f"Flink retracted key {key} that it never inserted")

    with args.out.open("w", encoding="utf-8") as out:
        for entry in state.values():
            out.write(json.dumps(entry, ensure_ascii=False) + "\n")
    args.summary.write_text(json.dumps({
        "kinds": kinds,
        "table_names": sorted(table_names, key=lambda n: (n is None, n or "")),
        "live_keys": len(state),
        "seconds": round(time.monotonic() - started, 1),
    }))
    print(f"flink_readback_job: {len(state)} live keys, row kinds {kinds}, "
          f"{time.monotonic() - started:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
