"""A sink topic folded into a store on disk by a process of its own, while verify reads MySQL.

:func:`start_loading` starts it (spawned: a fresh interpreter, nothing of the parent's
Kafka or MySQL clients); :meth:`Loading.store` waits for it and opens the store it left
(:meth:`~cdc_ingest.verify.store.DiskValues.detach`), with each partition's end. A failure
in the process is raised in the caller.
"""

from __future__ import annotations

import multiprocessing
import time
from multiprocessing.connection import Connection
from typing import Any

from cdc_ingest.errors import CdcIngestError
from cdc_ingest.kafka.bulk import read_records
from cdc_ingest.verify.store import DiskValues
from cdc_ingest.verify.topics import canonical_key


def load(kafka: dict[str, Any], topic: str, directory: str | None = None,
         rate: float | None = None) -> DiskValues:
    """Every committed record of ``topic`` folded into a new store in ``directory`` (as
    :func:`~cdc_ingest.verify.topics.latest_values` without events or avro); ``rate``: at
    most that many records a second (``verify --continuous``: the topic is read at the rate
    MySQL is)."""
    latest = DiskValues(directory)
    began, done = time.monotonic(), 0
    try:
        put, ends = latest.put, latest.ends
        for records in read_records(kafka, topic):
            for partition, offset, key, value in records:
                put(canonical_key(key), value)
                ends[partition] = offset + 1
            done += len(records)
            if rate:
                time.sleep(max(0.0, done / rate - (time.monotonic() - began)))
    except BaseException:
        latest.close()
        raise
    return latest


def _run(kafka: dict[str, Any], topic: str, directory: str, out: Connection,
         rate: float | None) -> None:
    try:
        latest = load(kafka, topic, directory, rate)
        out.send(("done", latest.ends, latest.detach()))
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, which raises it
        try:
            out.send(("failed", exc, None))
        except Exception:  # noqa: BLE001 - an exception that does not pickle
            out.send(("failed", CdcIngestError(f"{type(exc).__name__}: {exc}"), None))
    finally:
        out.close()


class Loading:
    """The loading process of one topic."""

    def __init__(self, kafka: dict[str, Any], topic: str, directory: str,
                 rate: float | None = None) -> None:
        """``directory``: where the store is made (the caller deletes it); ``rate``: records
        a second at most (None: as fast as it goes)."""
        context = multiprocessing.get_context("spawn")
        self._pipe, theirs = context.Pipe(duplex=False)
        self._process = context.Process(target=_run, args=(kafka, topic, directory, theirs, rate),
                                        name=f"verify-load-{topic}", daemon=True)
        self._process.start()
        theirs.close()

    def store(self) -> DiskValues:
        """Wait for the process; the store it made (the caller closes it)."""
        try:
            outcome, detail, folder = self._pipe.recv()
        except EOFError:
            self._process.join(5)
            raise CdcIngestError("verify's topic reader exited without a result (exit "
                                 f"{self._process.exitcode})") from None
        finally:
            self._pipe.close()
            self._process.join()
        if outcome != "done":
            raise detail
        latest = DiskValues(adopt=folder)
        latest.ends.update(detail)
        return latest

    def stop(self) -> None:
        """End the process if it still runs (the check failed before it was needed)."""
        if self._process.is_alive():
            self._process.terminate()
            self._process.join()
