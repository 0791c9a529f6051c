"""The MySQL side every part shares: connection settings, connecting, the catalog, row
streams, and the differences between server flavours (MariaDB, MySQL). No binlog here:
reading the binlog is capture's (``cdc_ingest.capture.binlog``)."""

from cdc_ingest.mysql.catalog import Catalog, KeyColumns, TableFacts, unknown_type_error
from cdc_ingest.mysql.columns import COLUMNS_QUERY, Column, as_text
from cdc_ingest.mysql.connection import (
    ConnectionSettings,
    connect,
    connection_settings,
    query_rows,
    stream_rows,
    try_query,
    went_away,
)
from cdc_ingest.mysql.flavor import Flavor

__all__ = [
    "COLUMNS_QUERY",
    "Catalog",
    "Column",
    "ConnectionSettings",
    "Flavor",
    "KeyColumns",
    "TableFacts",
    "as_text",
    "connect",
    "connection_settings",
    "query_rows",
    "stream_rows",
    "try_query",
    "unknown_type_error",
    "went_away",
]
