"""How large a message may be, and the error that names an oversized one.

A changelog record holds a row up to twice (an update's before and after images) as JSON
(binary columns as base64, 4/3 of their bytes), so capture sizes its producer and the
changelog topic from the server's ``max_allowed_packet``, the largest row MySQL accepts:
:func:`message_limit`. The sink takes the changelog topic's limit for its producers and the
topics it creates (its values hold one image). A message still refused (a topic created
earlier with a smaller ``max.message.bytes``, the broker's ``socket.request.max.bytes``, a row
whose JSON escaping grows it more) is a :class:`MessageTooLarge` naming what it held.
"""

from __future__ import annotations

import re

from cdc_ingest.kafka.errors import KafkaClientError

FLOOR = 1 << 20
CEILING = 1_000_000_000  # librdkafka's largest message.max.bytes
# the changelog value's head and tail (cdc_ingest.model.changelog): where a record is from
_TABLE = re.compile(rb'"db":"((?:[^"\\]|\\.)*)","table":"((?:[^"\\]|\\.)*)"')
_POS = re.compile(rb'"pos":"((?:[^"\\]|\\.)*)"')


def message_limit(max_allowed_packet: int) -> int:
    """``max.message.bytes`` for a changelog whose largest row is ``max_allowed_packet``."""
    return max(FLOOR, min(CEILING, 3 * max_allowed_packet + FLOOR))


class MessageTooLarge(KafkaClientError):
    """Kafka refused a message for its size; nothing of its transaction is committed."""

    def __init__(self, topic: str, key: bytes | None, value: bytes | None, reason: str,
                 headers: list[tuple[str, bytes]] | None = None,
                 table: str | None = None) -> None:
        self.topic, self.key, self.value, self.reason = topic, key, value, reason
        size = len(key or b"") + len(value or b"")
        # a changelog record names its table; a sink message's headers do (when written)
        found = _TABLE.search((value or b"")[:400])
        named = {name: raw.decode(errors="replace") for name, raw in headers or ()
                 if name in ("schemaName", "tableName") and raw is not None}
        if table is None and found:
            table = f"{found.group(1).decode()}.{found.group(2).decode()}"
        elif table is None and len(named) == 2:
            table = f"{named['schemaName']}.{named['tableName']}"
        self.table = table
        tail = _POS.search((value or b"")[-300:])
        where = f" at binlog {tail.group(1).decode()}" if tail else ""
        shown = (key or b"")[:200].decode(errors="replace")
        super().__init__(
            f"a row of {table or 'an unknown table'}{where} (key {shown}) is a {size:,} byte "
            f"message for topic {topic}, which Kafka refused ({reason}); nothing after it is "
            "written until it fits. Fix: raise the topic's limit (kafka-configs.sh --alter "
            f"--entity-type topics --entity-name {topic} --add-config max.message.bytes=N) "
            "and, above 100 MiB, the broker's socket.request.max.bytes and message.max.bytes, "
            "then start again; or shrink the row in the database"
        )
