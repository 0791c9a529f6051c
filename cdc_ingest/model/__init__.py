"""Plain data shared by the stages: the changelog record and the capture position. No I/O."""

from cdc_ingest.model.changelog import CHANGELOG_VERSION, Op
from cdc_ingest.model.position import Position

__all__ = ["CHANGELOG_VERSION", "Op", "Position"]
