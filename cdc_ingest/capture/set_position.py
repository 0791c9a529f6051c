"""``set-binlog-position``: capture goes on from a binlog position an operator chose (a GTID set,
or a binlog file and position), back or forward, without a new pipeline.

Taken like any signal, at the start of a run (capture/signals.py): the new position replaces
the committed one and is committed with the signal's notification, so it is taken once even
across a crash. It waits while a snapshot or a re-key is unfinished (their chunks are
reconciled with the binlog from where they began); a finished snapshot's catch-up state is
dropped, since every change from the new position on is written, unfiltered.

- **Back**: the changes from the new position on are read and written again. In the sink
  topics the keys they touch get those changes again, in order, and end as they are in the
  database (upserts converge; a key deleted since is tombstoned again). Transaction metadata
  (``transaction.metadata``) gets BEGIN and END records again for the re-read transactions,
  with the same ids.
- **Forward**: the changes in between are never read. Capture logs a warning naming the
  skipped range (and the notification says it); ``cdc-ingest verify`` then finds what they
  left behind, and ``cdc-ingest snapshot`` (or ``verify --repair``) mends it.
- **Schema**: rows are decoded with the layout their binlog's table maps give (the layout of
  their time, column names included: ``binlog_row_metadata=FULL``), so an ``ALTER TABLE``
  inside a re-read range is crossed as it was the first time: rows before it decode with the
  columns before it. A key change inside it stops capture as it would have then
  (capture/schema_guard.py), naming table and position.

Refused, with why (capture goes on where it was): a position the server has purged, a GTID set
with transactions this server never wrote, a file the server does not have, a position that is
not the start of a transaction in its file.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from cdc_ingest.capture.signal_format import Signal
from cdc_ingest.errors import SourceError
from cdc_ingest.model import Position
from cdc_ingest.mysql import Catalog
from cdc_ingest.mysql.catalog import QueryRefused
from cdc_ingest.mysql.gtid import mariadb_gtid_list, parse_gtid_set_strict, subtract

log = logging.getLogger(__name__)

# the events a transaction (or a binlog file) begins with: a position at one of them is
# between transactions (MySQL and MariaDB names, as SHOW BINLOG EVENTS prints them)
_BOUNDARIES = frozenset({"Format_desc", "Previous_gtids", "Gtid", "Anonymous_Gtid",
                         "Gtid_tagged_log", "Gtid_list", "Binlog_checkpoint", "Rotate",
                         "Stop", "Start_encryption"})


class Refused(Exception):
    pass


def new_position(start: Position, signal: Signal, catalog: Catalog) -> tuple[Position, str]:
    """``start`` moved where ``signal`` says, and what that does; :class:`Refused` with why."""
    if signal.binlog is not None:
        file, pos = signal.binlog
        at = _at_file(catalog, file, pos)
    else:
        assert signal.gtid_set is not None
        at = Position(gtid_set=signal.gtid_set)
        _spelled(catalog, signal.gtid_set)
        beyond = _beyond_server(catalog, signal.gtid_set)
        if beyond:
            raise Refused(f"GTID set {signal.gtid_set[:200]} has {beyond}, which this "
                          "server never wrote (another server's, or not written yet)")
    why = catalog.purged_before(at)
    if why is not None:
        raise Refused(f"the server cannot send the binlog from {at.describe()}: {why}")
    moved = replace(start, gtid_set=at.gtid_set, file=at.file, pos=at.pos, tx_gtid=None,
                    rows_done=0, snapshot=None)
    return moved, _direction(start, moved, catalog.is_mariadb)


def _at_file(catalog: Catalog, file: str, pos: int) -> Position:
    if file not in catalog.binlog_files():  # so only a name the server gave goes in the SQL
        raise Refused(f"binlog file {file} is not on this server (SHOW BINARY LOGS lists "
                      "the ones it has)")
    try:
        rows = catalog.select(f"SHOW BINLOG EVENTS IN '{file}' FROM {int(pos)} LIMIT 1")
    except QueryRefused as exc:
        raise Refused(f"{file}:{pos} is not the start of an event in that file ({exc})") \
            from None
    if rows and str(rows[0][2]) not in _BOUNDARIES:
        raise Refused(f"{file}:{pos} is inside a transaction (its event there is "
                      f"{rows[0][2]}); take the position of a GTID event or a file's start")
    if not rows and (file, pos) != catalog.head():
        raise Refused(f"{file}:{pos} is past the last event of that file")
    try:
        return catalog.at(file, pos)
    except SourceError as exc:
        raise Refused(str(exc)) from None


def _spelled(catalog: Catalog, gtid_set: str) -> None:
    """:class:`Refused` unless ``gtid_set`` is spelled as the server spells its own."""
    try:
        parsed = (mariadb_gtid_list(gtid_set) if catalog.is_mariadb
                  else parse_gtid_set_strict(gtid_set))
        if not any(parsed.values()):
            raise ValueError("it names no transaction")
    except ValueError as exc:
        kind = ("a MariaDB GTID list (domain-server-sequence, comma separated)"
                if catalog.is_mariadb else "a MySQL GTID set (uuid:1-100,uuid2:1-5)")
        raise Refused(f"{gtid_set[:200]!r} is not {kind}: {exc}") from None


def _beyond_server(catalog: Catalog, gtid_set: str) -> str:
    """What of ``gtid_set`` the server's binlog has not (MariaDB: a domain it lacks, or a
    sequence number past its own; MySQL: left to purged_before, which says the same)."""
    if not catalog.is_mariadb:
        return ""
    have, wanted = mariadb_gtid_list(catalog.gtid_now()), mariadb_gtid_list(gtid_set)
    return ", ".join(f"{d}-{s}-{n}" for d, (s, n) in wanted.items()
                     if d not in have or n > have[d][1])


def _direction(old: Position, new: Position, mariadb: bool) -> str:
    """Back (what is read again), forward (what is skipped), or both, in words."""
    if old.gtid_set and new.gtid_set:
        if mariadb:
            was, now = mariadb_gtid_list(old.gtid_set), mariadb_gtid_list(new.gtid_set)
            again = [f"domain {d}: {now.get(d, (0, 0))[1] + 1}-{n}" for d, (_, n) in was.items()
                     if n > now.get(d, (0, 0))[1]]
            skipped = [f"domain {d}: {was.get(d, (0, 0))[1] + 1}-{n}" for d, (_, n) in now.items()
                       if n > was.get(d, (0, 0))[1]]
        else:
            again = [x] if (x := subtract(new.gtid_set, old.gtid_set)) else []
            skipped = [x] if (x := subtract(old.gtid_set, new.gtid_set)) else []
        parts = ([f"back: reads again {', '.join(again)}"] if again else []) + (
            [f"forward: skips {', '.join(skipped)}"] if skipped else [])
        return "; ".join(parts) or "the same position"
    if old.file and new.file and old.pos is not None and new.pos is not None:
        if (new.file, new.pos) < (old.file, old.pos):
            return f"back: reads again from {new.file}:{new.pos} to {old.file}:{old.pos}"
        if (new.file, new.pos) > (old.file, old.pos):
            return f"forward: skips {old.file}:{old.pos} to {new.file}:{new.pos}"
        return "the same position"
    return f"from {new.describe()} (was {old.describe() or 'unknown'})"


def take_set_position(start: Position, signal: Signal, catalog: Catalog
                      ) -> tuple[Position, list[str], list[str]]:
    """``start`` moved (or not: refused), what was taken and why not, for the notification."""
    if signal.refused is not None:
        return start, [], [signal.refused]
    try:
        moved, direction = new_position(start, signal, catalog)
    except Refused as exc:
        log.warning("signal %s (set-binlog-position, offset %d) refused: %s; capture goes on "
                    "from %s", signal.id, signal.offset, exc, start.describe())
        return start, [], [str(exc)]
    if "forward" in direction:
        log.warning("signal %s: capture goes on from %s (was %s), %s. The changes skipped are "
                    "not in the sink topics: cdc-ingest verify finds what they left behind",
                    signal.id, moved.describe(), start.describe(), direction)
    else:
        log.info("signal %s: capture goes on from %s (was %s), %s", signal.id,
                 moved.describe(), start.describe(), direction)
    return moved, [f"binlog position {moved.describe()} ({direction})"], []
