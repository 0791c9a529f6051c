"""``cdc-ingest verify``: the sink topics checked against MySQL, by a second implementation.

Each sink topic is read from the earliest offset (read_committed) and materialized to its
latest value per key; the MySQL tables routed to it are streamed and converted to the output
JSON form independently of capture's binlog decoder (:mod:`.convert`); keys and values are
compared exactly (:mod:`.values`, :mod:`.diff`). Entry point: :func:`.run.run_verify`.
"""
