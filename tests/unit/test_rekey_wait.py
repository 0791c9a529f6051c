"""Capture's wait for the sink during a re-key, when the sink group's offsets cannot be read."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from cdc_ingest.capture import rekey
from cdc_ingest.kafka.errors import KafkaClientError
from cdc_ingest.kafka.offsets import OffsetsPending


class _Group:
    """The sink group's offsets as capture reads them: each read is the next answer."""

    group_id = "cdc-ingest.p.sink"

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.reads = 0

    def committed(self, topic: str, partitions: list[int]) -> dict[int, int]:
        self.reads += 1
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return dict(answer)


def _rekeying(group: _Group, stop_after: int = 10) -> rekey.Rekeying:
    options = SimpleNamespace(kafka={}, changelog_topic="changelog", sink_group=group.group_id)
    ctx = SimpleNamespace(options=options, tx=None, schemas=None, catalog=None, partitions=2,
                          stopping=lambda: group.reads >= stop_after)
    r = rekey.Rekeying(ctx)  # type: ignore[arg-type]
    r._group = group  # type: ignore[assignment]
    return r


def test_a_pending_transaction_of_the_sink_is_waited_out_not_taken_as_passed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(rekey, "WAIT_POLL_S", 0)
    group = _Group(OffsetsPending("timed out: an open transaction"), {0: 5, 1: 9},
                   {0: 11, 1: 9})
    assert _rekeying(group)._sink_past({0: 10, 1: 8}, "db.t", "the re-key record") is True
    assert group.reads == 3  # the unreadable read and the one still behind are waited out


def test_a_stop_during_the_wait_returns_false(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rekey, "WAIT_POLL_S", 0)
    group = _Group(*[OffsetsPending("timed out")] * 3)
    assert _rekeying(group, stop_after=3)._sink_past({0: 10}, "db.t", "x") is False


def test_any_other_kafka_failure_still_stops_capture(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rekey, "WAIT_POLL_S", 0)
    group = _Group(KafkaClientError("group authorization failed"))
    with pytest.raises(KafkaClientError, match="authorization"):
        _rekeying(group)._sink_past({0: 10}, "db.t", "x")
