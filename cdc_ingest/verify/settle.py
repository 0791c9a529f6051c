"""Differences judged against binlog positions: exact while writes go on.

The first pass (verify/run.py) reads MySQL and the topic at two moments that need not agree:
a key written between them differs for a moment only. Each key that differed is therefore
looked at again, in rounds (at most :data:`ROUNDS`):

1. the changelog's ends are noted, then MySQL's binlog head ``H1``;
2. once capture and the sink have passed ``H1`` (verify/clock.py), the topic's newer messages
   are read: the topic now holds every change MySQL had made by ``H1``;
3. the keys' rows are read again from MySQL (one read view), after ``H1``;
4. MySQL's head ``H2`` is read; once the pipeline has passed it, the changelog from the ends
   of step 1 tells which of the keys were written since step 1 (a change after ``H1`` has
   its record there, and every change before ``H2`` is written by now).

A key equal in step 3 was a change in flight: not a difference. A key that still differs and
was not written since step 1 is a real difference: its row did not change from ``H1`` to the
read of step 3, and the topic had every change up to ``H1``; it is reported with both sides.
A key written meanwhile goes to the next round. Keys still written in every round are
reported as *unconfirmed*: changed faster than they can be confirmed (never as equal). So are
all of them when the pipeline does not pass a head within the wait (stopped, or far behind).
Keys the first pass found only in the topic are read again in every table of the topic by
the values of their key JSON (numbers and strings; a key spelled otherwise stays as found).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from cdc_ingest.kafka import read_topic
from cdc_ingest.registry.avro_reader import AvroReader
from cdc_ingest.verify.clock import PipelineClock
from cdc_ingest.verify.diff import Sample, Suspect, TopicCheck, TopicResult
from cdc_ingest.verify.expect import Expectation
from cdc_ingest.verify.mysql import MySqlSide
from cdc_ingest.verify.store import MemoryValues
from cdc_ingest.verify.topics import canonical_key, topic_values
from cdc_ingest.verify.values import dumps, parse

log = logging.getLogger(__name__)

ROUNDS = 3


@dataclass
class Settling:
    """What the rounds need of one topic's check."""

    clock: PipelineClock
    mysql: MySqlSide
    kafka: dict[str, Any]
    topic: str
    expectations: dict[str, Expectation]  # table name -> its expectation
    new_check: Callable[[MemoryValues], TopicCheck]  # a check like the first pass's
    events: bool
    avro: AvroReader | None
    ends: dict[int, int]  # where the first pass's read of the topic ended
    wait_s: float
    values: dict[bytes, bytes | None] = field(default_factory=dict)


def settle(result: TopicResult, suspects: dict[bytes, Suspect] | None, s: Settling
           ) -> TopicResult:
    """``result`` with each of ``suspects`` judged again (see the module's docstring)."""
    if not suspects:
        if suspects is None:
            result.notes.append("too many keys differ to read each again: the differences "
                                "below were not confirmed against binlog positions")
        return result
    s.values = {key: found.topic_value for key, found in suspects.items()}
    pending = {key: found for key, found in suspects.items() if _readable(found, key, s)}
    confirmed: dict[str, list[Sample]] = {c: [] for c in result.counts}
    counts = dict.fromkeys(result.counts, 0)
    counts["conflicts"] = result.counts["conflicts"]
    confirmed["conflicts"] = result.samples["conflicts"]
    for key, found in suspects.items():
        if key not in pending:  # cannot be read again: as the first pass found it
            counts[found.category] += 1
    for category in ("missing", "extra", "differing"):
        confirmed[category] = [x for x in result.samples[category]
                               if x.key.encode() in suspects and
                               x.key.encode() not in pending]
    rechecked, why = len(pending), ""
    for _ in range(ROUNDS):
        if not pending:
            break
        pending, why = _round(pending, s, counts, confirmed)
        if why:  # reported as the first pass found them, with the reason
            for category in ("missing", "extra", "differing"):
                keys = {k for k, p in pending.items() if p.category == category}
                counts[category] += len(keys)
                confirmed[category] += [x for x in result.samples[category]
                                        if x.key.encode() in keys]
            result.counts, result.samples = counts, confirmed
            result.notes.append(f"{len(pending)} key(s) {why}")
            return result
    result.counts, result.samples = counts, confirmed
    resolved = rechecked - len(pending) - sum(counts[c] for c in ("missing", "extra",
                                                                    "differing"))
    result.notes.append(f"{rechecked} key(s) that differed read again once the pipeline had "
                        f"passed MySQL's binlog position: {max(resolved, 0)} equal (changes "
                        "in flight)")
    result.unconfirmed = [Sample(k.decode(errors="replace"),
                                 p.source.table if p.source else "",
                                 f"written again in each of {ROUNDS} rounds: changed faster "
                                 "than it can be confirmed") for k, p in pending.items()]
    return result


def _readable(found: Suspect, key: bytes, s: Settling) -> bool:
    return found.source is not None or bool(_key_values(key, s))


def _key_values(key: bytes, s: Settling) -> dict[str, tuple[Any, ...]]:
    """An extra key's values per table of the topic whose key columns it names exactly."""
    try:
        parsed = parse(key)
    except ValueError:
        return {}
    if not isinstance(parsed, dict):
        return {}
    out = {}
    for name, expect in s.expectations.items():
        columns = expect.shape.key
        if set(parsed) == set(columns) and all(isinstance(parsed[c], (int, str))
                                               for c in columns):
            out[name] = tuple(parsed[c] for c in columns)
    return out


def _identities(key: bytes, found: Suspect, s: Settling) -> set[tuple[str, bytes]]:
    """The (table, changelog key) a change of this key would be written under."""
    if found.source is not None:
        return {(found.source.table, found.source.pk)}
    return {(name, dumps(dict(zip(s.expectations[name].shape.key, values, strict=True))))
            for name, values in _key_values(key, s).items()}


def _round(pending: dict[bytes, Suspect], s: Settling, counts: dict[str, int],
           confirmed: dict[str, list[Sample]]) -> tuple[dict[bytes, Suspect], str]:
    start = s.clock.changelog_ends()
    head = s.clock.head()
    if not s.clock.wait_past(head, s.wait_s):
        return pending, (f"not confirmed: the pipeline did not pass binlog {head[0]}:{head[1]} "
                         f"within {s.wait_s:.0f} s (stopped, or far behind)")
    for partition, offset, key, value in topic_values(s.kafka, s.topic, s.events, s.avro,
                                                      since=s.ends):
        s.ends[partition] = offset + 1
        if key in pending:
            s.values[key] = value
    check = s.new_check(MemoryValues({k: v for k, v in s.values.items()
                                      if k in pending and v is not None}))
    with s.mysql.snapshot():
        for name, expect in s.expectations.items():
            keys = [p.source.key_values for p in pending.values()
                    if p.source is not None and p.source.table == name
                    and p.source.key_values is not None]
            keys += [v[name] for k, p in pending.items() if p.source is None
                     and name in (v := _key_values(k, s))]
            items = [item for row in s.mysql.rows_by_key(expect.shape, keys)
                     if (item := expect(row)) is not None and item[0] in pending]
            check.rows(name, expect.shape.key, items)
    result = check.finish()
    still = check.suspects or {}
    head = s.clock.head()
    if not s.clock.wait_past(head, s.wait_s):
        return still, (f"not confirmed: the pipeline did not pass binlog {head[0]}:{head[1]} "
                       f"within {s.wait_s:.0f} s (stopped, or far behind)")
    written = _written(s, start, {i for k, p in still.items() for i in _identities(k, p, s)})
    later = {k: p for k, p in still.items() if _identities(k, p, s) & written}
    for category in ("missing", "extra", "differing"):
        done = {k for k, p in still.items() if p.category == category and k not in later}
        counts[category] += len(done)
        confirmed[category] += [x for x in result.samples[category] if x.key.encode() in done]
    return later, ""


def _written(s: Settling, start: dict[int, int], wanted: set[tuple[str, bytes]]
             ) -> set[tuple[str, bytes]]:
    """Which of ``wanted`` (table, key) have a changelog record from ``start`` on."""
    found: set[tuple[str, bytes]] = set()
    if not wanted:
        return found
    for msg in read_topic(s.kafka, s.clock.changelog, since=start):
        if msg.key is None or msg.value is None:
            continue
        head = orjson.loads(msg.value)
        identity = (f"{head.get('db')}.{head.get('table')}", canonical_key(msg.key))
        if identity in wanted:
            found.add(identity)
    return found
