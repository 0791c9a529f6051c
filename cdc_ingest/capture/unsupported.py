"""Binlog features capture cannot follow yet: it stops with what, where and the fix.

Skipping any of these would lose or repeat changes without a word, so the binlog reader
raises the error built here, and ``validate`` flags the server settings that produce them
(with the same fixes).
"""

from __future__ import annotations

import re

from cdc_ingest.errors import SourceError

TRANSACTION_PAYLOAD_EVENT = 40  # binlog_transaction_compression=ON (MySQL 8.0.20+)
GTID_TAGGED_LOG_EVENT = 42  # SET gtid_next='AUTOMATIC:<tag>' (MySQL 8.3+)
# MariaDB's log_bin_compress=ON: QUERY_COMPRESSED_EVENT and the compressed rows events
MARIADB_COMPRESSED_EVENTS = frozenset(range(165, 172))

COMPRESSION_FIX = (
    "SET PERSIST binlog_transaction_compression=OFF (and binlog_transaction_compression=OFF "
    "in my.cnf)")
PARTIAL_JSON_FIX = (
    "SET PERSIST binlog_row_value_options='' (and binlog_row_value_options= in my.cnf)")
MARIADB_COMPRESSION_FIX = "SET GLOBAL log_bin_compress=OFF (and log_bin_compress=OFF in my.cnf)"
TAGGED_GTID_FIX = "stop writing transactions with tagged GTIDs (gtid_next='AUTOMATIC:<tag>')"
# A tag in a GTID set: <uuid>:<intervals>:<tag>:<intervals> (MySQL 8.3+); a tag starts with
# a letter or _, intervals with a digit, and uuids are never between two colons.
_TAGGED = re.compile(r":[a-z_][a-z0-9_]*:", re.IGNORECASE)
_ALREADY = (
    "Transactions already written this way stay unreadable for this version: after the fix, "
    "start a new pipeline (new pipeline.name, scan.startup.mode: initial) to snapshot again.")


def unsupported_event(event_type: int, where: str, gtid: str | None) -> SourceError | None:
    """The error for a binlog event type capture must not pass over, else None."""
    at = f"binlog {where}" + (f" (after GTID {gtid})" if gtid else "")
    if event_type == TRANSACTION_PAYLOAD_EVENT:
        return SourceError(
            f"MySQL compressed a transaction at {at} (binlog_transaction_compression=ON); "
            "this version of capture cannot read compressed transactions, and skipping it "
            f"would lose its changes, so nothing from it on was captured. Fix: "
            f"{COMPRESSION_FIX}. {_ALREADY}")
    if event_type in MARIADB_COMPRESSED_EVENTS:
        return SourceError(
            f"MariaDB compressed an event at {at} (log_bin_compress=ON); this version of "
            "capture cannot read compressed binlog events, and skipping it would lose its "
            f"changes, so nothing from it on was captured. Fix: {MARIADB_COMPRESSION_FIX}. "
            f"{_ALREADY}")
    if event_type == GTID_TAGGED_LOG_EVENT:
        return SourceError(
            f"a transaction with a tagged GTID at {at}; this version of capture cannot track "
            "tagged GTIDs in its resume position, so a restart would repeat the transaction. "
            f"Nothing from it on was captured. Fix: {TAGGED_GTID_FIX}. {_ALREADY}")
    return None


def partial_json_update(db: str, table: str, where: str, gtid: str | None) -> SourceError:
    at = f"binlog {where}" + (f", GTID {gtid}" if gtid else "")
    return SourceError(
        f"MySQL logged a partial JSON update of {db}.{table} at {at} "
        "(binlog_row_value_options=PARTIAL_JSON): the after image holds only the JSON diff, "
        "which this version of capture cannot apply, and skipping it would lose the change. "
        f"Nothing from it on was captured. Fix: {PARTIAL_JSON_FIX}. {_ALREADY}")


def has_tagged_gtids(gtid_set: str) -> bool:
    return bool(_TAGGED.search(gtid_set.replace("\n", "")))


def tagged_gtid_set(gtid_set: str) -> SourceError:
    """A start position (the server's GTID state, on a first start) with tagged GTIDs."""
    return SourceError(
        f"the GTID set to start from has tagged GTIDs ({gtid_set[:200]}); this version of "
        "capture cannot resume from tagged GTID sets. Fix: "
        f"{TAGGED_GTID_FIX}, then start a new pipeline on a server whose gtid_executed has "
        "none (tags stay in gtid_executed until RESET BINARY LOGS AND GTIDS).")
