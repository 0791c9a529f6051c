"""The sink's driver: the Structured Streaming query (``query``) and what runs beside it on the
driver: the start overlapped with Spark's (``startup``), the head start (``head_start``), the
offset ranges of a micro-batch (``offset_log``), the transaction metadata's BEGIN/END writer
(``metadata_writer``) and what a failed query says (``failures``)."""
