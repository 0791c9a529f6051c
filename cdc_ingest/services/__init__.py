"""Local MariaDB, MySQL 9.7, MariaDB 11.8, Kafka and a Schema Registry for dev, demo and tests:
plain processes.

``python -m cdc_ingest.services start`` runs MariaDB and Kafka (``start mysql`` the MySQL,
``start mariadb118`` the MariaDB 11.8, each chrooted in a Debian sid root of its own,
``start registry`` a Confluent-compatible Schema Registry: Apicurio Registry, in-memory);
tests use them through ``tests/conftest.py``.
"""

from cdc_ingest.download_cache import cache_dir
from cdc_ingest.services._process import ServiceError
from cdc_ingest.services.kafka import KafkaBroker, fetch_jars
from cdc_ingest.services.mariadb import MariaDB
from cdc_ingest.services.mariadb118 import MariaDB118
from cdc_ingest.services.mysql import MySQL
from cdc_ingest.services.registry import SchemaRegistry

__all__ = [
    "KafkaBroker", "MariaDB", "MariaDB118", "MySQL", "SchemaRegistry", "ServiceError", "cache_dir",
    "fetch_jars",
]
