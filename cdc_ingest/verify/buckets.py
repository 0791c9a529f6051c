"""Key/value pairs spilled to hash buckets on disk, and two such spills joined bucket by bucket.

verify's fast path (verify/fast.py) writes the table's expected pairs (key JSON, value JSON)
and the topic's messages (canonical key, value or None for a tombstone) into two
:class:`Spill` s with the same bucket count: a pair goes to bucket ``crc32(key) % count``, so a
key's pairs on both sides are in the same bucket, in the order they were added. Only what is
pending for a bucket (at most :data:`FLUSH_BYTES` of it) is held in memory; the rest is in the
bucket's file, appended in framed chunks.

:func:`join` then takes one bucket of both sides at a time (a bucket bigger than
:data:`MAX_BUCKET_BYTES`, say because the table's row estimate was far off, is split again
on disk by another hash first, so memory stays bounded whatever the table's size). In a
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
from array import array
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from itertools import accumulate, pairwise

FLUSH_BYTES = 1 << 18  # a bucket's pending bytes written out past this
MAX_BUCKET_BYTES = 96 << 20  # a bucket (both sides' files) joined in memory at most this big
SPLIT = 8  # the sub-buckets of a bucket too big
ROWS_PER_BUCKET = 100_000
_HEAD = struct.Struct("<IQ")  # pairs in a chunk, its bytes after this

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
        self._keys: list[list[bytes]] = [[] for _ in range(count)]
        self._values: list[list[Value]] = [[] for _ in range(count)]
        self._bytes = [0] * count
        self.pairs = 0

    def path(self, bucket: int) -> str:
        return os.path.join(self.folder, f"{self.name}.{bucket}")

    def add(self, keys: Sequence[bytes], values: Sequence[Value]) -> None:
        """Pairs in order (``values[i]`` None: a tombstone)."""
        self.pairs += len(keys)
        if self.count == 1:
            self._keys[0] += keys
            self._values[0] += values
            self._bytes[0] += sum(map(len, keys)) + sum(len(v) for v in values if v is not None)
        else:
            crc, mask, seed = zlib.crc32, self.count - 1, self._seed
            ks, vs, sizes = self._keys, self._values, self._bytes
            for key, value in zip(keys, values, strict=True):
                i = crc(key, seed) & mask
                ks[i].append(key)
                vs[i].append(value)
                sizes[i] += len(key) + (0 if value is None else len(value))
        for i, size in enumerate(self._bytes):
            if size >= FLUSH_BYTES:
                self._flush(i)

    def _flush(self, bucket: int) -> None:
        keys, values = self._keys[bucket], self._values[bucket]
        if not keys:
            return
        with open(self.path(bucket), "ab") as out:
            out.write(_frame(keys, values))
        self._keys[bucket], self._values[bucket], self._bytes[bucket] = [], [], 0

    def close(self) -> None:
        """Write out what is pending."""
        for i in range(self.count):
            self._flush(i)

    def read(self, bucket: int) -> Iterator[tuple[list[bytes], list[Value]]]:
        """A bucket's pairs, in the order added, a chunk (one flush) at a time."""
        path = self.path(bucket)
        if not os.path.exists(path):
            return
        with open(path, "rb") as src:
            while head := src.read(_HEAD.size):
                count, size = _HEAD.unpack(head)
                yield _unframe(count, src.read(size))

    def size(self, bucket: int) -> int:
        path = self.path(bucket)
        return os.path.getsize(path) if os.path.exists(path) else 0


def _frame(keys: Sequence[bytes], values: Sequence[Value]) -> bytes:
    """``n`` and the size of what follows; n key sizes, n value sizes (-1: None), the keys,
    the values."""
    try:
        value_sizes = array("i", map(len, values))  # type: ignore[arg-type]
        present = values
    except TypeError:  # a tombstone among them
        value_sizes = array("i", [-1 if v is None else len(v) for v in values])
        present = [v for v in values if v is not None]
    body = b"".join([array("i", map(len, keys)).tobytes(), value_sizes.tobytes(), *keys,
                     *present])  # type: ignore[list-item]
    return _HEAD.pack(len(keys), len(body)) + body


def _unframe(n: int, data: bytes) -> tuple[list[bytes], list[Value]]:
    key_sizes, value_sizes = array("i"), array("i")
    key_sizes.frombytes(data[:4 * n])
    value_sizes.frombytes(data[4 * n:8 * n])
    ends = list(accumulate(key_sizes, initial=8 * n))
    keys = [data[a:b] for a, b in pairwise(ends)]
    if not value_sizes or min(value_sizes) >= 0:
        ends = list(accumulate(value_sizes, initial=ends[-1]))
        return keys, [data[a:b] for a, b in pairwise(ends)]
    values: list[Value] = []
    append = values.append
    at = ends[-1]
    for size in value_sizes:
        if size < 0:
            append(None)
        else:
            append(data[at:at + size])
            at += size
    return keys, values


def _split(spill: Spill, bucket: int, level: int) -> Spill:
    """Bucket ``bucket`` of ``spill`` spread over :data:`SPLIT` new buckets by another hash."""
    parts = Spill(spill.folder, f"{spill.name}.{bucket}s", SPLIT, seed=level)
    for keys, values in spill.read(bucket):
        parts.add(keys, values)
    parts.close()
    return parts


def _groups(table: Spill, topic: Spill, level: int = 1
            ) -> Iterator[tuple[Spill, Spill, int]]:
    """(table spill, topic spill, bucket) pairs each small enough to join in memory."""
    for bucket in range(table.count):
        if table.size(bucket) + topic.size(bucket) <= MAX_BUCKET_BYTES or level > 8:
            yield table, topic, bucket
            continue
        parts = _split(table, bucket, level), _split(topic, bucket, level)
        yield from _groups(*parts, level + 1)
        for part in parts:
            for i in range(SPLIT):
                if os.path.exists(part.path(i)):
                    os.remove(part.path(i))


def _fold(topic: Spill, bucket: int) -> dict[bytes, bytes]:
    """The bucket's topic pairs as compaction keeps them."""
    latest: dict[bytes, Value] = {}
    for keys, values in topic.read(bucket):
        if None in values:
            for key, value in zip(keys, values, strict=True):
                if value is None:
                    latest.pop(key, None)
                else:
                    latest[key] = value
        else:
            latest.update(zip(keys, values, strict=True))
    return latest  # type: ignore[return-value]


def join(table: Spill, topic: Spill, unmatched: Callable[[list[bytes]], None],
         leftover: Callable[[bytes, bytes], None]) -> int:
    """Compare ``table`` (a table's expected pairs) with ``topic`` (its messages), bucket by
    bucket (the same count on both sides); how many keys are equal as bytes. The table keys
    not shown equal go to ``unmatched`` (each once), the live topic pairs not shown equal to
    ``leftover``."""
    if table.count != topic.count:
        raise ValueError(f"bucket counts differ: {table.count} and {topic.count}")
    equal = 0
    for mine_spill, topic_spill, bucket in _groups(table, topic):
        latest = _fold(topic_spill, bucket)
        keys: list[bytes] = []
        values: list[Value] = []
        for chunk_keys, chunk_values in mine_spill.read(bucket):
            keys += chunk_keys
            values += chunk_values
        mine = dict(zip(keys, values, strict=True))
        shared = (frozenset(k for k, n in Counter(keys).items() if n > 1)
                  if len(mine) != len(keys) else frozenset())
        get = latest.get
        same = {k for k, v in mine.items() if get(k) == v and k not in shared}
        equal += len(same)
        odd = [k for k in mine if k not in same]
        if odd:
            unmatched(odd)
        for key, value in latest.items():
            if key not in same:
                leftover(key, value)
    return equal
