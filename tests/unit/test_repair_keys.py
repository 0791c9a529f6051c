"""Key chunks (verify --repair): which requested keys are taken, and how they are spelled."""

from __future__ import annotations

from cdc_ingest.capture.snapshot.repair import absent_keys, spelled
from cdc_ingest.capture.snapshot.state import Chunk, SnapshotState


def test_a_key_is_spelled_as_the_changelog_spells_it_or_refused() -> None:
    assert spelled('{"b":"x","a":1}', ["a", "b"]) == b'{"a":1,"b":"x"}'
    assert spelled('{"a":1}', ["a", "b"]) is None  # not its key columns
    assert spelled('{"a":1.5}', ["a"]) is None  # one spelling: integers and strings only
    assert spelled('{"a":true}', ["a"]) is None
    assert spelled("not json", ["a"]) is None


def test_keys_without_a_row_are_the_ones_to_delete() -> None:
    gone = absent_keys(['{"id":1}', '{"id":2}', '{"id":3}'], [b'{"id":2}'], ["id"])
    assert gone == [b'{"id":1}', b'{"id":3}']


def test_a_key_chunk_done_leaves_the_repairs_and_the_snapshot_ends_with_the_last() -> None:
    state = SnapshotState([], repairs=[["d", "t", ['{"id":1}']], ["d", "u", ['{"k":"a"}']]])
    assert not state.done
    state.chunk_done(Chunk("d", "t", None, None, keys=['{"id":1}', '{"id":9}']), ("b.1", 10))
    assert state.repairs == [["d", "u", ['{"k":"a"}']]] and not state.done
    state.chunk_done(Chunk("d", "u", None, None, keys=['{"k":"a"}']), ("b.1", 20))
    assert state.done and state.repairs == []
    assert state.chunks == [["d", "t", None, None, "b.1", 10, ['{"id":1}', '{"id":9}']],
                            ["d", "u", None, None, "b.1", 20, ['{"k":"a"}']]]
