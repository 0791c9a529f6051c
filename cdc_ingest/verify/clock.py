"""Where the pipeline is, for judging a difference against binlog positions (verify/settle.py).

Three positions: MySQL's binlog head (``file:pos``, :meth:`PipelineClock.head`), the position
capture has committed (its offsets topic: every change before it is in the changelog), and
the sink group's committed offsets (every changelog record below them is in the sink topics).
:meth:`PipelineClock.wait_past` waits until both stages have passed a head read earlier: then
every change MySQL had made by that moment is in the sink topics. Read here by verify itself
(kafka/ and model/ only, not capture's code: verify stays a second implementation).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from cdc_ingest.kafka import read_topic
from cdc_ingest.kafka.consumer import stable_ends
from cdc_ingest.kafka.offsets import GroupOffsets
from cdc_ingest.model import Position
from cdc_ingest.mysql import Catalog, ConnectionSettings

log = logging.getLogger(__name__)

SOURCE_KEY = b'{"source":"mysql"}'  # the offsets topic's key of capture's position
POLL_S = 0.5
TAIL = 64  # records read back from a partition's end to find its last record
# capture's committed position unmoved this long while behind: it is not running. A running
# capture with changes to write commits within a second; one that only passes changes of
# tables it does not capture commits every heartbeat.interval, and is then not waited for.
STALL_S = 10.0

Head = tuple[str, int]  # binlog (file, pos)


class PipelineClock:
    def __init__(self, mysql: ConnectionSettings, kafka: dict[str, Any], offsets_topic: str,
                 changelog_topic: str, sink_group: str) -> None:
        self._catalog = Catalog(mysql, retries=1)
        self._kafka = kafka
        self._offsets, self.changelog, self._group_id = offsets_topic, changelog_topic, sink_group

    def close(self) -> None:
        self._catalog.close()

    def head(self) -> Head:
        """MySQL's binlog head now."""
        return self._catalog.head()

    def capture_at(self) -> Head | None:
        """The ``file:pos`` capture has committed (every change before it is written)."""
        last = None
        for msg in read_topic(self._kafka, self._offsets):
            if msg.key == SOURCE_KEY and msg.value is not None:
                last = msg.value
        if last is None:
            return None
        position = Position.from_json(last)
        if position.file is None or position.pos is None:
            return None
        return position.file, position.pos

    def changelog_ends(self) -> dict[int, int]:
        """Each changelog partition's last stable offset now."""
        return stable_ends(self._kafka, self.changelog)

    def last_records(self, ends: dict[int, int]) -> dict[int, int]:
        """Per partition, the offset after its last record below ``ends`` (transaction
        markers take offsets too, and the sink commits after its last record)."""
        found: dict[int, int] = {}
        window = TAIL
        while True:
            since = {p: max(0, end - window) for p, end in ends.items() if p not in found}
            for msg in read_topic(self._kafka, self.changelog, since=since):
                if msg.offset < ends[msg.partition]:
                    found[msg.partition] = max(found.get(msg.partition, 0), msg.offset + 1)
            missing = [p for p, end in ends.items() if p not in found and end > window]
            if not missing:
                return found
            window *= 8

    def wait_past(self, head: Head, timeout_s: float, stall_s: float = STALL_S) -> bool:
        """Wait until capture's committed position is at or past ``head`` and the sink has
        committed every changelog record written by then; False when ``timeout_s`` passed
        first, or capture's position stood still for ``stall_s`` (the pipeline is stopped or
        far behind)."""
        deadline = time.monotonic() + timeout_s
        seen, since = None, time.monotonic()
        while True:
            at = self.capture_at()
            if at is not None and at >= head:
                break
            now = time.monotonic()
            if at != seen:
                seen, since = at, now
            if now > deadline or now - since > stall_s:
                log.info("capture is at %s, not past binlog %s:%d", at, *head)
                return False
            time.sleep(POLL_S)
        wanted = self.last_records(self.changelog_ends())
        group = GroupOffsets(self._kafka, self._group_id)
        try:
            while True:
                done = group.committed(self.changelog, list(wanted))
                if all(done.get(p, 0) >= end for p, end in wanted.items()):
                    return True
                if time.monotonic() > deadline:
                    log.info("the sink has committed %s, not yet %s", done, wanted)
                    return False
                time.sleep(POLL_S)
        finally:
            group.close()
