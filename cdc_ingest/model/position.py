"""Where capture resumes: committed atomically with the changelog records it covers.

A position names the MySQL transaction capture is in (or the next one) and how many of its
rows are already in the changelog, so a restart inside a large transaction skips exactly those.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson


@dataclass(frozen=True, slots=True)
class Position:
    """Resume point of the binlog reader.

    ``gtid_set``: transactions fully in the changelog (MariaDB ``0-1-122,1-2-7`` or a MySQL
    GTID set). ``file``/``pos``: binlog coordinates of the start of the transaction in
    progress (or of the next one). ``tx_gtid``: GTID of the transaction in progress, if any;
    ``rows_done``: rows of it already written. ``ts_ms``: binlog time of the last event seen.
    """

    gtid_set: str | None = None
    file: str | None = None
    pos: int | None = None
    tx_gtid: str | None = None
    rows_done: int = 0
    ts_ms: int = 0
    # Progress of the initial snapshot (see cdc_ingest.capture.snapshot.state.SnapshotState), kept
    # until the binlog phase has passed every chunk's high watermark; None afterwards.
    snapshot: dict[str, Any] | None = None
    # The table selection capture ran with (``[source.tables, source.tables.exclude]``), so a
    # later start can tell which tables were added since (scan.newly-added-table.enabled);
    # None in positions written before it was recorded.
    tables: list[str | None] | None = None
    # The offset of the first request in the pipeline's signal topic not yet taken
    # (cdc_ingest.capture.signals): taken requests are committed with the position they
    # changed, so each is carried out once.
    signals: int = 0

    # The two the binlog phase makes per event and per transaction: the constructor itself,
    # faster than dataclasses.replace (decision 0012; tests/unit/test_position.py holds them
    # equal to it).

    def after_rows(self, rows_done: int, ts_ms: int) -> Position:
        """The same transaction with ``rows_done`` of its rows written, at binlog time ``ts_ms``."""
        return Position(self.gtid_set, self.file, self.pos, self.tx_gtid, rows_done, ts_ms,
                        self.snapshot, self.tables, self.signals)

    def begun(self, tx_gtid: str | None, file: str | None, pos: int | None,
              ts_ms: int) -> Position:
        """Inside the transaction ``tx_gtid`` that starts at ``file:pos``, none of its rows
        written yet."""
        return Position(self.gtid_set, file, pos, tx_gtid, 0, ts_ms, self.snapshot,
                        self.tables, self.signals)

    def describe(self) -> str:
        """Short human form used in records (``pos``), logs and errors."""
        where = self.tx_gtid or self.gtid_set or ""
        if self.file:
            where = f"{where}@{self.file}:{self.pos}" if where else f"{self.file}:{self.pos}"
        return f"{where}#{self.rows_done}" if self.rows_done else where

    def to_json(self) -> bytes:
        return orjson.dumps(
            {
                "gtid_set": self.gtid_set,
                "file": self.file,
                "pos": self.pos,
                "tx_gtid": self.tx_gtid,
                "rows_done": self.rows_done,
                "ts_ms": self.ts_ms,
                "snapshot": self.snapshot,
                "tables": self.tables,
                "signals": self.signals,
            }
        )

    @classmethod
    def from_json(cls, data: bytes | str) -> Position:
        body: dict[str, Any] = orjson.loads(data)
        return cls(
            gtid_set=body.get("gtid_set"),
            file=body.get("file"),
            pos=body.get("pos"),
            tx_gtid=body.get("tx_gtid"),
            rows_done=int(body.get("rows_done") or 0),
            ts_ms=int(body.get("ts_ms") or 0),
            snapshot=body.get("snapshot"),
            tables=body.get("tables"),
            signals=int(body.get("signals") or 0),
        )
