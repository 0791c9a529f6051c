"""docs/output-contract.md's Avro type table says what formats/avro_schemas.py writes."""

from __future__ import annotations

import json
import re
from pathlib import Path

from cdc_ingest.formats.avro_schemas import avro_type
from cdc_ingest.registry.client import RETRY_SECONDS

DOC = Path(__file__).resolve().parents[2] / "docs" / "output-contract.md"
MARK = "<!-- avro types:"
_FLINK = re.compile(r"[A-Z_]+(?:<[A-Z]+>)?(?:\([\w.]+(?:, \w+)?\))?")


def _rows() -> list[list[str]]:
    text = DOC.read_text()
    table = text[text.index(MARK):].split("\n\n", 1)[0].splitlines()[3:]
    return [[cell.strip() for cell in line.strip()[1:-1].split("|")] for line in table]


def _concrete(flink: str, mysql: str) -> str:
    """A Flink type of the table made concrete: DECIMAL(p, s) as the row's example, a
    precision as the row's fsp range says."""
    if flink == "DECIMAL(p, s)":
        return "DECIMAL(10, 2)"
    if "(p)" in flink or "(fsp)" in flink:
        fsp = "6" if "4..6" in mysql else "3" if "0..3" in mysql else "0"
        return flink.replace("(p)", f"({fsp})").replace("(fsp)", f"({fsp})")
    return flink.replace("(n)", "(4)").replace("(ceil(n/8))", "(2)")


def test_every_row_of_the_avro_type_table_is_what_the_code_writes() -> None:
    rows = _rows()
    assert len(rows) >= 18, rows
    checked = 0
    for mysql, flink_cell, avro_cell, _ in rows:
        flinks = [_concrete(f, mysql) for f in _FLINK.findall(flink_cell.replace(
            "ceil(n/8)", "n"))]
        avros = [json.loads(a) for a in re.findall(r"`([^`]+)`", avro_cell)]
        if not flinks:
            assert avros == [None], mysql  # `null`
            continue
        if len(avros) == 1:
            avros = avros * len(flinks)
        assert len(avros) == len(flinks), (mysql, flinks, avros)
        for flink, avro in zip(flinks, avros, strict=True):
            assert avro_type(flink) == avro, (mysql, flink)
            checked += 1
    assert checked >= 25


def test_the_registry_retry_time_in_the_docs_is_the_codes() -> None:
    assert f"retried for {RETRY_SECONDS:.0f} s" in DOC.read_text().replace("\n", " ")
