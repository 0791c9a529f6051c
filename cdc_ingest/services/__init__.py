"""Local MariaDB, MySQL 9.7 and Kafka for dev, demo and tests: plain processes, no Docker.

``python -m cdc_ingest.services start`` runs MariaDB and Kafka (``start mysql`` the MySQL,
chrooted in a Debian sid root); tests use them through ``tests/conftest.py``.
"""

from cdc_ingest.cache import cache_dir
from cdc_ingest.services._process import ServiceError
from cdc_ingest.services.kafka import KafkaBroker, fetch_jars
from cdc_ingest.services.mariadb import MariaDB
from cdc_ingest.services.mysql import MySQL

__all__ = ["KafkaBroker", "MariaDB", "MySQL", "ServiceError", "cache_dir", "fetch_jars"]
