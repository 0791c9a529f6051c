"""The sink's runtime: the Spark session and its connector jars (``session``), the JVM's
class-data sharing archive (``class_data_sharing``, ``class_data_training``), what a cluster's
executors are shipped (``executor_files``) and the Python worker daemon (``worker_daemon``).
The only part of the sink besides ``driver.query`` that imports pyspark."""
