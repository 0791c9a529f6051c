"""The sink: changelog topic -> sink topics (docs/architecture.md).

``job`` is the Spark Structured Streaming query and ``spark`` its session and connector jars,
the only modules that import pyspark; ``writer`` and ``serde`` run inside its tasks. Nothing is
imported here, so using the writer or serde alone does not load pyspark.
"""
