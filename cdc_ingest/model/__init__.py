"""Plain data shared by every stage: table ids, changelog records, positions. No I/O here."""

from cdc_ingest.model.position import Position
from cdc_ingest.model.record import CHANGELOG_VERSION, ChangeRecord, Op
from cdc_ingest.model.table_id import TableId

__all__ = ["CHANGELOG_VERSION", "ChangeRecord", "Op", "Position", "TableId"]
