"""``cdc-ingest cutover``: the gate a migration switches over through.

1. The final position. Without ``--last-write``, MySQL must be read-only (``read_only`` or
   ``super_read_only`` ON): the final position is its binlog head then. With
   ``--last-write FILE:POS`` or ``--last-write GTID`` the user names the last write: the
   final position is the end of it (the GTID's transaction found in the binlog), and MySQL
   must have written it.
2. The pipeline passes it: capture has committed a position at or after it and the sink has
   committed every changelog record written by then (verify/clock.py).
3. Every table is verified (``verify``'s pass, its rechecks included).
4. The binlog after the final position is read (verify/binlog_events.py): a row change of a
   captured table, a statement, or a compressed transaction there means MySQL moved on while
   step 3 read it (a user whom ``read_only`` does not stop, or a write after the one named),
   so the verdict is not one of the final position: refused, naming the event.

Exit 0, printing the final position (and the GTID state there), only when all of that holds;
:data:`~cdc_ingest.exit_codes.CUTOVER_REFUSED` when MySQL takes or took writes,
:data:`~cdc_ingest.exit_codes.NOT_CAUGHT_UP` when the pipeline does not reach the position,
:data:`~cdc_ingest.exit_codes.VERIFY_DIFFERENT` when a table differs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from cdc_ingest import exit_codes
from cdc_ingest.config import PipelineDef
from cdc_ingest.errors import CdcIngestError
from cdc_ingest.mysql import Flavor, connect, connection_settings, query_rows
from cdc_ingest.verify.binlog_events import changes_after, files_from, gtid_end
from cdc_ingest.verify.clock import Head, PipelineClock
from cdc_ingest.verify.run import SETTLE_MARGIN_S, VerifyMismatch, verify_pipeline

DEFAULT_TIMEOUT_S = 600.0
_FILE_POS = re.compile(r"^(.+):(\d+)$")


class CutoverRefused(CdcIngestError):
    """MySQL takes writes (or took some after the final position): no final position yet."""

    exit_code = exit_codes.CUTOVER_REFUSED


class PipelineBehind(CdcIngestError):
    """The pipeline did not reach the final position in time."""

    exit_code = exit_codes.NOT_CAUGHT_UP


def _on(value: Any) -> bool:
    text = value.decode() if isinstance(value, bytes) else str(value)
    return text.strip().upper() not in ("0", "OFF", "")


def _read_only(query: Callable[..., list[tuple[Any, ...]]], flavor: Flavor) -> bool:
    if flavor.mariadb:
        return _on(query("SELECT @@GLOBAL.read_only")[0][0])
    row = query("SELECT @@GLOBAL.read_only, @@GLOBAL.super_read_only")[0]
    return _on(row[0]) or _on(row[1])


def _head(query: Callable[..., list[tuple[Any, ...]]], flavor: Flavor) -> Head:
    row = flavor.binlog_status(query)
    return str(row[0]), int(row[1])


def _named(query: Callable[..., list[tuple[Any, ...]]], last_write: str) -> Head:
    """The position after the last write the user named (``FILE:POS`` or a GTID)."""
    found = _FILE_POS.match(last_write.strip())
    if found and found.group(1) in files_from(query, found.group(1)):
        return found.group(1), int(found.group(2))
    try:
        end = gtid_end(query, last_write)
    except LookupError as exc:
        raise CutoverRefused(f"--last-write {last_write}: {exc}") from None
    if end is None:
        raise CutoverRefused(
            f"--last-write {last_write} is neither a binlog position (FILE:POS with FILE one "
            "of SHOW BINARY LOGS) nor a GTID any binlog file holds. Fix: give the position "
            "SHOW BINARY LOG STATUS (MariaDB: SHOW MASTER STATUS) printed after the last "
            "write, or that write's GTID.")
    return end


def final_position(query: Callable[..., list[tuple[Any, ...]]], flavor: Flavor,
                   last_write: str | None) -> tuple[Head, str]:
    """The final position and how it was taken."""
    head = _head(query, flavor)
    if last_write is None:
        if not _read_only(query, flavor):
            raise CutoverRefused(
                f"MySQL takes writes (read_only is OFF; its binlog is at {head[0]}:{head[1]}): "
                "no final position yet. Fix: stop the writes with SET GLOBAL read_only = ON "
                "(MySQL: super_read_only = ON also stops administrators), or name the last "
                "write with --last-write FILE:POS or --last-write GTID, then run cutover again.")
        return head, "MySQL is read-only: its binlog head"
    final = _named(query, last_write)
    if final > head:
        raise CutoverRefused(f"--last-write {last_write} is at {final[0]}:{final[1]}, after "
                             f"MySQL's binlog head {head[0]}:{head[1]}: not written yet")
    return final, f"the end of the last write named ({last_write})"


def run_cutover(defn: PipelineDef, echo: Callable[[str], None], last_write: str | None,
                timeout_s: float = DEFAULT_TIMEOUT_S, max_diffs: int = 10) -> None:
    """The gate (see the module's docstring); returns only when the switch-over is safe."""
    settings = connection_settings(defn.source)
    conn = connect(settings, defn.source.connect_max_retries)
    clock = PipelineClock(settings, defn.kafka_config(),
                          defn.pipeline.offsets_topic, defn.pipeline.changelog_topic,
                          defn.sink_group_id)

    def query(sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        return query_rows(conn, sql, args)

    try:
        flavor = Flavor.of(str(query("SELECT VERSION()")[0][0]))
        final, how = final_position(query, flavor, last_write)
        where = f"{final[0]}:{final[1]}"
        echo(f"cutover: final binlog position {where} ({how})")
        # capture commits its position at least every heartbeat.interval while it runs
        stall = defn.source.heartbeat_interval.total_seconds() + SETTLE_MARGIN_S
        if not clock.wait_past(final, timeout_s, stall_s=stall):
            at = clock.capture_at()
            raise PipelineBehind(
                f"the pipeline did not reach {where} within {timeout_s:.0f} s (capture has "
                f"committed {'nothing' if at is None else f'{at[0]}:{at[1]}'}). Fix: start "
                "the pipeline (cdc-ingest start), see cdc-ingest status for its lag, and run "
                "cutover again; --timeout waits longer.")
        echo(f"cutover: capture and the sink have written every change up to {where}")
        results = verify_pipeline(defn, echo, max_diffs)
        moved = changes_after(query, final[0], final[1], defn.source.captures)
        if moved is not None:
            event, what = moved
            raise CutoverRefused(
                f"MySQL changed after the final position {where}: {what} at binlog "
                f"{event.where}, so the check above is not one of {where}. Fix: stop every "
                "write (MySQL: SET GLOBAL super_read_only = ON stops administrators too), "
                "or name that write with --last-write, and run cutover again.")
        bad = [r.topic for r in results if not r.ok]
        if bad:
            raise VerifyMismatch(
                f"{len(bad)} sink topic(s) differ from MySQL at the final position {where}: "
                f"{', '.join(bad[:5])}{' ...' if len(bad) > 5 else ''}. Do not switch over; "
                "the differences are listed above.")
        gtid = _gtid_at(query, flavor, final)
        echo(f"cutover: every table equal to MySQL at the final position {where}"
             f"{f' (GTID set {gtid})' if gtid else ''}: safe to switch over")
    finally:
        clock.close()
        conn.close()


def _gtid_at(query: Callable[..., list[tuple[Any, ...]]], flavor: Flavor, at: Head) -> str:
    """The GTID state at the final position: MariaDB's ``BINLOG_GTID_POS``; on MySQL the
    executed set while the head is still there ("" once the binlog has moved on)."""
    try:
        if flavor.mariadb:
            return flavor.gtid_at(query, *at) or ""
        return flavor.gtid_state(query) if _head(query, flavor) == at else ""
    except LookupError:
        return ""
