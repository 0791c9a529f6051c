"""``cdc-ingest verify --repair``, its verify side: which keys to read again, per table, from
a pass's differences (the command: cdc_ingest/commands/repair.py).

Missing and differing keys name their table (confirmed against binlog positions,
verify/settle.py); an extra key is given to the one table of its topic whose key columns it
names.

Not repaired (said, with the fix ``cdc-ingest snapshot db.table``): keys of a table whose key
columns are not all integers or strings, of a table with a ``transform:`` rule, topics of
``sink.type: kafka`` (change events), more differences than :data:`MAX_REPAIR` in a topic,
an extra key more than one table of its topic could hold, unconfirmed keys (verify again).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import orjson

from cdc_ingest.config import PipelineDef
from cdc_ingest.config.sink import UpsertKafkaSinkDef
from cdc_ingest.mysql import connection_settings
from cdc_ingest.verify.diff import TopicResult
from cdc_ingest.verify.expect import rule_for
from cdc_ingest.verify.mysql import MySqlSide

log = logging.getLogger(__name__)

MAX_REPAIR = 10_000  # differences per topic a repair by key takes on


Keys = dict[tuple[str, str], list[str]]


def _split(name: str) -> tuple[str, str]:
    db, _, table = name.partition(".")
    return db, table


def repair_keys(defn: PipelineDef, results: list[TopicResult], echo: Callable[[str], None]
                ) -> Keys:
    """The keys to read again per table, from a pass's results; what cannot be repaired by
    key is said."""
    keys: Keys = {}
    mysql = MySqlSide(connection_settings(defn.source), defn.source.connect_max_retries)
    try:
        for result in results:
            differences = sum(result.counts[c] for c in ("missing", "extra", "differing"))
            if not differences:
                continue
            why = _not_by_key(defn, result)
            if why:
                echo(f"  {result.topic}: not repaired by key: {why}. Fix: cdc-ingest snapshot "
                     f"{' '.join(t for t in result.tables if '(' not in t)}")
                continue
            columns = {name: set(mysql.shape(*_split(name),
                                             defn.key_columns_for(*_split(name))).key)
                       for name in result.tables}
            for category in ("missing", "differing", "extra"):
                for sample in result.samples[category]:
                    table = sample.table or _holder(sample.key, columns)
                    if table is None:
                        echo(f"  {result.topic}: extra key {sample.key} not repaired: no one "
                             "table of the topic is the one its key columns name")
                        continue
                    keys.setdefault(_split(table), []).append(sample.key)
    finally:
        mysql.close()
    return keys


def _not_by_key(defn: PipelineDef, result: TopicResult) -> str:
    if not isinstance(defn.sink, UpsertKafkaSinkDef):
        return "sink.type kafka writes change events, which a repair by key does not"
    if result.problems:
        return "the topic was not verified"
    if any("(" in t for t in result.tables):
        return "its tables are no longer in MySQL"
    ruled = [t for t in result.tables if rule_for(defn, t) is not None]
    if ruled:
        return f"{', '.join(ruled)} have a transform: rule"
    found = sum(result.counts[c] for c in ("missing", "extra", "differing"))
    listed = sum(len(result.samples[c]) for c in ("missing", "extra", "differing"))
    if found > listed:
        return f"{found} differences, more than the {MAX_REPAIR} a repair by key takes on"
    return ""


def _holder(key: str, columns: dict[str, set[str]]) -> str | None:
    """The one table whose key columns the key JSON names."""
    try:
        named = set(orjson.loads(key))
    except (orjson.JSONDecodeError, TypeError):
        return None
    tables = [t for t, cols in columns.items() if cols == named]
    return tables[0] if len(tables) == 1 else None
