"""Flink CDC options that mean nothing here: accepted, each named in a warning with why.

A Flink CDC pipeline file is meant to run here unchanged (docs/flink-cdc-compatibility.md).
An option that only tunes Flink's own machinery is taken out before validation and reported
as a warning (``validate`` prints them, capture logs them at start), never dropped
silently. An option whose effect matters to the output or to security is not listed here:
it is built, or refused as unknown (``jdbc.properties.*``: :mod:`cdc_ingest.config.jdbc`).
"""

from __future__ import annotations

from typing import Any

_SERVER_TEXT = ("values are read as the server's own text and binlog bytes in a UTF-8, UTC "
                "session, whatever the JDBC driver would convert")
# Connector/J properties (``jdbc.properties.<name>``) with no effect on a PyMySQL connection
_JDBC: dict[str, str] = {
    **{name: _SERVER_TEXT for name in (
        "serverTimezone", "connectionTimeZone", "forceConnectionTimeZoneToSession",
        "preserveInstants", "useLegacyDatetimeCode", "useTimezone", "characterEncoding",
        "characterSetResults", "useUnicode", "zeroDateTimeBehavior", "tinyInt1isBit",
        "transformedBitIsBoolean", "yearIsDateType", "noDatetimeStringSync")},
    **{name: "reads stream with server-side cursors and fixed statements; the driver's "
       "statement and fetch tuning does not apply" for name in (
        "useCursorFetch", "defaultFetchSize", "useServerPrepStmts", "cachePrepStmts",
        "prepStmtCacheSize", "prepStmtCacheSqlLimit", "rewriteBatchedStatements",
        "useInformationSchema", "useCompression", "maxAllowedPacket", "useReadAheadInput",
        "elideSetAutoCommits", "useLocalSessionState")},
    **{name: "connections are retried by connect.max-retries and bounded by connect.timeout; "
       "a binlog stream must not time out between events" for name in (
        "autoReconnect", "connectTimeout", "socketTimeout", "tcpKeepAlive",
        "maxReconnects", "initialTimeout", "failOverReadOnly")},
    "allowPublicKeyRetrieval": "PyMySQL fetches the server's RSA key for "
    "caching_sha2_password logins over unencrypted connections itself",
}

# section -> option (a trailing ``*`` matches any rest) -> why it has no effect here
IGNORED: dict[str, dict[str, str]] = {
    "source": {
        **{f"jdbc.properties.{name}": why for name, why in _JDBC.items()},
        "debezium.*": "cdc-ingest reads the binlog itself; there is no Debezium engine to "
        "configure",
        "connection.pool.size": "capture opens a fixed few connections (binlog, catalog, one "
        "per snapshot reader)",
        "scan.incremental.close-idle-reader.enabled": "snapshot readers are closed as soon as "
        "the snapshot ends",
        "scan.incremental.snapshot.unbounded-chunk-first.enabled": "chunks are read in key "
        "order, each bounded by scan.incremental.snapshot.chunk.size, so the last chunk holds "
        "only the rows after the last bound",
        "include-comments.enabled": "table and column comments are not part of the output",
        "scan.incremental.snapshot.chunk.key-column": "snapshot chunks always follow the "
        "table's key (its primary key, or the transform's primary-keys / tables.key-columns), "
        "which keeps every chunk exact; the output does not depend on the chunk column",
        "scan.incremental.snapshot.backfill.skip": "the snapshot always reconciles each chunk "
        "with the binlog, so it stays exactly-once (skipping it would only weaken that)",
        "schema-change.enabled": "DDL is always read, because it decides what the sink topics "
        "must get (tombstones after TRUNCATE, re-keys); pipeline.schema.change.behavior "
        "chooses what a schema change does",
    },
    "sink": {
        **{f"{fmt}.encode.decimal-as-plain-number": "DECIMAL values are always written as "
           "plain numbers with their scale (`100.00`), never in scientific notation"
           for fmt in ("json", "debezium-json", "canal-json")},
        **{f"{fmt}.map-null-key.*": "MySQL has no MAP columns"
           for fmt in ("json", "debezium-json", "canal-json")},
        "csv.*": "the csv key takes no options (in Flink CDC neither)",
    },
    "pipeline": {
        "schema.operator.uid": "a Flink operator id; there are no Flink operators here",
        "operator.uid.prefix": "Flink operator ids; there are no Flink operators here",
        "schema-operator.rpc-timeout": "Flink's schema operator; capture applies a schema "
        "change itself, in binlog order",
        "local-time-zone": "no value depends on it: TIMESTAMP values are written in UTC with "
        "'Z' and DATETIME values as stored (docs/changelog-format.md)",
    },
}


# Options that are checked (a bad value is an error) but change nothing here
NOTED: dict[str, dict[str, str]] = {
    "source": {
        "server-time-zone": "no value depends on it: the binlog holds TIMESTAMP values in UTC "
        "and the snapshot reads them in a UTC session, so they are written in UTC with 'Z'",
    },
}


def _why(section: str, option: str) -> str | None:
    for pattern, why in IGNORED.get(section, {}).items():
        if option == pattern or (pattern.endswith("*") and option.startswith(pattern[:-1])):
            return why
    return None


def take_ignored(section: str, raw: dict[Any, Any], warnings: list[str]) -> dict[Any, Any]:
    """``raw`` without the options of ``section`` that have no effect here; a warning for
    each goes to ``warnings``."""
    kept: dict[Any, Any] = {}
    for name, value in raw.items():
        why = _why(section, str(name))
        noted = NOTED.get(section, {}).get(str(name))
        if why is None:
            kept[name] = value
        else:
            warnings.append(f"{section}.{name}: ignored, {why}")
        if noted is not None:
            warnings.append(f"{section}.{name}: accepted, but {noted}")
    return kept
