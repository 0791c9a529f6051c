"""verify/store.py: the on-disk store of a topic's latest values behaves as the dict one."""

from __future__ import annotations

import os
import random

from cdc_ingest.verify.diff import Source, Suspect, TopicCheck
from cdc_ingest.verify.store import BATCH, DiskValues, MemoryValues


def _workload(seed: int) -> list[tuple[str, object]]:
    rnd = random.Random(seed)
    steps: list[tuple[str, object]] = []
    for _ in range(3 * BATCH):  # more than one batch, so flushes happen in the middle
        key = b'{"id":%d}' % rnd.randrange(4_000)
        steps.append(("put", (key, None if rnd.random() < 0.2 else b'{"v":%d}' % rnd.random())))
    for _ in range(40):
        keys = [b'{"id":%d}' % rnd.randrange(4_500) for _ in range(rnd.randrange(1, 300))]
        steps.append(("take", keys))
        steps.append(("claim", (keys, rnd.choice(["a.t", "b.t"]))))
    return steps


def test_disk_and_memory_values_agree() -> None:
    for seed in range(3):
        disk, memory = DiskValues(), MemoryValues()
        try:
            for op, arg in _workload(seed):
                if op == "put":
                    key, value = arg  # type: ignore[misc]
                    disk.put(key, value)
                    memory.put(key, value)
                elif op == "take":
                    assert disk.take(arg) == memory.take(arg)  # type: ignore[arg-type]
                else:
                    keys, table = arg  # type: ignore[misc]
                    assert disk.claim(keys, table) == memory.claim(keys, table)
                assert len(disk) == len(memory)
            assert sorted(disk.remaining()) == sorted(memory.remaining())
        finally:
            disk.close()


def test_a_disk_store_deletes_its_files() -> None:
    store = DiskValues()
    folder = store._folder
    store.put(b"k", b"v")
    assert len(store) == 1 and os.path.isdir(folder)
    store.close()
    assert not os.path.exists(folder)


def test_a_batch_of_rows_finds_differences_and_conflicts_as_single_rows_do() -> None:
    latest = {b'{"id":1}': b'{"id":1,"v":1}', b'{"id":2}': b'{"id":2,"v":9}',
              b'{"id":4}': b'{"id":4,"v":4}'}
    results = []
    for batched in (False, True):
        store = DiskValues()
        for key, value in latest.items():
            store.put(key, value)
        check = TopicCheck("t", ("a.t", "b.t"), store, except_key=False)
        rows = [(b'{"id":%d}' % i, {"id": i, "v": i}, None, frozenset(), frozenset(),
                 Source("a.t", b'{"id":%d}' % i, (i,))) for i in (1, 2, 3)]
        shard = [(b'{"id":1}', {"id": 1, "v": 1}, None, frozenset(), frozenset(),
                  Source("b.t", b'{"id":1}', (1,)))]
        if batched:
            check.rows("a.t", ("id",), rows)
            check.rows("b.t", ("id",), shard)
        else:
            for key, row, *_ in rows:
                check.row("a.t", key, ("id",), row)
            check.row("b.t", shard[0][0], ("id",), shard[0][1])
        result = check.finish()
        results.append((result.counts, {c: [s.key for s in found]
                                        for c, found in result.samples.items()}))
    assert results[0] == results[1]
    counts, keys = results[0]
    assert counts == {"missing": 1, "extra": 1, "differing": 1, "conflicts": 1}
    assert keys == {"missing": ['{"id":3}'], "extra": ['{"id":4}'],
                    "differing": ['{"id":2}'], "conflicts": ['{"id":1}']}
    # what a second look needs: the keys that differed, where their rows are
    check = TopicCheck("t", ("a.t",), {b'{"id":2}': b'{"id":2,"v":9}'}, except_key=False)
    check.rows("a.t", ("id",), [(b'{"id":2}', {"id": 2, "v": 2}, None, frozenset(),
                                 frozenset(), Source("a.t", b'{"id":2}', (2,)))])
    check.finish()
    assert check.suspects == {b'{"id":2}': Suspect("differing", Source("a.t", b'{"id":2}', (2,)),
                                                   b'{"id":2,"v":9}')}
