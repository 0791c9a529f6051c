"""Key chunks: the keys ``verify --repair`` asks capture to read again (capture/signals.py).

A key chunk is read like a range chunk (the same read view, watermark and binlog window,
reader.py) but selects its keys' rows (``WHERE (key) IN (...)``); each row is written as a
snapshot ``+I`` and each requested key MySQL has no row for as a ``-D`` (``"pos":"repair"``),
so the sink writes it again or tombstones it; the binlog after the chunk is filtered by its
keys up to its high watermark (filter.py), as after any chunk: each key's changes follow
its repaired row exactly once. Only keys whose columns are integers or strings are taken:
their JSON text has one spelling, the changelog's (other keys: ``cdc-ingest snapshot``).
"""

from __future__ import annotations

from collections.abc import Iterable

import orjson

from cdc_ingest.capture.snapshot.table import same_key

REPAIR_POS = "repair"
MAX_KEYS = 1_000  # keys per key chunk (one read view, one IN list)
# key column types whose values are JSON integers or strings (one spelling)
REPAIRABLE_TYPES = frozenset({"tinyint", "smallint", "mediumint", "int", "bigint", "char",
                              "varchar"})


def spelled(text: str, key_columns: Iterable[str]) -> bytes | None:
    """A requested key's JSON text as the changelog spells it (columns in key order); None
    when it is not an object of exactly those columns with integer or string values."""
    try:
        parsed = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    columns = list(key_columns)
    if not isinstance(parsed, dict) or set(parsed) != set(columns):
        return None
    if not all(isinstance(parsed[c], (int, str)) and not isinstance(parsed[c], bool)
               for c in columns):
        return None
    return orjson.dumps({c: parsed[c] for c in columns})


def absent_keys(requested: list[str], row_keys: list[bytes], key_columns: Iterable[str]
                ) -> list[bytes]:
    """The requested keys (as the changelog spells them) no row was read for."""
    have = {same_key(k) for k in row_keys}
    columns = list(key_columns)
    out = []
    for text in requested:
        key = spelled(text, columns)
        if key is not None and same_key(key) not in have:
            out.append(key)
    return out
