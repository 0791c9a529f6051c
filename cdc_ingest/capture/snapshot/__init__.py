"""The initial snapshot: lock-free primary-key chunks reconciled with the binlog (DBLog).

For each chunk: take a low watermark (the binlog head), read the chunk with a plain SELECT,
take a high watermark, and replay the binlog between the two onto the rows read, so the rows
emitted are exactly the chunk's state at the high watermark (:mod:`.reader`). Chunks are
committed in key order with the snapshot progress (:mod:`.phase`, :mod:`.state`). The binlog
phase that follows starts where the snapshot started and drops, for each key, the events at or
before its chunk's high watermark (:mod:`.filter`): every change is in the changelog once,
after the key's snapshot row. No FLUSH TABLES WITH READ LOCK, no table locks. Values are
converted by the snapshot's own rules (:mod:`.values`), not by verify's.
"""
