"""Position's fast copies equal dataclasses.replace with the same changes, field for field."""

from __future__ import annotations

from dataclasses import fields, replace

from cdc_ingest.model import Position

# every field set to something of its own, so a field copied into the wrong slot shows
FULL = Position(gtid_set="0-1-5,1-2-3", file="mysql-bin.000007", pos=4711, tx_gtid="0-1-6",
                rows_done=17, ts_ms=1700000000123, snapshot={"tables": [["db", "t"]]},
                tables=["db\\.t", None], signals=42)


def test_every_field_is_distinct_in_the_example() -> None:
    values = [repr(getattr(FULL, f.name)) for f in fields(Position)]
    assert len(set(values)) == len(values) == 9  # a new field must be added here and below


def test_after_rows_is_replace() -> None:
    assert FULL.after_rows(99, 5) == replace(FULL, rows_done=99, ts_ms=5)


def test_begun_is_replace() -> None:
    assert FULL.begun("0-1-7", "mysql-bin.000008", 4, 6) == replace(
        FULL, tx_gtid="0-1-7", file="mysql-bin.000008", pos=4, rows_done=0, ts_ms=6)
    assert FULL.begun(None, None, None, 0) == replace(
        FULL, tx_gtid=None, file=None, pos=None, rows_done=0, ts_ms=0)
