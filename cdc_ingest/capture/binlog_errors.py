"""What the binlog reader says when the server ends its stream, and the TableMap repair it
needs for MySQL 9 (kept here so the reader stays the one module that imports the library)."""

from __future__ import annotations

from typing import Any

from cdc_ingest.errors import PositionPurgedError, SourceError, SourceUnavailable
from cdc_ingest.model import Position
from cdc_ingest.mysql.connection import went_away
from cdc_ingest.mysql.packed import packed_int

ER_MASTER_FATAL_ERROR_READING_BINLOG = 1236
ER_SLAVE_SAME_ID = 4052
# Optional TableMap metadata types python-mysql-replication 1.0 reads (MySQL's enum
# Table_map_log_event::Optional_metadata_field_type, SIGNEDNESS .. COLUMN_VISIBILITY).
KNOWN_METADATA = frozenset(range(1, 13))
CHECKSUM_LEN = 4
# How MySQL and MariaDB say a replica's position is ahead of what they have.
SERVER_BEHIND = ("more GTIDs than", "which is not in the master's binlog")


class ReplicaTakenOver(SourceError):
    """Another replica connected to MySQL with this capture's server-id."""


class BinlogDisconnected(SourceUnavailable):
    """The binlog connection broke (the server stopped, restarted, failed over, or the network
    dropped it). Capture reconnects from what it has committed, not the library: a stream
    resumed by the library would send the open transaction's rows again."""


def stream_error(exc: Exception, start: Position, server_id: int) -> SourceError:
    """The error for a binlog stream the server ended (``exc``: pymysql's OperationalError)."""
    code = exc.args[0] if exc.args else None
    message = str(exc.args[1]) if len(exc.args) > 1 else str(exc)
    # MySQL ends the older stream with 1236 too, naming the reason:
    # "A replica with the same server_uuid/server_id as this replica has connected ..."
    if code == ER_SLAVE_SAME_ID or (code == ER_MASTER_FATAL_ERROR_READING_BINLOG
                                    and "same server_uuid/server_id" in message):
        return ReplicaTakenOver(
            f"another replica connected to MySQL with server-id {server_id}, so "
            "MySQL dropped this capture's binlog stream. Fix: if it is a second "
            "instance of this pipeline, run only one; otherwise give each pipeline (and "
            "each replica) its own source.server-id.")
    if went_away(exc):
        return BinlogDisconnected(f"the binlog connection to MySQL broke: {message}")
    if code == ER_MASTER_FATAL_ERROR_READING_BINLOG and any(
            m in message for m in SERVER_BEHIND):
        return SourceError(
            f"MySQL cannot send the binlog from position {start.describe()!r}: {message}. "
            "This server lacks transactions capture already captured: it is behind or has "
            "diverged, as after a failover to a replica that had not received everything, so "
            "the sink topics hold changes this server does not have. Fix: point source."
            "hostname at a server that has them (or wait until this one has caught up); "
            "else start a new pipeline with scan.startup.mode: initial.")
    if code == ER_MASTER_FATAL_ERROR_READING_BINLOG:
        return PositionPurgedError(
            f"MySQL cannot send the binlog from position {start.describe()!r}: "
            f"{message}. The binlog files it needs "
            "were purged (or the position never existed). Fix: start again with "
            "scan.startup.mode: latest-offset (changes made while capture was away are "
            "then missed; re-snapshot to get them), or restore the binlog files; "
            "raise binlog_expire_logs_seconds so it does not happen again.")
    return SourceError(f"binlog stream failed: {exc}")


def drop_unknown_metadata(packet: Any) -> None:
    """Remove the optional-metadata entries (type, length, value) of types the library does
    not know from a TableMap packet whose read position is at the first entry."""
    data: bytes = packet._data
    start = at = packet._position
    end = len(data) - CHECKSUM_LEN
    kept = bytearray()
    while at < end:
        kind = data[at]
        length, value_at = packed_int(data, at + 1)
        if kind in KNOWN_METADATA:
            kept += data[at:value_at + length]
        at = value_at + length
    if len(kept) != end - start:
        packet._data = data[:start] + bytes(kept) + data[end:]
