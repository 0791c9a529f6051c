"""Flink CDC's change events (``sink.type: kafka``, Debezium or Canal JSON): the format both
the sink, which writes them (sink/events.py), and verify, which reads them back, know.
No I/O; imports no stage."""
