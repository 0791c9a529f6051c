"""The sink: changelog topic -> sink topics (docs/architecture.md).

Four rooms: ``runtime`` (Spark, the JVM, shipping to executors), ``driver`` (the query and
what runs beside it), ``task`` (one changelog partition's range -> sink topics) and, at this
level, ``settings`` (what a task needs, built on the driver) and ``transaction`` (the owner of
the sink's Kafka transactions). The message formats live in ``cdc_ingest.formats``. Nothing is
imported here, so using the writer or a format alone does not load pyspark.
"""
