"""Live checks of the MySQL side before capture: settings, grants, keys, position.

Each check returns a :class:`Check` that says what is wrong and the exact fix.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from cdc_ingest.capture.unsupported import MARIADB_COMPRESSION_FIX, has_tagged_gtids
from cdc_ingest.errors import CdcIngestError, SourceError
from cdc_ingest.model import Position
from cdc_ingest.mysql import Catalog, ConnectionSettings, KeyColumns


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""

    def line(self) -> str:
        mark = "ok  " if self.ok else "FAIL"
        text = f"[{mark}] {self.name}: {self.detail}"
        # an error that names its own fix (most do) is not given a second, generic one
        generic = self.fix and not self.ok and "Fix:" not in self.detail
        return f"{text}\n       fix: {self.fix}" if generic else text


_SETTINGS = (
    ("log_bin", "ON", "log_bin=mysql-bin  (and server_id=<unique id>)"),
    ("binlog_format", "ROW", "binlog_format=ROW"),
    ("binlog_row_image", "FULL", "binlog_row_image=FULL"),
    ("binlog_row_metadata", "FULL", "binlog_row_metadata=FULL"),
)


def mysql_checks(
    settings: ConnectionSettings,
    captured: Callable[[str, str], bool],
    key_columns: KeyColumns,
    positions: list[tuple[str, Position]],
    retries: int = 1,
    snapshot: bool = False,
) -> Iterator[Check]:
    """Every MySQL-side check; stops early only when the server cannot be reached."""
    try:
        catalog = Catalog(settings, key_columns, retries)
    except CdcIngestError as exc:
        yield Check("mysql reachable", False, str(exc),
                    "start MySQL or correct source.hostname/port/username/password")
        return
    try:
        yield Check("mysql reachable", True, f"{settings.host}:{settings.port} ({catalog.version})")
        yield from _settings(catalog)
        yield from _unsupported(catalog)
        if snapshot and not catalog.is_mariadb:
            yield _ordered_commits(catalog)
        yield from _grants(catalog, settings.user)
        yield from _keys(catalog, captured, key_columns)
        for label, position in positions:
            yield _position(catalog, label, position)
    finally:
        catalog.close()


def _settings(catalog: Catalog) -> Iterator[Check]:
    for name, wanted, line in _SETTINGS:
        value = (catalog.variable(name) or "").upper()
        if name == "binlog_row_metadata" and not value:
            yield Check(name, False, "the server has no binlog_row_metadata (MySQL < 8.0.1)",
                        "use MySQL 8.0.1+ or MariaDB 10.5+, which log column names")
            continue
        ok = value == wanted or (wanted == "ON" and value == "1")
        fix = (
            f"add `{line}` to the [mysqld] section of my.cnf and restart"
            if name == "log_bin"
            else f"SET PERSIST {name}='{wanted}' (MariaDB: SET GLOBAL {name}='{wanted}') "
            f"and add `{line}` to the [mysqld] section of my.cnf"
        )
        detail = value if ok else f"is {value or 'unset'}, must be {wanted}"
        yield Check(name, ok, detail, "" if ok else fix)


def _unsupported(catalog: Catalog) -> Iterator[Check]:
    """Binlog settings that change what the binlog holds: the one capture cannot follow
    (MariaDB's log_bin_compress) fails, the ones it reads are shown as such. A variable the
    server does not have is not shown."""
    compressed = catalog.variable("log_bin_compress") if catalog.is_mariadb else None
    if compressed is not None:
        on = compressed.upper() in ("ON", "1")
        yield Check("log_bin_compress", not on,
                    "is ON: capture stops at the first compressed event" if on else compressed,
                    MARIADB_COMPRESSION_FIX)
    compression = catalog.variable("binlog_transaction_compression")
    if compression is not None:
        on = compression.upper() in ("ON", "1")
        yield Check("binlog_transaction_compression", True,
                    "ON (compressed transactions are read like any other)" if on
                    else compression)
    options = catalog.variable("binlog_row_value_options")
    if options is not None:
        partial = "PARTIAL_JSON" in options.upper()
        yield Check("binlog_row_value_options", True,
                    "PARTIAL_JSON (partial JSON updates are applied to the before image)"
                    if partial else (options or "empty"))
    executed = catalog.variable("gtid_executed") if not catalog.is_mariadb else None
    if executed is not None:
        tagged = has_tagged_gtids(executed)
        yield Check("tagged GTIDs", True,
                    "gtid_executed has tagged GTIDs (followed like untagged ones)"
                    if tagged else "none in gtid_executed")


def _ordered_commits(catalog: Catalog) -> Check:
    """MySQL snapshots rely on transactions becoming visible in binlog order."""
    value = (catalog.variable("binlog_order_commits") or "").upper()
    ok = value in ("ON", "1")
    return Check("binlog_order_commits", ok,
                 value if ok else f"is {value or 'unset'}: the snapshot could not be exact",
                 "SET PERSIST binlog_order_commits = ON (the default), or start without a "
                 "snapshot (scan.startup.mode: latest-offset)")


_NEEDED = (
    ("REPLICATION SLAVE", ("REPLICATION SLAVE", "REPLICATION REPLICA")),
    ("REPLICATION CLIENT", ("REPLICATION CLIENT", "BINLOG MONITOR", "SUPER")),
    ("SELECT", ("SELECT",)),
)


def _grants(catalog: Catalog, user: str) -> Iterator[Check]:
    global_privs: set[str] = set()
    for (grant,) in catalog._all("SHOW GRANTS"):
        match = re.match(r"GRANT (.+?) ON (\S+) TO", str(grant))
        if match and match.group(2) in ("*.*", "`*`.`*`"):
            global_privs.update(p.strip().upper() for p in match.group(1).split(","))
    everything = "ALL PRIVILEGES" in global_privs or "ALL" in global_privs
    missing = [
        name for name, aliases in _NEEDED
        if not everything and not any(a in global_privs for a in aliases)
    ]
    wanted = "REPLICATION SLAVE, REPLICATION CLIENT, SELECT"
    if catalog.is_mariadb:
        wanted = "REPLICATION SLAVE, BINLOG MONITOR, SELECT"
    yield Check(
        "grants",
        not missing,
        f"user {user!r} lacks {', '.join(missing)} on *.*" if missing
        else f"user {user!r} has replication and SELECT privileges",
        f"GRANT {wanted} ON *.* TO '{user}'@'%';",
    )


def _keys(
    catalog: Catalog,
    captured: Callable[[str, str], bool],
    key_columns: KeyColumns,
) -> Iterator[Check]:
    tables = [(d, t) for d, t in catalog.tables() if captured(d, t)]
    if not tables:
        yield Check("captured tables", False, "no existing table matches source.tables",
                    "check the source.tables patterns (db.table regex, comma-separated)")
        return
    keyless = [
        f"{d}.{t}" for d, t in tables
        if not catalog.primary_key(d, t) and not key_columns(d, t)
    ]
    for d, t in tables:
        configured = key_columns(d, t)
        if configured:
            try:
                catalog.check_unique(d, t, configured)
            except SourceError as exc:
                what, _, fix = str(exc).partition(". Fix: ")
                yield Check("configured keys", False, what, fix)
    unknown = catalog.unknown_types(captured)
    yield Check(
        "column types",
        not unknown,
        "every column of the captured tables has a type capture reads exactly" if not unknown
        else "types capture cannot read exactly: " + ", ".join(
            f"{d}.{t}.{c} {kind}" for d, t, c, kind in unknown[:20])
        + (f" and {len(unknown) - 20} more" if len(unknown) > 20 else ""),
        "leave those tables out (source.tables.exclude), or change the columns to types "
        "docs/changelog-format.md lists",
    )
    yield Check(
        "primary keys",
        not keyless,
        f"{len(tables)} table(s) captured" + (f"; without a primary key: {', '.join(keyless)}"
                                              if keyless else ", all keyed"),
        "add a primary key (ALTER TABLE ... ADD PRIMARY KEY (...)), or name key columns in "
        "source.tables.key-columns, or exclude the table with source.tables.exclude",
    )


def _position(catalog: Catalog, label: str, position: Position) -> Check:
    try:
        why = catalog.purged_before(position)
    except CdcIngestError as exc:
        why = str(exc)
    return Check(
        f"{label} position",
        why is None,
        why or f"{position.describe()} is still in the server's binlog",
        "start from scan.startup.mode: latest-offset (or a newer specific offset); "
        "raise binlog_expire_logs_seconds so positions are kept longer",
    )
