"""verify/buckets.py: spilled pairs joined bucket by bucket, against a plain dict model."""

from __future__ import annotations

import random
import zlib
from collections import Counter

import pytest

from cdc_ingest.verify import buckets
from cdc_ingest.verify.buckets import Spill, bucket_count, join


def _join(tmp_path, table, topic, count):  # type: ignore[no-untyped-def]
    mine, theirs = Spill(str(tmp_path), "table", count), Spill(str(tmp_path), "topic", count)
    for at in range(0, len(table), 7):
        part = table[at:at + 7]
        mine.add([k for k, _ in part], [v for _, v in part])
    for at in range(0, len(topic), 5):
        part = topic[at:at + 5]
        theirs.add([k for k, _ in part], [v for _, v in part])
    mine.close()
    theirs.close()
    unmatched: list[bytes] = []
    leftover: dict[bytes, bytes] = {}
    equal = join(mine, theirs, unmatched.extend, leftover.__setitem__)
    return equal, unmatched, leftover


def _model(table, topic):  # type: ignore[no-untyped-def]
    latest: dict[bytes, bytes] = {}
    for k, v in topic:
        if v is None:
            latest.pop(k, None)
        else:
            latest[k] = v
    counts = Counter(k for k, _ in table)
    rows = dict(table)
    same = {k for k, v in rows.items() if counts[k] == 1 and latest.get(k) == v}
    return (len(same), sorted(k for k in rows if k not in same),
            {k: v for k, v in latest.items() if k not in same})


def test_equal_differing_missing_extra_tombstone_and_shared_keys(tmp_path) -> None:  # type: ignore[no-untyped-def]
    table = [(b'{"id":1}', b"a"), (b'{"id":2}', b"b"), (b'{"id":3}', b"c"),
             (b'{"id":4}', b"d"), (b'{"id":5}', b"e"), (b'{"id":5}', b"e"),
             (b'{"id":6}', b"f")]
    topic = [(b'{"id":1}', b"old"), (b'{"id":1}', b"a"),  # the last message wins
             (b'{"id":2}', b"B"),                          # a value that differs
             (b'{"id":4}', b"d"), (b'{"id":4}', None),     # deleted: missing
             (b'{"id":5}', b"e"),                          # a key two rows share
             (b'{"id":6}', None), (b'{"id":6}', b"f"),     # deleted, then written again
             (b'{"id":9}', b"x")]                          # extra
    equal, unmatched, leftover = _join(tmp_path, table, topic, 4)
    assert equal == 2  # ids 1 and 6
    assert sorted(unmatched) == [b'{"id":2}', b'{"id":3}', b'{"id":4}', b'{"id":5}']
    assert leftover == {b'{"id":2}': b"B", b'{"id":5}': b"e", b'{"id":9}': b"x"}


@pytest.mark.parametrize("count", [1, 2, 16])
@pytest.mark.parametrize("python", [False, True])
def test_random_against_model(tmp_path, monkeypatch, count: int, python: bool) -> None:  # type: ignore[no-untyped-def]
    if python:  # the Python records, as without the compiled module
        monkeypatch.setattr(buckets, "_spread", buckets.spread)
        monkeypatch.setattr(buckets, "_records", buckets.records)
        monkeypatch.setattr(buckets, "_join_bucket", buckets.join_bucket)
    rng = random.Random(count)
    keys = [b'{"id":%d}' % i for i in range(300)]
    table = [(k, b"v%d" % rng.randrange(3)) for k in rng.sample(keys, 200)]
    table += table[:3]  # shared keys
    topic = [(rng.choice(keys), rng.choice([None, b"v0", b"v1", b"v2", b""]))
             for _ in range(900)]
    equal, unmatched, leftover = _join(tmp_path, table, topic, count)
    assert (equal, sorted(unmatched), leftover) == _model(table, topic)


@pytest.mark.parametrize(("limit", "value"), [("MAX_BUCKET_BYTES", 2000),
                                              ("MAX_BUCKET_RECORDS", 40)])
def test_a_bucket_too_big_is_split_with_the_same_outcome(tmp_path, monkeypatch, limit: str,  # type: ignore[no-untyped-def]
                                                         value: int) -> None:
    rng = random.Random(7)
    table = [(b'{"id":%d}' % i, b"x" * rng.randrange(50)) for i in range(500)]
    topic = [(k, v if rng.random() < 0.9 else b"y") for k, v in table]
    topic += [(b'{"id":%d}' % i, None) for i in range(0, 500, 37)]
    monkeypatch.setattr(buckets, limit, value)
    calls: list[int] = []
    real_split = buckets._split

    def split(spill, bucket, level):  # type: ignore[no-untyped-def]
        calls.append(level)
        return real_split(spill, bucket, level)

    monkeypatch.setattr(buckets, "_split", split)
    equal, unmatched, leftover = _join(tmp_path, table, topic, 2)
    assert calls  # the buckets were split
    assert (equal, sorted(unmatched), leftover) == _model(table, topic)


def test_pairs_read_back_in_order_with_tombstones_and_empty_values(tmp_path) -> None:  # type: ignore[no-untyped-def]
    spill = Spill(str(tmp_path), "s", 1)
    spill.add([b"k1", b"k2", b"k1"], [b"", None, b"v\x00"])
    spill.close()
    spill.add([b"k3"], [b"w"])
    spill.close()
    assert list(spill.read(0)) == [([b"k1", b"k2", b"k1"], [b"", None, b"v\x00"]),
                                   ([b"k3"], [b"w"])]


def test_bucket_count_and_mismatched_counts(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert bucket_count(0) == 1
    assert bucket_count(buckets.ROWS_PER_BUCKET * 10) == 16
    with pytest.raises(ValueError):
        join(Spill(str(tmp_path), "a", 1), Spill(str(tmp_path), "b", 2),
             lambda keys: None, lambda k, v: None)


@pytest.mark.skipif(buckets._buckets is None, reason="the compiled writer is not built")
def test_the_compiled_records_are_the_python_ones() -> None:
    rng = random.Random(3)
    compiled = buckets._buckets
    for _ in range(200):
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(40)))
        seed = rng.randrange(1 << 32)
        assert compiled.crc32(data, seed) == zlib.crc32(data, seed)
    keys = [bytes(rng.randrange(256) for _ in range(rng.randrange(30))) for _ in range(500)]
    values = [None if rng.random() < 0.2 else bytes(rng.randrange(256) for _ in range(
        rng.randrange(300))) for _ in keys]
    mine, theirs = [bytearray() for _ in range(8)], [bytearray() for _ in range(8)]
    buckets.spread(keys, values, mine, 5)
    compiled.spread(keys, values, theirs, 5)
    assert mine == theirs
    for data in mine:
        assert buckets.records(bytes(data)) == compiled.records(bytes(data))
    whole = bytes(mine[0])
    for reader in (buckets.records, compiled.records):
        with pytest.raises(ValueError, match="cut short"):
            reader(whole[:-1])


def test_joining_the_buckets_in_two_halves_is_joining_them_all(tmp_path) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(9)
    table = [(b'{"id":%d}' % i, b"v%d" % rng.randrange(2)) for i in range(400)]
    topic = [(b'{"id":%d}' % rng.randrange(500), b"v%d" % rng.randrange(2)) for _ in range(600)]
    mine, theirs = Spill(str(tmp_path), "table", 8), Spill(str(tmp_path), "topic", 8)
    mine.add([k for k, _ in table], [v for _, v in table])
    theirs.add([k for k, _ in topic], [v for _, v in topic])
    mine.close()
    theirs.close()
    unmatched: list[bytes] = []
    leftover: dict[bytes, bytes] = {}
    equal = sum(join(mine, theirs, unmatched.extend, leftover.__setitem__, half)
                for half in (range(0, 8, 2), range(1, 8, 2)))
    assert (equal, sorted(unmatched), leftover) == _model(table, topic)


@pytest.mark.skipif(buckets._buckets is None, reason="the compiled writer is not built")
def test_the_compiled_bucket_join_is_the_python_one() -> None:
    rng = random.Random(13)
    compiled = buckets._buckets
    for _ in range(200):
        keys = [b"k%d" % rng.randrange(30) for _ in range(rng.randrange(60))]
        sides = []
        for nones in (0.0, 0.3):  # the table's side, then the topic's (tombstones too)
            pairs = [(rng.choice(keys or [b"k"]), None if rng.random() < nones else
                      rng.choice([b"", b"a", b"b", b"ab"])) for _ in range(rng.randrange(80))]
            chunks = []
            while pairs:
                cut = rng.randrange(1, 20)
                part, pairs = pairs[:cut], pairs[cut:]
                out = [bytearray()]
                buckets.spread([k for k, _ in part], [v for _, v in part], out, 0)
                chunks.append(bytes(out[0]))
            sides.append(chunks)
        python = buckets.join_bucket(*sides)
        mine = compiled.join_bucket(*sides)
        assert (python[0], sorted(python[1]), dict(zip(*python[2], strict=True))) == \
            (mine[0], sorted(mine[1]), dict(zip(*mine[2], strict=True)))
