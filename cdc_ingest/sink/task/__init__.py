"""A sink task: one changelog partition's offset range -> sink topics. Reads its range
(``range_read``, ``columns``), runs the per-record loop (``record_loop``) through a format,
produces (``produce``, ``topics``) through the sink's Kafka transaction
(``cdc_ingest.sink.transaction``), and the records that act on a whole table (``table_resets``,
``event_resets``, ``rekey``). Runs in a Spark task, or in the driver for the head start."""
