"""cdc-ingest's Avro schema text equals real Flink's, byte for byte (formats/avro_schemas.py).

Flink's ``avro-confluent`` format registers ``AvroSchemaConverter.convertToSchema(rowType)
.toString()`` (Flink 2.0, the one-argument overload: legacy timestamp mapping) of the table's
NOT NULL physical row type. One PyFlink 2.0.2 process (the virtualenv of ``flink_env``) starts
PyFlink's JVM gateway, loads the avro-confluent format jar (Flink's
``org.apache.flink.formats.avro.typeutils.AvroSchemaConverter``, Avro shaded inside) into the
gateway's context class loader as ``pipeline.jars`` does, parses each row type with Flink's
own ``LogicalTypeParser`` and prints what ``convertToSchema`` gives, or the exception it
throws. The tests compare that with ``RowCodec(columns).text``:

- every Flink CDC type of the typed layouts that Flink 2.0 derives, NOT NULL and nullable,
  one column per record; then a key record (all NOT NULL) and a value record (every type,
  both nullabilities, interleaved): the texts must be equal;
- the documented deviations (docs/output-contract.md, "avro-confluent"): TIME (Flink:
  ``time-millis`` for p <= 3, an exception above; cdc-ingest: a ``long`` of microseconds),
  TIMESTAMP(4..6) and TIMESTAMP_LTZ (Flink 2.0 throws), stated in Flink's own words.

Column defaults (cdc-ingest's other deviation) are left out: no case has one.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from cdc_ingest.formats.avro_schemas import RowCodec
from cdc_ingest.maven import MavenError
from tests.integration import flink_env

JVM_TIMEOUT = 300

# Runs in the PyFlink virtualenv: argv = [format jar, output file]; stdin = {case: row type}.
# Writes {case: {"schema": text} | {"error": Java class, "message": text}} to the file
# (stdout carries the gateway launcher's chatter).
FLINK_SCRIPT = r"""
import json, sys
from pyflink.java_gateway import get_gateway
from pyflink.util.java_utils import add_jars_to_context_class_loader
from py4j.protocol import Py4JJavaError

jar, out = sys.argv[1], sys.argv[2]
cases = json.loads(sys.stdin.read())
gateway = get_gateway()
add_jars_to_context_class_loader([gateway.jvm.java.io.File(jar).toURI().toString()])
jvm = gateway.jvm
loader = jvm.Thread.currentThread().getContextClassLoader()
name = "org.apache.flink.formats.avro.typeutils.AvroSchemaConverter"
source = (jvm.Class.forName(name, True, loader).getProtectionDomain().getCodeSource()
          .getLocation().toString())
converter = jvm.org.apache.flink.formats.avro.typeutils.AvroSchemaConverter
parser = jvm.org.apache.flink.table.types.logical.utils.LogicalTypeParser
results = {}
for case, row_type in cases.items():
    try:
        logical = parser.parse(row_type, loader)
        results[case] = {"schema": converter.convertToSchema(logical).toString(),
                         "type": logical.asSerializableString()}
    except Py4JJavaError as exc:
        java = exc.java_exception
        results[case] = {"error": java.getClass().getName(), "message": java.getMessage()}
with open(out, "w", encoding="utf-8") as f:
    json.dump({"converter_jar": source, "results": results}, f)
"""

# Every Flink CDC type the typed layouts use (capture/typed_layout.py) that Flink 2.0 derives
SAME_TYPES = [
    "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE",
    "DECIMAL(20, 0)", "DECIMAL(10, 2)", "DECIMAL(38, 10)",
    "CHAR(5)", "VARCHAR(300)", "STRING", "BINARY(4)", "VARBINARY(10)", "BYTES",
    "DATE", "TIMESTAMP(0)", "TIMESTAMP(3)", "ARRAY<STRING>", "ARRAY<FLOAT>",
]

Column = tuple[str, str, bool]


def _field(type_: str) -> str:
    """A field name for a type: ``DECIMAL(10, 2)`` -> ``c_decimal_10_2``."""
    name = "".join(ch if ch.isalnum() else "_" for ch in type_.lower())
    return "c_" + "_".join(part for part in name.split("_") if part)


def _row_type(columns: list[Column]) -> str:
    """Flink SQL's row type of the columns, NOT NULL as the format factory's physical row."""
    fields = ", ".join(f"`{name}` {type_}{'' if nullable else ' NOT NULL'}"
                       for name, type_, nullable in columns)
    return f"ROW<{fields}> NOT NULL"


SAME: dict[str, list[Column]] = {}
for _type in SAME_TYPES:
    SAME[f"{_type} NOT NULL"] = [(_field(_type), _type, False)]
    SAME[f"{_type} nullable"] = [(_field(_type), _type, True)]
SAME["key record"] = [("id", "INT", False), ("region", "CHAR(5)", False),
                      ("seq", "DECIMAL(20, 0)", False), ("day", "DATE", False),
                      ("at", "TIMESTAMP(3)", False), ("raw", "BINARY(4)", False)]
SAME["value record"] = [
    (f"{_field(t)}_{'n' if nullable else 'nn'}", t, nullable)
    for i, t in enumerate(SAME_TYPES)
    for nullable in ((False, True) if i % 2 else (True, False))
]

# The deviations: (column type, Flink 2.0's schema of its NOT NULL field or its exception
# (Java class, message), cdc-ingest's Avro type)
DEVIATIONS: dict[str, tuple[Any, Any]] = {
    "TIME(0)": ({"type": "int", "logicalType": "time-millis"}, "long"),
    "TIME(6)": (("java.lang.IllegalArgumentException",
                 "Avro does not support TIME type with precision: 6, it only supports "
                 "precision less than 3."), "long"),
    "TIMESTAMP(6)": (("java.lang.IllegalArgumentException",
                      "Avro does not support TIMESTAMP type with precision: 6, it only "
                      "supports precision less than 3."),
                     {"type": "long", "logicalType": "timestamp-micros"}),
    "TIMESTAMP_LTZ(3)": (("java.lang.UnsupportedOperationException",
                          "Unsupported to derive Schema for type: TIMESTAMP_LTZ(3) NOT NULL"),
                         {"type": "long", "logicalType": "timestamp-millis"}),
}

NULLABLE_ROW = "nullable top-level row"


def _cases() -> dict[str, str]:
    cases = {case: _row_type(columns) for case, columns in SAME.items()}
    for type_ in DEVIATIONS:
        cases[f"deviation {type_}"] = _row_type([("c", type_, False)])
    cases[NULLABLE_ROW] = _row_type([("id", "INT", False)]).removesuffix(" NOT NULL")
    return cases


def _record(fields: list[dict[str, Any]]) -> str:
    return json.dumps({"type": "record", "name": "record",
                       "namespace": "org.apache.flink.avro.generated", "fields": fields},
                      separators=(",", ":"))


@pytest.fixture(scope="module")
def flink(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    """What Flink's AvroSchemaConverter gives for every case, from one JVM."""
    try:
        python, jar = flink_env.venv_python(), flink_env.avro_confluent_jar()
    except (flink_env.FlinkEnvError, MavenError) as exc:
        pytest.fail(f"cannot provision PyFlink and the avro-confluent jar (scripts/setup.sh "
                    f"makes them): {exc}")
    workdir = tmp_path_factory.mktemp("flink-avro-schema")
    script, out = workdir / "convert.py", workdir / "schemas.json"
    script.write_text(FLINK_SCRIPT, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    started = time.monotonic()
    try:
        run = subprocess.run([str(python), str(script), str(jar), str(out)],
                             input=json.dumps(_cases()), capture_output=True, text=True,
                             timeout=JVM_TIMEOUT, check=False, cwd=workdir, env=env)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"PyFlink's gateway did not answer within {JVM_TIMEOUT} s: "
                    f"{exc.stderr!r}"[-4000:])
    if run.returncode != 0 or not out.is_file():
        pytest.fail(f"the PyFlink script failed (exit {run.returncode}):\n"
                    f"{(run.stdout + run.stderr)[-6000:]}")
    print(f"Flink's AvroSchemaConverter: {len(_cases())} row types in "
          f"{time.monotonic() - started:.1f} s")
    found = json.loads(out.read_text(encoding="utf-8"))
    # the converter is the format jar's, not some other copy on the gateway's class path
    assert Path(found["converter_jar"].removeprefix("file:")).resolve() == jar.resolve()
    results: dict[str, dict[str, str]] = found["results"]
    return results


@pytest.mark.parametrize("case", list(SAME))
def test_schema_text_is_flinks(flink: dict[str, dict[str, str]], case: str) -> None:
    got = flink[case]
    assert "error" not in got, f"Flink cannot derive {_cases()[case]}: {got}"
    ours = RowCodec(SAME[case]).text
    assert ours == got["schema"], (
        f"{case}: cdc-ingest's schema text differs from Flink's\n"
        f"  Flink ({got['type']}):\n    {got['schema']}\n  cdc-ingest:\n    {ours}")


@pytest.mark.parametrize("type_", list(DEVIATIONS))
def test_documented_deviation_in_flinks_words(flink: dict[str, dict[str, str]],
                                              type_: str) -> None:
    flinks, our_type = DEVIATIONS[type_]
    got = flink[f"deviation {type_}"]
    ours = RowCodec([("c", type_, False)]).text
    assert ours == _record([{"name": "c", "type": our_type}])
    if isinstance(flinks, tuple):  # Flink 2.0 cannot derive it: cdc-ingest's is exact
        assert (got.get("error"), got.get("message")) == flinks, got
    else:  # Flink derives another type: cdc-ingest's holds MySQL's every value
        assert got.get("schema") == _record([{"name": "c", "type": flinks}]), got
        assert got["schema"] != ours


def test_nullable_top_level_row_is_a_union(flink: dict[str, dict[str, str]]) -> None:
    """Why the cases pass ``ROW<...> NOT NULL``: of a nullable row Flink derives
    ``["null", record]``, which its format never registers (its physical row is NOT NULL)."""
    record = _record([{"name": "id", "type": "int"}])
    assert flink[NULLABLE_ROW].get("schema") == f'["null",{record}]', flink[NULLABLE_ROW]
    assert RowCodec([("id", "INT", False)]).text == record
