"""Table selectors and route rules, compiled once and cached per table."""

from cdc_ingest.routing.routes import RouteLike, RouteMode, Router, RouteRule
from cdc_ingest.routing.selectors import TableSelector

__all__ = ["RouteLike", "RouteMode", "RouteRule", "Router", "TableSelector"]
