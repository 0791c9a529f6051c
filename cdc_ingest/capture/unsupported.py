"""Binlog content capture cannot follow: it stops with what, where and the fix.

Skipping any of it would lose or repeat changes without a word, so the binlog reader raises
the error built here, and ``validate`` flags the server settings that produce it (with the
same fixes): MariaDB's ``log_bin_compress``, and a MySQL partial JSON update whose diff does
not apply to its before image (which would be a server or decoder bug, never guessed around).
"""

from __future__ import annotations

import re

from cdc_ingest.errors import SourceError

# MariaDB's log_bin_compress=ON: QUERY_COMPRESSED_EVENT and the compressed rows events
MARIADB_COMPRESSED_EVENTS = frozenset(range(165, 172))

PARTIAL_JSON_FIX = (
    "SET PERSIST binlog_row_value_options='' (and binlog_row_value_options= in my.cnf)")
MARIADB_COMPRESSION_FIX = "SET GLOBAL log_bin_compress=OFF (and log_bin_compress=OFF in my.cnf)"
# A tag in a GTID set: <uuid>:<intervals>:<tag>:<intervals> (MySQL 8.3+); a tag starts with
# a letter or _, intervals with a digit, and uuids are never between two colons.
_TAGGED = re.compile(r":[a-z_][a-z0-9_]*:", re.IGNORECASE)
_ALREADY = (
    "Transactions already written this way stay unreadable for this version: after the fix, "
    "start a new pipeline (new pipeline.name, scan.startup.mode: initial) to snapshot again.")


def unsupported_event(event_type: int, where: str, gtid: str | None) -> SourceError | None:
    """The error for a binlog event type capture must not pass over, else None."""
    at = f"binlog {where}" + (f" (after GTID {gtid})" if gtid else "")
    if event_type in MARIADB_COMPRESSED_EVENTS:
        return SourceError(
            f"MariaDB compressed an event at {at} (log_bin_compress=ON); this version of "
            "capture cannot read compressed binlog events, and skipping it would lose its "
            f"changes, so nothing from it on was captured. Fix: {MARIADB_COMPRESSION_FIX}. "
            f"{_ALREADY}")
    return None


def partial_json_failed(db: str, table: str, column: str, where: str, gtid: str | None,
                        cause: Exception) -> SourceError:
    """A partial JSON update (``binlog_row_value_options=PARTIAL_JSON``) whose diff cannot be
    applied exactly to the before image."""
    at = f"binlog {where}" + (f", GTID {gtid}" if gtid else "")
    return SourceError(
        f"cannot apply MySQL's partial JSON update of {db}.{table}.{column} at {at}: {cause}. "
        "Guessing the document would write a wrong row, so nothing from it on was captured. "
        f"Fix: {PARTIAL_JSON_FIX}, then report this with the binlog around that position. "
        f"{_ALREADY}")


def has_tagged_gtids(gtid_set: str) -> bool:
    return bool(_TAGGED.search(gtid_set.replace("\n", "")))
