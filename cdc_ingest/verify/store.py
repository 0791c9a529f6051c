"""A sink topic's latest value per key, kept where verify's memory does not grow with it.

``verify`` compares every MySQL row with the last value the topic holds for its key, and then
reports the keys no row claimed (extra). Holding the topic in a dict cost about 430 bytes a
key (issue 45: 430-440 MB at 1M rows, so about 43 GB at 100M). :class:`DiskValues` keeps the
keys and values in an embedded SQLite database in a temporary folder instead: an ordered
on-disk B-tree from Python's standard library, with a page cache of a fixed size
(:data:`CACHE_KIB`), written without a journal (the file lives only as long as the check and
is deleted after). The topic is folded in batches (a tombstone deletes its key), the rows'
values are taken out in batches too (:meth:`DiskValues.take`), and what is left at the end is
the extra keys. :class:`MemoryValues` is the same interface over a dict, for small inputs and
the tests.

Which keys a table of a topic several tables share already claimed (to tell a key two shards
both hold) lives in the same store (:meth:`claim`).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator
from typing import Protocol

BATCH = 5_000  # keys per statement batch (SQLite takes 32,766 variables in one statement)
CACHE_KIB = 64 * 1024  # SQLite's page cache: the store's memory, whatever the topic's size


class Values(Protocol):
    # per partition, the offset after the last message folded in (where a later read of the
    # topic's newer messages starts)
    ends: dict[int, int]

    def put(self, key: bytes, value: bytes | None) -> None:
        """The topic's next message: ``value`` None (a tombstone) removes the key."""

    def __len__(self) -> int: ...

    def take(self, keys: Iterable[bytes]) -> dict[bytes, bytes]:
        """The values of those of ``keys`` the store holds, removed from it."""

    def remaining(self) -> Iterator[tuple[bytes, bytes]]:
        """What no row took (the extra keys)."""

    def claim(self, keys: Iterable[bytes], table: str) -> dict[bytes, str]:
        """Record ``table`` as the first to hold each of ``keys``; those another table
        claimed before, with that table."""

    def close(self) -> None: ...


class MemoryValues:
    """:class:`Values` over dicts."""

    def __init__(self, latest: dict[bytes, bytes] | None = None) -> None:
        self._latest = dict(latest or {})
        self._owner: dict[bytes, str] = {}
        self.ends: dict[int, int] = {}

    def put(self, key: bytes, value: bytes | None) -> None:
        if value is None:
            self._latest.pop(key, None)
        else:
            self._latest[key] = value

    def __len__(self) -> int:
        return len(self._latest)

    def take(self, keys: Iterable[bytes]) -> dict[bytes, bytes]:
        pop = self._latest.pop
        return {k: v for k in keys if (v := pop(k, None)) is not None}

    def remaining(self) -> Iterator[tuple[bytes, bytes]]:
        yield from list(self._latest.items())  # in the topic's order

    def claim(self, keys: Iterable[bytes], table: str) -> dict[bytes, str]:
        taken = {}
        for key in keys:
            first = self._owner.setdefault(key, table)
            if first != table:
                taken[key] = first
        return taken

    def close(self) -> None:
        self._latest.clear()
        self._owner.clear()


class DiskValues:
    """:class:`Values` in a SQLite file of a temporary folder (``directory``: where to make
    it; the system's temporary folder by default), deleted by :meth:`close`."""

    def __init__(self, directory: str | None = None) -> None:
        self._folder = tempfile.mkdtemp(prefix="cdc-ingest-verify-", dir=directory)
        self._db = open_db(os.path.join(self._folder, "values.db"))
        self._db.execute("CREATE TABLE latest (k BLOB PRIMARY KEY, v BLOB NOT NULL) "
                         "WITHOUT ROWID")
        self._db.execute("CREATE TABLE owner (k BLOB PRIMARY KEY, t TEXT NOT NULL) "
                         "WITHOUT ROWID")
        self._pending: dict[bytes, bytes | None] = {}
        self.ends: dict[int, int] = {}

    def put(self, key: bytes, value: bytes | None) -> None:
        self._pending[key] = value
        if len(self._pending) >= BATCH:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        db = self._db
        db.execute("BEGIN")
        db.executemany("DELETE FROM latest WHERE k = ?",
                       [(k,) for k, v in self._pending.items() if v is None])
        db.executemany("INSERT OR REPLACE INTO latest VALUES (?, ?)",
                       [(k, v) for k, v in self._pending.items() if v is not None])
        db.execute("COMMIT")
        self._pending.clear()

    def __len__(self) -> int:
        self._flush()
        return int(self._db.execute("SELECT count(*) FROM latest").fetchone()[0])

    def take(self, keys: Iterable[bytes]) -> dict[bytes, bytes]:
        self._flush()
        found: dict[bytes, bytes] = {}
        for batch in _batches(keys):
            marks = ",".join("?" * len(batch))
            found.update(self._db.execute(
                f"SELECT k, v FROM latest WHERE k IN ({marks})", batch))  # noqa: S608
            self._db.execute(f"DELETE FROM latest WHERE k IN ({marks})", batch)  # noqa: S608
        return found

    def remaining(self) -> Iterator[tuple[bytes, bytes]]:
        self._flush()
        yield from self._db.execute("SELECT k, v FROM latest ORDER BY k")

    def claim(self, keys: Iterable[bytes], table: str) -> dict[bytes, str]:
        taken: dict[bytes, str] = {}
        for batch in _batches(keys):
            marks = ",".join("?" * len(batch))
            taken.update((k, t) for k, t in self._db.execute(
                f"SELECT k, t FROM owner WHERE k IN ({marks})", batch)  # noqa: S608
                if t != table)
            self._db.executemany("INSERT OR IGNORE INTO owner VALUES (?, ?)",
                                 [(k, table) for k in batch])
        return taken

    def close(self) -> None:
        self._pending.clear()
        self._db.close()
        shutil.rmtree(self._folder, ignore_errors=True)


def open_db(path: str) -> sqlite3.Connection:
    """An SQLite file as the stores use it: no journal, no sync, a page cache of
    :data:`CACHE_KIB`."""
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    for pragma in ("journal_mode = OFF", "synchronous = OFF", "temp_store = FILE",
                   "locking_mode = EXCLUSIVE", f"cache_size = -{CACHE_KIB}"):
        db.execute(f"PRAGMA {pragma}")
    return db


def _batches(keys: Iterable[bytes]) -> Iterator[list[bytes]]:
    batch: list[bytes] = []
    for key in keys:
        batch.append(key)
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch
