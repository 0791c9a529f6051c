"""verify's fast path: a topic one table writes as plain JSON upserts, compared as bytes.

Three steps, the first two at once on two processes:

1. a process of its own spills the topic's messages (canonical key, value) to hash buckets
   on disk (verify/loader.py, verify/buckets.py);
2. meanwhile the table is read in one read view, each row written as its expected key and
   value bytes (verify/rowbytes.py: exactly ``dumps`` of what the ordinary comparison expects)
   into buckets of the same count;
3. the two are joined bucket by bucket (:func:`~cdc_ingest.verify.buckets.join`): a key whose
   last topic value is the same bytes is equal (equal bytes parse to the expected row, which
   ``same`` accepts under every rule). Every other key of the table (a value spelled
   otherwise, a missing key, a duplicate key) is read again by key in the same read view and
   goes through the ordinary comparison (verify/diff.py) with its topic value, with all its
   rules (added and dropped columns, numbers, floats, ...); the topic's keys not shown equal
   are put in the ordinary comparison's store, and what it still holds then is the extra keys.

So a row is never called equal by the fast path that the ordinary comparison would call
different, and a row it cannot show equal is judged as before. Only where the keys read back
by value exactly (integer and text key columns, not NULL); other tables take the ordinary path.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Callable
from typing import Any

from cdc_ingest.errors import SourceError
from cdc_ingest.kafka import TopicAdmin
from cdc_ingest.mysql.raw_rows import RawRows
from cdc_ingest.verify.buckets import Spill, bucket_count, join
from cdc_ingest.verify.convert import INTEGERS
from cdc_ingest.verify.diff import Item, Suspect, TopicCheck, TopicResult
from cdc_ingest.verify.expect import Expectation
from cdc_ingest.verify.loader import Loading
from cdc_ingest.verify.mysql import MySqlSide, TableShape
from cdc_ingest.verify.rowbytes import RowBytes, RowStream, compiled
from cdc_ingest.verify.store import BATCH, DiskValues
from cdc_ingest.verify.values import parse

log = logging.getLogger(__name__)
ROWS_PER_BATCH = 5_000
_TEXT_KEYS = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext"})


def fast_keys(shape: TableShape, tinyint1_as_boolean: bool) -> bool:
    """The table's key columns read back by their JSON values: integers (not as booleans)
    or text, never NULL."""
    columns = {c.name: c for c in shape.columns}
    for name in shape.key:
        column = columns.get(name)
        if column is None or column.nullable:
            return False
        if column.data_type in INTEGERS and not (tinyint1_as_boolean and column.is_tinyint1):
            continue
        if column.data_type not in _TEXT_KEYS:
            return False
    return bool(shape.key)


def fast_expectation(kafka: dict[str, Any], topic: str, shapes: list[TableShape],
                     plain: bool, rule: Any, pinned: list[str] | None,
                     columns_ever: frozenset[str], tinyint1_as_boolean: bool
                     ) -> Expectation | None:
    """The expectation of a topic's one table when the fast path can check it: ``plain``
    JSON upserts (no change events, no avro), no transform, no pinned columns, keys
    :func:`fast_keys`, a topic that exists. None: the ordinary path."""
    if len(shapes) != 1 or not plain or rule is not None or pinned is not None:
        return None
    shape = shapes[0]
    if not fast_keys(shape, tinyint1_as_boolean) or TopicAdmin(kafka).partitions(topic) is None:
        return None
    try:
        return Expectation(shape, topic, None, tinyint1_as_boolean, None, None, columns_ever)
    except SourceError:
        return None  # the ordinary path says why


def _read_table(mysql: MySqlSide, shape: TableShape, expected: Spill, boolean: bool,
                except_key: bool, pace: Callable[[int], None] | None) -> None:
    """Every row of the table as its expected (key, value) bytes into ``expected``: its
    packets framed in C from the socket's bytes where the compiled writer is built, else
    read by PyMySQL's packet reader."""

    def add(keys: list[bytes], values: list[bytes]) -> None:
        expected.add(keys, values)
        if pace is not None:
            pace(len(keys))

    if compiled() and mysql.streams():
        made: list[RowStream] = []

        def parser_for(decoders: list[Any], seq: int) -> RowStream:
            made.append(RowStream(seq, RowBytes(shape, RawRows.of(decoders), boolean,
                                                except_key), add))
            return made[-1]

        mysql.stream(shape, parser_for)
        failure = made[-1].failure if made else None
        if failure is not None:
            raise failure
        return
    with mysql.raw(shape) as raw:
        build = RowBytes(shape, raw, boolean, except_key)
        for packets in raw.packets(ROWS_PER_BATCH):
            add(*build.batch(packets))


def _join(loading: Loading, table: Spill, topic: Spill, latest: DiskValues
          ) -> tuple[Spill, int]:
    """:func:`~cdc_ingest.verify.buckets.join` of the two sides, the odd buckets in the topic's
    process meanwhile: the table keys not shown equal (a spill of one bucket) and how many
    keys were equal; the topic pairs not shown equal are put in ``latest``."""
    loading.join(table, list(range(1, table.count, 2)))
    unmatched = Spill(table.folder, "unmatched", 1)

    def odd(keys: list[bytes]) -> None:
        unmatched.add(keys, [b""] * len(keys))

    equal = join(table, topic, odd, latest.put, range(0, table.count, 2))
    theirs, spills = loading.joined()
    if spills is not None:
        for keys, _ in spills[0].read(0):
            odd(keys)
        for keys, values in spills[1].read(0):
            for key, value in zip(keys, values, strict=True):
                latest.put(key, value)
    unmatched.close()
    return unmatched, equal + theirs


def _again(mysql: MySqlSide, expect: Expectation, keys: list[bytes]) -> tuple[list[Item], int]:
    """The rows of ``keys`` read again (same read view) as items; how many keys were found."""
    shape = expect.shape
    wanted = set(keys)
    values = [tuple(parse(key)[name] for name in shape.key) for key in keys]
    items: list[Item] = []
    for row in mysql.rows_by_key(shape, values):
        item = expect(row)
        if item is not None and item[5].pk in wanted:
            items.append(item)
    return items, len({item[5].pk for item in items})


def check_fast(
    mysql: MySqlSide, kafka: dict[str, Any], topic: str, expect: Expectation,
    new_check: Callable[[DiskValues], TopicCheck], tinyint1_as_boolean: bool,
    except_key: bool, pace: Callable[[int], None] | None = None,
    topic_rate: float | None = None,
) -> tuple[TopicResult, dict[bytes, Suspect] | None, dict[int, int]]:
    """Check ``topic`` against its one table; the result, the keys that differ (as
    :attr:`TopicCheck.suspects`) and the partition ends the topic was read to."""
    shape = expect.shape
    folder = tempfile.mkdtemp(prefix="cdc-ingest-verify-")
    count = bucket_count(mysql.estimated_rows(shape))
    loading = Loading(kafka, topic, Spill(folder, "topic", count), topic_rate)
    try:
        with mysql.snapshot():
            expected = Spill(folder, "table", count)
            _read_table(mysql, shape, expected, tinyint1_as_boolean, except_key, pace)
            expected.close()
            messages, ends = loading.spill()
            latest = DiskValues(folder)
            latest.ends.update(ends)
            try:
                unmatched, equal = _join(loading, expected, messages, latest)
            except BaseException:
                latest.close()
                raise
            check = new_check(latest)  # the topic's keys not shown equal
            try:
                check.result.topic_keys += equal
                check.result.rows[shape.name] += equal
                log.debug("%s: %d rows equal as bytes", shape.name, equal)
                for chunk, _ in unmatched.read(0):
                    for at in range(0, len(chunk), BATCH):
                        keys = chunk[at:at + BATCH]
                        items, found = _again(mysql, expect, keys)
                        check.rows(shape.name, shape.key, items)
                        if found != len(keys):
                            check.problem(f"{shape.name}: {len(keys) - found} row(s) read in "
                                          "the table's scan were not found again by key")
                result = check.finish()
            finally:
                check.close()
        return result, check.suspects, ends
    finally:
        loading.stop()
        shutil.rmtree(folder, ignore_errors=True)
