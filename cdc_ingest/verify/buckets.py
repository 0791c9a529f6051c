"""Key/value pairs spilled to hash buckets on disk, and two such spills joined bucket by bucket.

verify's fast path (verify/fast.py) writes the table's expected pairs (key JSON, value JSON)
and the topic's messages (canonical key, value or None for a tombstone) into two
:class:`Spill` s with the same bucket count: a pair goes to bucket ``crc32(key) % count``, so a
key's pairs on both sides are in the same bucket, in the order they were added. Only what is
pending for a bucket (at most :data:`FLUSH_BYTES` of it) is held in memory; the rest is in the
bucket's file, appended in framed chunks.

:func:`join` then takes one bucket of both sides at a time (a bucket of more than
:data:`MAX_BUCKET_BYTES` or :data:`MAX_BUCKET_RECORDS`, say because the table's row estimate
was far off, is split again on disk by another hash first, so memory stays bounded whatever
the table's size). The records and the join are compiled (``_buckets.pyx``) where it was
built; :func:`spread`, :func:`records` and :func:`join_bucket` are their Python twins. In a
bucket the topic is folded as compaction would keep it (the last message of a key wins, a
tombstone removes it), and a key whose one table row's value is *the same bytes* as the
topic's is equal: nothing is hashed, the bytes themselves are compared. Every other key is
left for the ordinary comparison: each table key not shown equal (a value spelled otherwise,
missing from the topic, or a key two rows share) is handed to ``unmatched``, and each live
topic pair not shown equal is put into ``leftover`` (the store the ordinary comparison takes
values from; what it still holds at the end is the extra keys).
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence

try:
    from cdc_ingest.verify import _buckets  # type: ignore[attr-defined]
except ImportError:  # built without a C compiler or Cython
    _buckets = None

FLUSH_BYTES = 1 << 17  # a bucket's pending bytes written out past this
MAX_BUCKET_BYTES = 64 << 20  # a bucket (both sides' files) joined in memory at most this big
MAX_BUCKET_RECORDS = 600_000  # and of at most this many records (the join's table of keys)
SPLIT = 8  # the sub-buckets of a bucket too big
ROWS_PER_BUCKET = 100_000
_HEAD = struct.Struct("<Q")  # a chunk's size: its records follow
_RECORD = struct.Struct("<Ii")  # key size, value size (-1: None)

Value = bytes | None


def bucket_count(estimated_rows: int) -> int:
    """Buckets for a table of about ``estimated_rows``: a power of two, at least 1."""
    count = 1
    while count * ROWS_PER_BUCKET < estimated_rows and count < 4096:
        count *= 2
    return count


class Spill:
    """Pairs appended to ``count`` bucket files ``<folder>/<name>.<i>``."""

    def __init__(self, folder: str, name: str, count: int, seed: int = 0) -> None:
        self.folder, self.name, self.count, self._seed = folder, name, count, seed
        self._pending = [bytearray() for _ in range(count)]
        self.pairs = 0

    def path(self, bucket: int) -> str:
        return os.path.join(self.folder, f"{self.name}.{bucket}")

    def add(self, keys: Sequence[bytes], values: Sequence[Value]) -> None:
        """Pairs in order (``values[i]`` None: a tombstone), two lists."""
        self.pairs += len(keys)
        _spread(keys, values, self._pending, self._seed)
        for i, pending in enumerate(self._pending):
            if len(pending) >= FLUSH_BYTES:
                self._flush(i)

    def _flush(self, bucket: int) -> None:
        pending = self._pending[bucket]
        if pending:
            with open(self.path(bucket), "ab") as out:
                out.write(_HEAD.pack(len(pending)))
                out.write(pending)
            self._pending[bucket] = bytearray()

    def close(self) -> None:
        """Write out what is pending."""
        for i in range(self.count):
            self._flush(i)

    def read(self, bucket: int) -> Iterator[tuple[list[bytes], list[Value]]]:
        """A bucket's pairs, in the order added, a chunk (one flush) at a time."""
        for chunk in self.chunks(bucket):
            yield _records(chunk)

    def chunks(self, bucket: int) -> Iterator[bytes]:
        """A bucket's chunks of records (:func:`spread`'s), in the order written."""
        path = self.path(bucket)
        if not os.path.exists(path):
            return
        with open(path, "rb") as src:
            while head := src.read(_HEAD.size):
                yield src.read(_HEAD.unpack(head)[0])

    def records(self, bucket: int) -> int:
        """How many pairs the bucket holds (in its file: :meth:`close` first)."""
        return int(_count(list(self.chunks(bucket))))

    def size(self, bucket: int) -> int:
        path = self.path(bucket)
        return os.path.getsize(path) if os.path.exists(path) else 0


def spread(keys: Sequence[bytes], values: Sequence[Value], buffers: list[bytearray],
           seed: int) -> None:
    """Each pair appended to ``buffers[crc32(key, seed) % len(buffers)]`` as a record: key
    size (u32), value size (i32, -1: None), key, value (``_buckets.spread`` compiled)."""
    if len(keys) != len(values):
        raise ValueError("keys and values differ in number")
    mask, crc, pack = len(buffers) - 1, zlib.crc32, _RECORD.pack
    for key, value in zip(keys, values, strict=True):
        out = buffers[crc(key, seed) & mask]
        out += pack(len(key), -1 if value is None else len(value))
        out += key
        if value is not None:
            out += value


def records(data: bytes) -> tuple[list[bytes], list[Value]]:
    """The (keys, values) of :func:`spread`'s records in ``data``."""
    keys: list[bytes] = []
    values: list[Value] = []
    at = 0
    while at < len(data):
        if at + _RECORD.size > len(data):
            raise ValueError("a record is cut short")
        key_size, value_size = _RECORD.unpack_from(data, at)
        at += _RECORD.size
        if at + key_size + max(value_size, 0) > len(data):
            raise ValueError("a record is cut short")
        keys.append(data[at:at + key_size])
        at += key_size
        if value_size < 0:
            values.append(None)
        else:
            values.append(data[at:at + value_size])
            at += value_size
    return keys, values


_spread = spread if _buckets is None else _buckets.spread
_records = records if _buckets is None else _buckets.records


def _split(spill: Spill, bucket: int, level: int) -> Spill:
    """Bucket ``bucket`` of ``spill`` spread over :data:`SPLIT` new buckets by another hash."""
    parts = Spill(spill.folder, f"{spill.name}.{bucket}s", SPLIT, seed=level)
    for keys, values in spill.read(bucket):
        parts.add(keys, values)
    parts.close()
    return parts


def _groups(table: Spill, topic: Spill, buckets: Iterable[int], level: int = 1
            ) -> Iterator[tuple[Spill, Spill, int]]:
    """(table spill, topic spill, bucket) pairs each small enough to join in memory."""
    for bucket in buckets:
        if level > 8 or (table.size(bucket) + topic.size(bucket) <= MAX_BUCKET_BYTES
                         and table.records(bucket) + topic.records(bucket)
                         <= MAX_BUCKET_RECORDS):
            yield table, topic, bucket
            continue
        parts = _split(table, bucket, level), _split(topic, bucket, level)
        yield from _groups(*parts, range(SPLIT), level + 1)
        for part in parts:
            for i in range(SPLIT):
                if os.path.exists(part.path(i)):
                    os.remove(part.path(i))


def join_bucket(table: list[bytes], topic: list[bytes]
                ) -> tuple[int, list[bytes], tuple[list[bytes], list[bytes]]]:
    """One bucket's join (``_buckets.join_bucket`` compiled): ``table`` and ``topic`` are its
    two sides' chunks of records. The topic folded as compaction keeps it (the last message
    of a key wins, a tombstone removes it); a key of exactly one table row whose value is the
    same bytes as the topic's is equal. (How many are equal, the other table keys once each,
    the topic's live pairs not equal as (keys, values).)"""
    latest: dict[bytes, Value] = {}
    for chunk in topic:
        keys, values = records(chunk)
        latest.update(zip(keys, values, strict=True))
    rows: dict[bytes, Value] = {}
    shared: set[bytes] = set()
    for chunk in table:
        keys, values = records(chunk)
        for key, value in zip(keys, values, strict=True):
            if key in rows or value is None:
                shared.add(key)  # compared row by row
            rows.setdefault(key, value)
    same = {k for k, v in rows.items() if v is not None and latest.get(k) == v}
    same -= shared
    live = [(k, v) for k, v in latest.items() if v is not None and k not in same]
    return (len(same), [k for k in rows if k not in same],
            ([k for k, _ in live], [v for _, v in live]))


def count_records(chunks: list[bytes]) -> int:
    """How many records the chunks hold."""
    return sum(len(records(chunk)[0]) for chunk in chunks)


_join_bucket = join_bucket if _buckets is None else _buckets.join_bucket
_count = count_records if _buckets is None else _buckets.count_records


def join(table: Spill, topic: Spill, unmatched: Callable[[list[bytes]], None],
         leftover: Callable[[bytes, bytes], None], buckets: Iterable[int] | None = None
         ) -> int:
    """Compare ``table`` (a table's expected pairs) with ``topic`` (its messages), bucket by
    bucket (the same count on both sides; ``buckets``: only these); how many keys are equal
    as bytes. The table keys not shown equal go to ``unmatched`` (each once), the live topic
    pairs not shown equal to ``leftover``."""
    if table.count != topic.count:
        raise ValueError(f"bucket counts differ: {table.count} and {topic.count}")
    equal = 0
    for mine_spill, topic_spill, bucket in _groups(
            table, topic, range(table.count) if buckets is None else buckets):
        same, odd, (keys, values) = _join_bucket(list(mine_spill.chunks(bucket)),
                                                 list(topic_spill.chunks(bucket)))
        equal += same
        if odd:
            unmatched(odd)
        for key, value in zip(keys, values, strict=True):
            leftover(key, value)
    return equal
