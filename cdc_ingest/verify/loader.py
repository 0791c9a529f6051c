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
from cdc_ingest.kafka.bulk import read_records
from cdc_ingest.verify.buckets import Spill
from cdc_ingest.verify.topics import canonical_key


def load(kafka: dict[str, Any], topic: str, spill: Spill, rate: float | None = None
         ) -> dict[int, int]:
    """Every committed record of ``topic`` added to ``spill`` (canonical key, value), as
    :func:`~cdc_ingest.verify.topics.latest_values` reads them without events or avro; each
    partition's end. ``rate``: at most that many records a second (``verify --continuous``:
    the topic is read at the rate MySQL is)."""
    began, done = time.monotonic(), 0
    ends: dict[int, int] = {}
    for records in read_records(kafka, topic):
        spill.add([canonical_key(r[2]) for r in records], [r[3] for r in records])
        for partition, offset, _, _ in records:
            ends[partition] = offset + 1
        done += len(records)
        if rate:
            time.sleep(max(0.0, done / rate - (time.monotonic() - began)))
    spill.close()
    return ends


def _run(kafka: dict[str, Any], topic: str, spill: Spill, out: Connection,
         rate: float | None) -> None:
    try:
        ends = load(kafka, topic, spill, rate)
        out.send(("done", ends, spill))
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, which raises it
        try:
            out.send(("failed", exc, None))
        except Exception:  # noqa: BLE001 - an exception that does not pickle
            out.send(("failed", CdcIngestError(f"{type(exc).__name__}: {exc}"), None))
    finally:
        out.close()


class Loading:
    """The loading process of one topic."""

    def __init__(self, kafka: dict[str, Any], topic: str, spill: Spill,
                 rate: float | None = None) -> None:
        """``spill``: an empty spill to write (its folder the caller deletes); ``rate``:
        records a second at most (None: as fast as it goes)."""
        context = multiprocessing.get_context("spawn")
        self._pipe, theirs = context.Pipe(duplex=False)
        self._process = context.Process(target=_run, args=(kafka, topic, spill, theirs, rate),
                                        name=f"verify-load-{topic}", daemon=True)
        self._process.start()
        theirs.close()

    def spill(self) -> tuple[Spill, dict[int, int]]:
        """Wait for the process; the spill it wrote and each partition's end."""
        try:
            outcome, detail, spill = self._pipe.recv()
        except EOFError:
            self._process.join(5)
            raise CdcIngestError("verify's topic reader exited without a result (exit "
                                 f"{self._process.exitcode})") from None
        finally:
            self._pipe.close()
            self._process.join()
        if outcome != "done":
            raise detail
        return spill, detail

    def stop(self) -> None:
        """End the process if it still runs (the check failed before it was needed)."""
        if self._process.is_alive():
            self._process.terminate()
            self._process.join()
