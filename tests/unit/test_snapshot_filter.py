"""The binlog phase's chunk lookup: bisection over tiled chunks finds what a scan finds."""

from __future__ import annotations

import random
from types import SimpleNamespace

from cdc_ingest.capture.snapshot.filter import ChunkFilter
from cdc_ingest.capture.snapshot.keyorder import KeyColumn, KeyOrder
from cdc_ingest.capture.snapshot.state import SnapshotState


def _scan(chunks: list[list[object]], order: KeyOrder, key: dict[str, int],
          at: tuple[str, int]) -> bool:
    for chunk in chunks:
        if order.within(key, chunk[2], chunk[3]):  # type: ignore[arg-type]
            return at <= (chunk[4], chunk[5])  # type: ignore[operator]
    return False


def test_bisection_over_tiled_chunks_agrees_with_a_scan_and_compares_little() -> None:
    rng = random.Random(3)
    compares = []

    def text(a: str, b: str, charset: str, collation: str) -> int:
        raise AssertionError("integer keys never reach the server")

    order = KeyOrder((KeyColumn("id", "int"),), text)
    original = order.compare

    def counted(a: dict[str, object], b: dict[str, object]) -> int:
        compares.append(1)
        return original(a, b)

    order.compare = counted  # type: ignore[method-assign]
    bounds = sorted(rng.sample(range(1, 100_000), 500))
    ends: list[int | None] = [*bounds, None]
    chunks, after = [], None
    for i, upto in enumerate(ends):
        chunks.append(["db", "t", after, None if upto is None else {"id": upto},
                       "bin.000001", 1000 + rng.randrange(5000) + i])
        after = chunks[-1][3]
    info = SimpleNamespace(order=order)
    tiled = ChunkFilter(SnapshotState([["db", "t"]], chunks=chunks, done=True),
                        lambda db, table: info)  # type: ignore[arg-type,return-value]
    for _ in range(2000):
        key = {"id": rng.randrange(0, 110_000)}
        at = ("bin.000001", rng.randrange(0, 8000))
        compares.clear()
        assert tiled.covered("db", "t", key, at) == _scan(chunks, order, key, at)
    compares.clear()
    tiled.covered("db", "t", {"id": 50_000}, ("bin.000001", 1))
    assert len(compares) <= 14  # log2(501) + the chunk's own bounds, not hundreds

    # chunks that do not tile (a gap) are searched in turn, with the same answers
    gapped = [c for i, c in enumerate(chunks) if i != 7]
    scanned = ChunkFilter(SnapshotState([["db", "t"]], chunks=gapped, done=True),
                          lambda db, table: info)  # type: ignore[arg-type,return-value]
    for _ in range(500):
        key = {"id": rng.randrange(0, 110_000)}
        at = ("bin.000001", rng.randrange(0, 8000))
        assert scanned.covered("db", "t", key, at) == _scan(gapped, order, key, at)


def test_a_key_chunk_covers_its_keys_up_to_its_watermark_on_top_of_the_range_chunks() -> None:
    """verify --repair's key chunk: a change of one of its keys up to its high watermark is
    in the row written again (dropped); later changes, and other keys, go on as before."""
    order = KeyOrder((KeyColumn("id", "int"),), lambda *a: 0)
    info = SimpleNamespace(order=order)
    state = SnapshotState([["db", "t"]], done=True, chunks=[
        ["db", "t", None, {"id": 100}, "bin.000001", 500],  # the first snapshot
        ["db", "t", {"id": 100}, None, "bin.000001", 600],
        ["db", "t", None, None, "bin.000002", 40, ['{"id":7}', '{"id":300}']],  # a repair
    ])
    state = SnapshotState.from_json(state.as_json())  # as committed and read back
    chunks = ChunkFilter(state, lambda db, table: info)  # type: ignore[arg-type,return-value]
    assert chunks.covered("db", "t", {"id": 7}, ("bin.000002", 39))
    assert chunks.covered("db", "t", {"id": 7}, ("bin.000002", 40))
    assert not chunks.covered("db", "t", {"id": 7}, ("bin.000002", 41))
    assert chunks.covered("db", "t", {"id": 300}, ("bin.000001", 900))
    assert not chunks.covered("db", "t", {"id": 8}, ("bin.000001", 900))  # not repaired
    assert chunks.covered("db", "t", {"id": 8}, ("bin.000001", 450))  # its range chunk
    assert not chunks.covered("db", "u", {"id": 7}, ("bin.000001", 1))
    assert chunks.reaches("db", "t", ("bin.000002", 10))
    assert chunks.last == ("bin.000002", 40)


def test_a_paused_snapshot_drops_the_changes_of_keys_no_chunk_has_read_yet() -> None:
    """Paused: a change of a key no chunk has read yet is left to the chunk that will read
    it (written now, a delete before that chunk would leave its key behind); a read key's
    changes after its chunk go on; other tables' always. Past every chunk, the plan alone
    still drops the unread keys' changes."""
    order = KeyOrder((KeyColumn("id", "int"),), lambda *a: 0)
    info = SimpleNamespace(order=order)
    state = SnapshotState([["db", "a"], ["db", "t"], ["db", "u"]], table=1, after={"id": 100},
                          chunks=[["db", "a", None, None, "bin.000001", 300],
                                  ["db", "t", None, {"id": 100}, "bin.000001", 500]],
                          paused=True)
    state = SnapshotState.from_json(state.as_json())  # as committed and read back
    chunks = ChunkFilter(state, lambda db, table: info)  # type: ignore[arg-type,return-value]
    late = ("bin.000009", 4)
    assert chunks.covered("db", "t", {"id": 101}, late)  # not read yet
    assert chunks.covered("db", "u", {"id": 1}, late)  # a table not begun
    assert not chunks.covered("db", "t", {"id": 100}, late)  # read, after its chunk
    assert chunks.covered("db", "t", {"id": 100}, ("bin.000001", 499))  # in its chunk
    assert not chunks.covered("db", "a", {"id": 5}, late)  # a table read whole
    assert not chunks.covered("db", "other", {"id": 5}, late)
    plan = chunks.without_chunks()
    assert plan.paused and plan.state.chunks == [] and plan.state.after == {"id": 100}
    assert plan.covered("db", "t", {"id": 101}, late) and plan.covered("db", "u", {"id": 1}, late)
    assert not plan.covered("db", "t", {"id": 100}, ("bin.000001", 499))
    running = ChunkFilter(SnapshotState.from_json({**state.as_json(), "paused": False}),
                          lambda db, table: info)  # type: ignore[arg-type,return-value]
    assert not running.covered("db", "t", {"id": 101}, late)  # resumed: chunks decide
