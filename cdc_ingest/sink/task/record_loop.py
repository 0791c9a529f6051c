"""One changelog partition's records as the sink's transactions: the per-record loop.

:func:`chunks` turns a task's Arrow batches into (messages, last offset) chunks bounded in rows and
time; the writer (sink/task/writer.py) commits each. A DDL record that empties a table is a chunk of
its own (its tombstones, sink/task/table_resets.py), and a ``rekey-cut`` record a
:class:`~cdc_ingest.sink.task.rekey.Cutover` (sink/task/rekey.py), each made only once the caller
has committed the chunk before it (a generator resumes after the caller's work).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from cdc_ingest.errors import SinkError
from cdc_ingest.formats.upsert_json import Serde, SinkMessage
from cdc_ingest.model.changelog import EMPTIES_TABLE, REKEY_CUT, SWAP, SWAP_END, DdlRecord
from cdc_ingest.model.transaction_metadata import TX_VALUE_START
from cdc_ingest.sink.settings import SinkSettings
from cdc_ingest.sink.task.columns import Columns
from cdc_ingest.sink.task.metadata_parts import TxTally, with_tx_headers
from cdc_ingest.sink.task.rekey import Cutover

log = logging.getLogger(__name__)

FIRST_GROWTH = 5  # each transaction FIRST_GROWTH times the last, from first_tx_rows on


@dataclass
class Counters:
    """What a writer did with one changelog partition's range: a task's result, handed from
    a Spark task to the driver as JSON (:meth:`to_json`, :meth:`from_json`)."""

    partition: int = -1  # -1: the task had no record
    rows_in: int = 0
    rows_out: int = 0
    bytes_out: int = 0
    skipped: int = 0
    last_offset: int = -1  # the last changelog offset committed; -1: none
    commit_ms: float = 0.0
    setup_ms: float = 0.0  # transaction registered and committed offset read (exactly-once)
    max_event_ts_ms: int = 0
    per_table: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(self.__dict__)

    @classmethod
    def from_json(cls, text: str) -> Counters:
        return cls(**json.loads(text))


# on_batch(batch_id, results): told each Spark batch's counters, one per task, once the batch
# is written (sink/driver/query.py)
BatchCallback = Callable[[int, list[Counters]], None]


def summary(results: list[Counters], seconds: float) -> str:
    """Writers' counters (one per partition) as one log line's text: a batch's
    (sink/driver/query.py) or the head start's (sink/driver/head_start.py)."""
    def total(name: str) -> int:
        return sum(int(getattr(r, name)) for r in results)

    written = sorted((r.partition, r.last_offset) for r in results if r.partition >= 0)
    last = " ".join(f"p{p}@{o}" for p, o in written) or "none"
    return (f"{total('rows_in')} rows in, {total('rows_out')} out, {total('skipped')} "
            f"skipped, {total('bytes_out')} bytes in {seconds:.2f} s; last offsets {last}")


# reset(ddl record, ts_ms, offset) -> the tombstones of a table a DDL record emptied
# (sink/task/table_resets.py), or the cutover of a table re-keyed in place (sink/task/rekey.py)
Reset = Callable[[DdlRecord, int, int], list[SinkMessage] | Cutover]
Chunk = tuple[list[SinkMessage] | Cutover, int]


def chunks(
    settings: SinkSettings, serde: Serde, counters: Counters,
    batches: Iterator[tuple[int, Columns]], start: int, reset: Reset,
    tally: TxTally | None = None,
) -> Iterator[Chunk]:  # fmt: skip
    """Records at or after ``start`` as (messages, last offset) chunks bounded in rows and
    time. The per-record loop: everything it can is looked up once, before it. A DDL record
    that empties a table is a chunk of its own, the table's tombstones, made only once the
    caller has committed the chunk before it (a generator resumes after the caller's work).
    ``tally`` (transaction metadata on, sink/task/metadata_parts.py): row messages get their
    ``transaction.*`` headers, and the ``TX`` records passed are noted in it."""
    add = serde.add
    monotonic = time.monotonic
    most = settings.max_tx_rows
    if settings.buffer_max_rows:
        most = min(most, settings.buffer_max_rows)
    limit = min(most, settings.first_tx_rows or most)
    max_seconds = settings.max_tx_seconds
    partition = counters.partition
    messages: list[SinkMessage] = []
    began = monotonic()
    last = previous = -1
    pending = False  # records since the last chunk
    max_ts = counters.max_event_ts_ms
    for batch_partition, (offsets, keys, values) in batches:
        if not offsets:  # a live read caught up (sink/driver/head_start.py): commit what is pending
            if pending:
                counters.max_event_ts_ms = max_ts
                yield messages, last
                messages, began, pending = [], monotonic(), False
            continue
        if batch_partition != partition:
            raise SinkError(
                f"one sink task got changelog partitions {partition} and {batch_partition}: "
                "each partition's range must be one task (exactly-once hop 2, "
                "docs/architecture.md)"
            )
        if offsets[0] <= previous:
            raise SinkError(
                f"changelog partition {partition}: offset {offsets[0]} came after {previous}; "
                "a task must get its range in offset order"
            )
        previous = offsets[-1]
        counters.rows_in += len(offsets)
        for offset, key, value in zip(offsets, keys, values, strict=True):
            if offset < start:
                counters.skipped += 1  # an earlier attempt already committed it
                continue
            if key is None and value.startswith(TX_VALUE_START):  # a MySQL transaction's end
                if tally is not None:
                    tally.marker(value, offset)
                last, pending = offset, True
                continue
            first = len(messages)
            try:
                ts = add(messages, key, value)
            except ValueError as exc:
                raise SinkError(
                    f"{settings.changelog_topic} partition {partition} offset {offset} is not "
                    f"a changelog record this sink can read: {exc}"
                ) from exc
            if ts > max_ts:  # noqa: PLR1730 - cheaper than calling max() per record
                max_ts = ts
            if tally is not None and key is not None and len(messages) > first:
                with_tx_headers(messages, first, value, tally, offset)
            if key is None and serde.ddl is not None:  # DDL records alone have no key
                ddl, serde.ddl = serde.ddl, None
                log.info("changelog partition %d offset %d: DDL on %s.%s at binlog %s: %s",
                         partition, offset, ddl.db, ddl.table, ddl.pos, ddl.ddl[:300])
                if ddl.action in EMPTIES_TABLE or ddl.action in (REKEY_CUT, SWAP, SWAP_END):
                    counters.max_event_ts_ms = max_ts
                    if pending:
                        yield messages, last
                    out = reset(ddl, ts, offset)
                    yield out, offset
                    last = offset
                    if isinstance(out, Cutover):  # it read its rows itself: skip them here
                        last = out.last
                        start = last + 1
                    messages, began, pending = [], monotonic(), False
                    continue
            last, pending = offset, True
            if len(messages) >= limit or monotonic() - began >= max_seconds:
                counters.max_event_ts_ms = max_ts
                yield messages, last
                messages, began, pending = [], monotonic(), False
                limit = min(most, limit * FIRST_GROWTH)
    counters.max_event_ts_ms = max_ts
    if pending:
        yield messages, last
