"""A sink topic spilled to hash buckets on disk by a process of its own, while verify reads MySQL.

:class:`Loading` starts it (spawned: a fresh interpreter, nothing of the parent's Kafka or
MySQL clients); :meth:`Loading.spill` waits for it and gives the
:class:`~cdc_ingest.verify.buckets.Spill` it wrote (each message's canonical key and value,
None for a tombstone, in the topic's order), with each partition's end. A failure in the
process is raised in the caller.
"""

from __future__ import annotations

import multiprocessing
import time
from multiprocessing.connection import Connection
from typing import Any

from cdc_ingest.errors import CdcIngestError
from cdc_ingest.kafka.bulk import read_columns
from cdc_ingest.verify.buckets import Spill, join
from cdc_ingest.verify.topics import canonical_key


def load(kafka: dict[str, Any], topic: str, spill: Spill, rate: float | None = None
         ) -> dict[int, int]:
    """Every committed record of ``topic`` added to ``spill`` (canonical key, value), as
    :func:`~cdc_ingest.verify.topics.latest_values` reads them without events or avro; each
    partition's end. ``rate``: at most that many records a second (``verify --continuous``:
    the topic is read at the rate MySQL is)."""
    began, done = time.monotonic(), 0
    ends: dict[int, int] = {}
    for keys, values, last in read_columns(kafka, topic):
        spill.add([canonical_key(k) for k in keys], values)
        for partition, offset in last.items():
            ends[partition] = offset + 1
        done += len(keys)
        if rate:
            time.sleep(max(0.0, done / rate - (time.monotonic() - began)))
    spill.close()
    return ends


def _join_half(out: Connection, topic_spill: Spill) -> None:
    """Join the buckets the parent asks for (None: none) and send back how many keys were
    equal, and the unmatched keys and leftover pairs as spills of one bucket."""
    try:
        request = out.recv()
    except EOFError:
        return
    if request is None:
        return
    table, buckets = request
    unmatched = Spill(table.folder, "unmatched-loader", 1)
    leftover = Spill(table.folder, "leftover-loader", 1)
    equal = join(table, topic_spill, lambda keys: unmatched.add(keys, [b""] * len(keys)),
                 lambda key, value: leftover.add([key], [value]), buckets)
    unmatched.close()
    leftover.close()
    out.send(("joined", equal, (unmatched, leftover)))


def _run(kafka: dict[str, Any], topic: str, spill: Spill, out: Connection,
         rate: float | None) -> None:
    try:
        ends = load(kafka, topic, spill, rate)
        out.send(("done", ends, spill))
        _join_half(out, spill)
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, which raises it
        try:
            out.send(("failed", exc, None))
        except Exception:  # noqa: BLE001 - an exception that does not pickle
            out.send(("failed", CdcIngestError(f"{type(exc).__name__}: {exc}"), None))
    finally:
        out.close()


class Loading:
    """The loading process of one topic: it reads the topic, then joins the buckets it is
    given while the caller joins the others (two CPUs for the join)."""

    def __init__(self, kafka: dict[str, Any], topic: str, spill: Spill,
                 rate: float | None = None) -> None:
        """``spill``: an empty spill to write (its folder the caller deletes); ``rate``:
        records a second at most (None: as fast as it goes)."""
        context = multiprocessing.get_context("spawn")
        self._pipe, theirs = context.Pipe(duplex=True)
        self._process = context.Process(target=_run, args=(kafka, topic, spill, theirs, rate),
                                        name=f"verify-load-{topic}", daemon=True)
        self._process.start()
        theirs.close()
        self._asked = False

    def _receive(self) -> tuple[str, Any, Any]:
        try:
            outcome, detail, more = self._pipe.recv()
        except EOFError:
            self._process.join(5)
            raise CdcIngestError("verify's topic reader exited without a result (exit "
                                 f"{self._process.exitcode})") from None
        if outcome == "failed":
            raise detail
        return outcome, detail, more

    def spill(self) -> tuple[Spill, dict[int, int]]:
        """Wait for the topic to be read; the spill written and each partition's end."""
        _, ends, spill = self._receive()
        return spill, ends

    def join(self, table: Spill, buckets: list[int]) -> None:
        """Have the process join ``buckets`` of ``table`` with the topic's (none: let it
        end); :meth:`joined` gives the outcome."""
        self._asked = bool(buckets)
        self._pipe.send((table, buckets) if buckets else None)

    def joined(self) -> tuple[int, tuple[Spill, Spill] | None]:
        """How many keys the process found equal, and its unmatched keys and leftover pairs
        (None: it was given no buckets)."""
        try:
            if not self._asked:
                return 0, None
            _, equal, spills = self._receive()
        finally:
            self._pipe.close()
            self._process.join()
        return equal, spills

    def stop(self) -> None:
        """End the process if it still runs (the check failed before it was needed)."""
        if self._process.is_alive():
            self._process.terminate()
            self._process.join()
