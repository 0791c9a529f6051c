"""The snapshot's record value built from pieces is snapshot_value's bytes, exactly."""

from __future__ import annotations

import orjson

from cdc_ingest.model.changelog import snapshot_parts, snapshot_value


def test_pieces_around_key_and_row_are_snapshot_value() -> None:
    pk = {"id": 7, "k": "é\"x"}
    row = {"id": 7, "k": "é\"x", "d": orjson.Fragment(b"12.50"), "n": None}
    for db, table, layout in (("shop", "orders", None), ('we"ird', "t\\1", "L1a2b3")):
        head, mid, tail = snapshot_parts(db, table, 1700000000123, layout)
        built = head + orjson.dumps(pk) + mid + orjson.dumps(row) + tail
        assert built == snapshot_value(db, table, pk, row, 1700000000123, layout)
