"""A filtered snapshot (``cdc-ingest snapshot db.t --where ...``, Debezium's
``additional-conditions``): the keys of the rows a ``WHERE`` filter selects, read again as
key chunks (repair.py), the way ``verify --repair`` reads the keys that differ.

So only those rows are read and written again, each as a snapshot ``+I``; a selected key
whose row is gone by the time its chunk is read is tombstoned (MySQL has no row for it now);
no key outside the filter is touched, and no reset goes before them. The binlog after each
key chunk is filtered by its keys up to its high watermark, so every key's changes follow its
row exactly once, across crashes, as for any key chunk. The filter is MySQL's: it runs once,
when capture takes the request, as capture's MySQL user. Keys must be integers or strings
(one JSON spelling, as for repairs), and a filter may select at most :data:`MAX_FILTERED`
rows (the keys travel in capture's committed state); otherwise the request is refused, with
the fix: snapshot the whole table.
"""

from __future__ import annotations

import orjson

from cdc_ingest.capture.snapshot.keyorder import quote
from cdc_ingest.capture.snapshot.repair import REPAIRABLE_TYPES
from cdc_ingest.mysql import Catalog
from cdc_ingest.mysql.catalog import QueryRefused

MAX_FILTERED = 10_000  # rows a filtered snapshot reads again, as verify --repair's keys


class FilterRefused(ValueError):
    """Why a table's filtered snapshot cannot be taken."""


def filtered_keys(catalog: Catalog, db: str, table: str, where: str) -> list[str]:
    """The JSON texts of the keys of ``db.table``'s rows ``where`` selects now."""
    name = f"{db}.{table}"
    key = list(catalog.table_facts(db, table)[1])
    types = {c.name: c.data_type for c in catalog.columns(db, table)}
    odd = [c for c in key if types.get(c) not in REPAIRABLE_TYPES]
    if odd:
        raise FilterRefused(f"{name}: its key column(s) {', '.join(odd)} are not integers or "
                            "strings, so a filtered snapshot cannot name its rows by key; "
                            f"snapshot the whole table (cdc-ingest snapshot {name})")
    # the filter is the operator's SQL condition, by design (Debezium's too); names quoted
    sql = (f"SELECT {', '.join(quote(c) for c in key)} FROM {quote(db)}.{quote(table)} "  # noqa: S608
           f"WHERE ({where}) LIMIT {MAX_FILTERED + 1}")
    try:
        rows = catalog.select(sql)
    except QueryRefused as exc:
        raise FilterRefused(f"MySQL refused the filter {where!r} on {name}: {exc}") from exc
    if len(rows) > MAX_FILTERED:
        raise FilterRefused(f"the filter {where!r} selects more than {MAX_FILTERED:,} rows of "
                            f"{name}; snapshot the whole table (cdc-ingest snapshot {name}) "
                            "or narrow the filter")
    return [orjson.dumps(dict(zip(key, row, strict=True))).decode() for row in rows]
