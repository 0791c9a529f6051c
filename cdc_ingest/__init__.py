"""cdc-ingest: MySQL/MariaDB binlog changes into Kafka as keyed upserts, exactly once."""

__version__ = "0.1.0"
