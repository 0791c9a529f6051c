"""The writer's input: one changelog partition's records, in offset order, as columns.

A sink task reads its range itself (sink/task/range_read.py) and the head start reads live
(sink/driver/head_start.py); both hand the writer :data:`Columns` batches through
:class:`ChangelogBatches`, which also turns Arrow record batches of ``partition``,
``offset``, ``key``, ``value`` into the same lists in bulk, with no object per row. It is
also an iterable of :class:`ChangelogRow`, the form any writer can take. A Python worker
imports this module without the driver's (the pydantic config models, the Spark session).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from cdc_ingest.errors import SinkError

if TYPE_CHECKING:
    import pyarrow as pa

# One batch of records: offsets (ascending), keys (None for DDL records), values.
Columns = tuple[list[int], list[bytes | None], list[bytes]]



@runtime_checkable
class Records(Protocol):
    """One changelog partition's records as the writer's columns, read once: a task's range
    (sink/task/range_read.py), the head start's live read (sink/driver/head_start.py), or
    Arrow record batches (:class:`ChangelogBatches`)."""

    def columns(self) -> Iterator[tuple[int, Columns]]: ...


class ChangelogRow(NamedTuple):
    """One changelog record (key and value as ``bytes``)."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes


class ChangelogBatches:
    """One task's changelog records as Arrow record batches (``partition``, ``offset``,
    ``key``, ``value``).

    Read once: either :meth:`columns` or iteration.
    """

    def __init__(self, batches: Iterable[pa.RecordBatch]) -> None:
        self._batches = iter(batches)

    def columns(self) -> Iterator[tuple[int, Columns]]:
        """Per non-empty batch: its changelog partition and its columns as lists.

        Raises :class:`SinkError` for a batch that mixes partitions: one task must write one
        partition's range under that partition's transactional id.
        """
        for batch in self._batches:
            if not batch.num_rows:
                continue
            partitions = batch.column(0).unique()
            if len(partitions) != 1:
                raise SinkError(
                    f"one sink task got rows of changelog partitions {partitions.to_pylist()}"
                )
            offsets: list[int] = batch.column(1).to_pylist()
            keys: list[bytes | None] = batch.column(2).to_pylist()
            values: list[bytes] = batch.column(3).to_pylist()
            yield partitions[0].as_py(), (offsets, keys, values)

    def __iter__(self) -> Iterator[ChangelogRow]:
        return changelog_rows(self)


def changelog_rows(records: Records) -> Iterator[ChangelogRow]:
    """``records`` one :class:`ChangelogRow` at a time."""
    for partition, (offsets, keys, values) in records.columns():
        for offset, key, value in zip(offsets, keys, values, strict=True):
            yield ChangelogRow(partition, offset, key, value)


def row_columns(rows: Iterable[Any], size: int = 10_000) -> Iterator[tuple[int, Columns]]:
    """Rows with ``partition``, ``offset``, ``key``, ``value`` (in offset order) as batches
    of :data:`Columns`, like :meth:`ChangelogBatches.columns`."""
    offsets: list[int] = []
    keys: list[bytes | None] = []
    values: list[bytes] = []
    partition: int | None = None
    for row in rows:
        if partition is None:
            partition = int(row.partition)
        elif row.partition != partition:
            raise SinkError(
                f"one sink task got rows of changelog partitions {partition} and {row.partition}"
            )
        offsets.append(int(row.offset))
        keys.append(None if row.key is None else bytes(row.key))
        values.append(bytes(row.value))
        if len(offsets) >= size:
            yield partition, (offsets, keys, values)
            offsets, keys, values = [], [], []
    if offsets and partition is not None:
        yield partition, (offsets, keys, values)

