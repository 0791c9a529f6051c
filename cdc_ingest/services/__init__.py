"""Local MariaDB and Kafka for dev, demo and tests: plain processes, no Docker.

``python -m cdc_ingest.services start`` runs both; tests use them through ``tests/conftest.py``.
"""

from cdc_ingest.cache import cache_dir
from cdc_ingest.services._process import ServiceError
from cdc_ingest.services.kafka import KafkaBroker, fetch_jars
from cdc_ingest.services.mariadb import MariaDB

__all__ = ["KafkaBroker", "MariaDB", "ServiceError", "cache_dir", "fetch_jars"]
