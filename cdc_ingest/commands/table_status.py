"""``cdc-ingest status --tables``: per source table what capture committed (inserts, updates,
deletes, DDLs, snapshot rows: the offsets topic's totals, cdc_ingest/model/table_stats.py),
and per sink topic the last pass of ``verify --continuous`` (verify/continuous.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdc_ingest.commands.status import utc_text
from cdc_ingest.config import PipelineDef
from cdc_ingest.errors import CdcIngestError
from cdc_ingest.model.table_stats import FIELDS
from cdc_ingest.verify.continuous import read_states

_VERIFY = ("rows_validated", "in_sync", "missing", "extra", "differing", "unconfirmed")


@dataclass
class TableStatus:
    totals: dict[str, dict[str, int]] = field(default_factory=dict)  # per source table
    verify: dict[str, dict[str, Any]] = field(default_factory=dict)  # per sink topic
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"tables": self.totals, "verify": self.verify, "error": self.error}


def table_status(defn: PipelineDef, kafka: dict[str, Any],
                 totals: dict[str, dict[str, int]]) -> TableStatus:
    """``totals``: each table's, as ``capture_status`` read them with the position."""
    status = TableStatus(totals=dict(sorted(totals.items())))
    try:
        status.verify = dict(sorted(read_states(kafka, defn.verify_topic).items()))
    except CdcIngestError as exc:
        status.error = str(exc)
    return status


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                             for i, (cell, w) in enumerate(zip(row, widths, strict=True)))
            for row in rows]


def render_tables(status: TableStatus) -> list[str]:
    lines = ["tables (what capture committed, since the pipeline's first start)"]
    if status.totals:
        rows = [("table", *(f.replace("_", " ") for f in FIELDS))]
        rows += [(name, *(str(counts.get(f, 0)) for f in FIELDS))
                 for name, counts in status.totals.items()]
        lines += _table(rows)
    else:
        lines.append("  none committed yet")
    lines.append("verify --continuous (last pass per sink topic)")
    if status.verify:
        rows = [("topic", *(k.replace("_", " ") for k in _VERIFY), "last pass", "took")]
        for topic, state in status.verify.items():
            verdict = "" if state.get("ok") else " DIFFERENT"
            rows.append((topic + verdict, *(str(state.get(k, "")) for k in _VERIFY),
                         utc_text(state.get("pass_ended_ms")) or "-",
                         f"{state.get('pass_seconds', 0):.1f} s"))
        lines += _table(rows)
    else:
        lines.append("  no pass yet (cdc-ingest verify --continuous)")
    if status.error:
        lines.append(f"tables error: {status.error}")
    return lines
