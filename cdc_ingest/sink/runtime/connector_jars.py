"""The Kafka connector for the pyspark that runs the sink: its jars from Maven Central (what
Spark does not ship itself), and where Spark's own jars are."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pyspark

from cdc_ingest import maven

log = logging.getLogger(__name__)

CONNECTOR = "spark-sql-kafka-0-10_2.13"


def spark_jars_dir() -> Path:
    """The jars of the Spark that pyspark runs: ``$SPARK_HOME/jars`` or pyspark's own."""
    home = os.environ.get("SPARK_HOME")
    return Path(home) / "jars" if home else Path(pyspark.__file__).parent / "jars"


def _ships(spark_jars: list[str], artifact: str) -> bool:
    """True when Spark has some version of ``artifact`` (its jars are ``<artifact>-<version>``)."""
    prefix = f"{artifact}-"
    return any(n.startswith(prefix) and n[len(prefix) : len(prefix) + 1].isdigit()
               for n in spark_jars)


def fetch_spark_kafka_jars() -> list[Path]:
    """The Kafka connector for this pyspark version and what it needs beyond Spark's own jars.

    Downloaded once with Maven into ``<cache>/spark-kafka-<version>/jars``; later calls (and
    other processes, thanks to a file lock) reuse them.
    """
    version = pyspark.__version__
    spark_jars = [p.name for p in spark_jars_dir().glob("*.jar")]

    def keep(artifact: str) -> bool:
        # the connector's Spark modules are `provided`, so Maven brings only what it adds;
        # of that, what Spark already ships is dropped
        if _ships(spark_jars, artifact):
            log.debug("not adding %s: Spark ships it", artifact)
            return False
        return True

    jars = maven.fetch_jars(
        f"spark-kafka-{version}",
        [f"org.apache.spark:{CONNECTOR}:{version}"],
        what=f"the Kafka connector for Spark {version}",
        keep=keep,
        fix=f"The connector {CONNECTOR}:{version} and its dependencies must be on your "
        "Maven repository; install a pyspark version whose connector is there.",
    )
    return sorted(jars.glob("*.jar"))
