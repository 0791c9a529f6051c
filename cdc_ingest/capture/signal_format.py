"""A record of the signal topic read as a request, in either format capture reads:

* Debezium's, as its Kafka signal channel reads it: the record keyed by the pipeline's name
  (Debezium's ``topic.prefix``), the value ``{"type": "execute-snapshot", "data":
  {"data-collections": ["db.table", ...], "type": "incremental"}}`` (``data`` may be that
  object's JSON text, as a signalling table holds it; an ``id`` beside ``type`` names the
  signal, else its offset does: ``kafka-<offset>``);
* cdc-ingest's own, as ``cdc-ingest snapshot``, ``set-position`` and ``verify --repair`` write
  it: keyed by the request's id, ``{"type": "execute-snapshot", "id": ..., "tables": [...]}``,
  ``{"type": "set-binlog-position", "id": ..., "gtid_set": ...}`` (or ``"binlog_filename"``
  and ``"binlog_position"``: Debezium's ``data`` fields, here beside ``type``) or
  ``{"type": "repair", "id": ..., "keys": {"db.table": [key JSON, ...]}}`` or, as
  ``cdc-ingest add-table`` writes it, ``{"type": "add-table", "id": ..., "tables": [...],
  "snapshot": true|false, "config_sha256": <the edited pipeline file's SHA-256>}``
  (Debezium adds a table by a configuration change, so this one has no Debezium form).

A record that is neither, or asks what capture does not do, is a refused :class:`Signal`
with the reason: capture notifies it and goes on (capture/signals.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import orjson

EXECUTE_SNAPSHOT = "execute-snapshot"
STOP_SNAPSHOT = "stop-snapshot"
PAUSE_SNAPSHOT, RESUME_SNAPSHOT = "pause-snapshot", "resume-snapshot"  # snapshot_control.py
SET_POSITION = "set-binlog-position"  # capture/set_position.py
ADD_TABLE = "add-table"  # capture/add_table.py
REPAIR = "repair"  # verify --repair: keys to read again (capture/snapshot/repair.py)
SNAPSHOT_KINDS = ("incremental", "blocking")  # Debezium's data.type; both are one snapshot here


@dataclass(frozen=True)
class Signal:
    id: str
    type: str
    offset: int
    tables: tuple[tuple[str, str], ...] = ()
    # a repair: per table, the keys (JSON texts) to read again; None: whole tables
    keys: dict[tuple[str, str], list[str]] | None = None
    refused: str | None = None  # why capture does not take it; None: it may
    # a filtered snapshot: per table, the WHERE filter of the rows to read again
    where: dict[tuple[str, str], str] | None = None
    # set-binlog-position: a GTID set, or a binlog file and position
    gtid_set: str | None = None
    binlog: tuple[str, int] | None = None
    # add-table: with the tables' existing rows (else from now on), and the SHA-256 of the
    # edited pipeline file the command checked
    with_rows: bool = True
    config_sha256: str | None = None


def parse_signal(key: bytes | None, value: bytes, offset: int, pipeline: str) -> Signal:
    """The request the record at ``offset`` is, or a refused one saying why."""
    try:
        body = orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        return Signal(f"kafka-{offset}", "?", offset, refused=f"the value is not JSON ({exc})")
    if not isinstance(body, dict):
        return Signal(f"kafka-{offset}", "?", offset, refused="the value is not a JSON object")
    kind = str(body.get("type"))
    if "data" in body:
        return _debezium(key, body, kind, offset, pipeline)
    signal_id = str(body.get("id") or f"kafka-{offset}")
    try:
        if kind == REPAIR:
            keys = {_table(t): [str(k) for k in texts] for t, texts in body["keys"].items()}
            return Signal(signal_id, kind, offset, tuple(keys), keys)
        if kind == EXECUTE_SNAPSHOT:
            tables = tuple(_table(t) for t in body["tables"])
            where = {_table(t): _filter(f) for t, f in (body.get("where") or {}).items()}
            if not set(where) <= set(tables):
                raise ValueError("a where names a table the request does not")
            return Signal(signal_id, kind, offset, tables, where=where or None)
        if kind == SET_POSITION:
            return _set_position(Signal(signal_id, kind, offset), body)
        if kind in (PAUSE_SNAPSHOT, RESUME_SNAPSHOT):
            return Signal(signal_id, kind, offset)
        if kind == ADD_TABLE:
            tables = tuple(_table(t) for t in body["tables"])
            digest, rows = body["config_sha256"], body.get("snapshot", True)
            if not tables or not isinstance(digest, str) or not isinstance(rows, bool):
                raise ValueError("it needs tables, config_sha256 and snapshot: true or false")
            return Signal(signal_id, kind, offset, tables, with_rows=rows,
                          config_sha256=digest)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        return Signal(signal_id, kind, offset, refused=f"malformed {kind} request ({exc!r})")
    return Signal(signal_id, kind, offset, refused=_unknown(kind))


def _debezium(key: bytes | None, body: dict[str, Any], kind: str, offset: int,
              pipeline: str) -> Signal:
    signal_id = str(body.get("id") or f"kafka-{offset}")

    def refused(why: str) -> Signal:
        return Signal(signal_id, kind, offset, refused=why)

    if key is None or key.decode(errors="replace") != pipeline:
        shown = "no key" if key is None else f"the key {key.decode(errors='replace')!r}"
        return refused(f"{shown}: a signal in Debezium's format is keyed by the pipeline's "
                       f"name; send it keyed {pipeline!r}")
    if kind not in (EXECUTE_SNAPSHOT, STOP_SNAPSHOT, SET_POSITION, PAUSE_SNAPSHOT,
                    RESUME_SNAPSHOT):
        return refused(_unknown(kind))
    if kind in (PAUSE_SNAPSHOT, RESUME_SNAPSHOT):  # Debezium's carry no data
        return Signal(signal_id, kind, offset)
    data = body["data"]
    if kind == SET_POSITION:
        try:
            if isinstance(data, str | bytes):
                data = orjson.loads(data)
            return _set_position(Signal(signal_id, kind, offset), data)
        except (orjson.JSONDecodeError, TypeError, ValueError, AttributeError) as exc:
            return refused(f"malformed set-binlog-position data ({exc})")
    if kind == STOP_SNAPSHOT:  # data-collections optional: none stops every table
        try:
            if isinstance(data, str | bytes):
                data = orjson.loads(data) if data else {}
            names = (data or {}).get("data-collections") or []
            return Signal(signal_id, kind, offset, tuple(_table(t) for t in names))
        except (orjson.JSONDecodeError, TypeError, ValueError, AttributeError) as exc:
            return refused(f"malformed stop-snapshot data ({exc!r})")
    try:
        if isinstance(data, str | bytes):
            data = orjson.loads(data)
        tables = data["data-collections"]
        if not isinstance(tables, list) or not tables:
            return refused("data.data-collections must list the tables (db.table)")
        parsed = tuple(_table(t) for t in tables)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        return refused(f"malformed execute-snapshot data ({exc!r}); it needs "
                       '{"data-collections": ["db.table", ...]}')
    snapshot_kind = str(data.get("type") or "incremental").lower()
    if snapshot_kind not in SNAPSHOT_KINDS:
        return refused(f"data.type {data.get('type')!r}: incremental or blocking")
    try:
        where = {_table(c["data-collection"]): _filter(c["filter"])
                 for c in data.get("additional-conditions") or []}
    except (KeyError, TypeError, ValueError) as exc:
        return refused(f"malformed additional-conditions ({exc!r}); each is "
                       '{"data-collection": "db.table", "filter": "<SQL condition>"}')
    if not set(where) <= set(parsed):
        return refused("additional-conditions name a table that data-collections does not")
    return Signal(signal_id, kind, offset, parsed, where=where or None)


def _set_position(signal: Signal, data: dict[str, Any]) -> Signal:
    """Debezium's ``{"gtid_set": ...}`` or ``{"binlog_filename": ..., "binlog_position": N}``."""
    if not isinstance(data, dict):
        raise TypeError("the data is not a JSON object")
    gtid_set, file, pos = (data.get(k) for k in ("gtid_set", "binlog_filename",
                                                  "binlog_position"))
    if gtid_set is not None and (file is not None or pos is not None):
        raise ValueError("it names a GTID set and a binlog file: name one of them")
    if gtid_set is not None:
        if not isinstance(gtid_set, str) or not gtid_set.strip():
            raise ValueError(f"gtid_set is a GTID set, not {gtid_set!r}")
        return replace(signal, gtid_set=gtid_set.replace("\n", "").strip())
    if not isinstance(file, str) or not file.strip() or "/" in file:
        raise ValueError("it needs gtid_set, or binlog_filename (a binlog file's name, as SHOW "
                         "BINARY LOGS lists it) with binlog_position")
    if isinstance(pos, bool) or not isinstance(pos, int | str) or not str(pos).isdigit() \
            or int(pos) < 4:
        raise ValueError(f"binlog_position is a position in the file (4 or more), not {pos!r}")
    return replace(signal, binlog=(file.strip(), int(pos)))


def _table(name: Any) -> tuple[str, str]:
    if not isinstance(name, str):
        raise TypeError(f"a table is named db.table, not {name!r}")
    db, dot, table = name.partition(".")
    if not dot or not db or not table:
        raise ValueError(f"{name!r} is not db.table")
    return db, table


def _filter(text: object) -> str:
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"a filter is an SQL condition, not {text!r}")
    return text


def _unknown(kind: str) -> str:
    return (f"signal type {kind!r} is not one capture takes (it takes execute-snapshot, "
            "stop-snapshot, pause-snapshot, resume-snapshot, set-binlog-position, and "
            "cdc-ingest's own repair and add-table)")
