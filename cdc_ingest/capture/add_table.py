"""The ``add-table`` signal: tables a running pipeline takes in, with their existing rows or
from now on (``cdc-ingest add-table``, decision 0018).

Capture and the sink read their pipeline file once, at start. A running pipeline can take a
table in only if nothing but the selection changes: the user edits ``source.tables`` (or
``source.tables.exclude``) in the file, and the command writes the signal with the edited
file's SHA-256. Capture takes it only when

* the file it was started from now has that digest (the edited file is the one the command
  checked, and capture runs from it);
* that file differs from the one capture started with in ``source.tables`` and
  ``source.tables.exclude`` alone: routes, transforms and every sink option stay what the
  running sink applies to every table, the added ones too, so their rows go where the file
  says (a route of their own needs a restart of the pipeline);
* the edited selection takes tables in and none out, and the signal names every table it
  takes in that exists (a selection that matches more than the user named is refused, not
  widened silently).

Then the committed position records the new selection (capture runs with the committed one:
:meth:`CaptureOptions.selected`), and, with the rows, a snapshot of the tables as newly added
tables (chunks reconciled with the binlog from the position that takes the signal, the same
snapshot ``scan.newly-added-table.enabled`` takes at a start). From now on only: their
changes from that position on, nothing before.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from pydantic import BaseModel

from cdc_ingest.capture.notifications import signal_note
from cdc_ingest.capture.options import CaptureOptions, selection_matcher
from cdc_ingest.capture.resume import snapshot_of_added
from cdc_ingest.capture.signal_format import Signal
from cdc_ingest.config import PipelineDef
from cdc_ingest.config.loader import read_pipeline
from cdc_ingest.errors import ConfigError
from cdc_ingest.model import Position
from cdc_ingest.mysql import Catalog

log = logging.getLogger(__name__)

# what add-table may change in the pipeline file; anything else needs a restart
SELECTION_PATHS = ("source.tables", "source.tables.exclude")


def file_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def differences(running: PipelineDef, edited: PipelineDef) -> list[str]:
    """The YAML paths at which ``edited`` says something else than ``running``, besides the
    selection (values are never shown: some are secrets)."""
    found: list[str] = []
    _diff(running, edited, "", found)
    return [p for p in found if p not in SELECTION_PATHS and p != "warnings"]


def _diff(a: Any, b: Any, path: str, found: list[str]) -> None:
    """Options compare as their models say (a selector by its text, a secret by its value)."""
    if isinstance(a, BaseModel) and type(a) is type(b):
        for name, info in type(a).model_fields.items():
            key = info.alias or name
            _diff(getattr(a, name), getattr(b, name), f"{path}.{key}" if path else key, found)
    elif isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            _diff(a.get(key), b.get(key), f"{path}.{key}" if path else str(key), found)
    elif isinstance(a, list | tuple) and isinstance(b, list | tuple) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, f"{path}[{i}]", found)
    elif a != b:
        found.append(path)


def not_captured_yet(definition: PipelineDef, committed: list[str | None] | None,
                     tables: Iterable[tuple[str, str]]) -> list[str]:
    """Of ``tables``, those ``definition``'s file selects and the ``committed`` selection
    (capture's) does not: to be taken in by add-table or a start (``cdc-ingest status``)."""
    if committed is None:
        return []
    old = selection_matcher(committed)
    return sorted(f"{db}.{t}" for db, t in tables
                  if definition.source.captures(db, t) and not old(db, t))


def take_add_table(options: CaptureOptions, start: Position, signal: Signal,
                   catalog: Catalog) -> tuple[Position, bytes]:
    """``start`` with ``signal``'s tables taken in (its selection the edited file's, and a
    snapshot of them planned if it asks for their rows), and its notification; or ``start``
    past the signal and a refusal saying why."""
    why = _refusal(options, start, signal, catalog)
    end = replace(start, signals=signal.offset + 1)
    if isinstance(why, str):
        log.warning("signal %s (add-table, offset %d) refused: %s", signal.id, signal.offset,
                    why)
        return end, signal_note(options.pipeline, signal, [], [why])
    selection, added = why
    names = ", ".join(f"{db}.{table}" for db, table in added)
    if signal.with_rows:
        taken = replace(end, tables=selection,
                        snapshot=snapshot_of_added(options, start, added, catalog,
                                                   signal.id))
        log.info("add-table %s: %s taken in; snapshot of their rows, then the binlog from %s",
                 signal.id, names, start.describe())
    else:
        taken = replace(end, tables=selection)
        log.info("add-table %s: %s taken in from %s on, without their earlier rows",
                 signal.id, names, start.describe())
    took = [f"{db}.{table}" + ("" if signal.with_rows else " (from now on)")
            for db, table in added]
    return taken, signal_note(options.pipeline, signal, took, [])


def _refusal(options: CaptureOptions, start: Position, signal: Signal, catalog: Catalog
             ) -> str | tuple[list[str | None], list[tuple[str, str]]]:
    """Why capture cannot take ``signal`` in; else the edited selection and the tables it
    takes in."""
    path, running = options.config_path, options.definition
    if path is None or running is None:
        return "capture was not started from a pipeline file (cdc-ingest capture --config)"
    try:
        data, edited = read_pipeline(path)
    except ConfigError as exc:
        return f"capture cannot read its pipeline file as a valid one: {exc}"
    if file_digest(data) != signal.config_sha256:
        return (f"the pipeline file capture runs from ({path}) is not the file the command "
                "checked (it changed since, or capture was started from another file). Fix: "
                "run cdc-ingest add-table again with capture's pipeline file, unchanged "
                "until capture answers")
    changed = differences(running, edited)
    if changed:
        return (f"the edited pipeline file also changes {', '.join(changed)}, which the "
                "running pipeline read at its start; add-table changes only source.tables "
                "and source.tables.exclude. Fix: put them back and send add-table again, or "
                "stop the pipeline and start it with the edited file "
                "(scan.newly-added-table.enabled: true snapshots the added tables)")
    new = [str(edited.source.tables),
           None if edited.source.tables_exclude is None else str(edited.source.tables_exclude)]
    old = selection_matcher(start.tables or options.selection)
    existing = set(catalog.tables())
    dropped = sorted(f"{db}.{t}" for db, t in existing if old(db, t)
                     and not edited.source.captures(db, t))
    if dropped:
        return (f"the edited source.tables no longer selects {', '.join(dropped)}; add-table "
                "only takes tables in. Fix: select them again, or stop the pipeline to take "
                "them out")
    added = sorted(t for t in existing if edited.source.captures(*t) and not old(*t))
    named = set(signal.tables)
    problems = [f"{db}.{t} is not a table in MySQL" for db, t in signal.tables
                if (db, t) not in existing]
    problems += [f"{db}.{t} is captured already (cdc-ingest snapshot reads its rows again)"
                 for db, t in signal.tables if (db, t) in existing and old(db, t)]
    problems += [f"the edited source.tables does not select {db}.{t}" for db, t in
                 signal.tables if (db, t) in existing and not old(db, t)
                 and not edited.source.captures(db, t)]
    unnamed = [f"{db}.{t}" for db, t in added if (db, t) not in named]
    if unnamed:
        problems.append(f"the edited source.tables also takes in {', '.join(unnamed)}: name "
                        "every table it takes in (or narrow it)")
    if problems:
        return "; ".join(problems)
    return new, added
