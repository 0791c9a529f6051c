"""What a format asks of the world, handed to it by its caller: the typed layout a changelog
row names (the schema topic, sink/task/layouts.py) and, for Avro, the registry's schema id of a
codec (registry/avro_subjects.py). Keeps the formats free of I/O."""

from __future__ import annotations

from typing import Any, Protocol

from cdc_ingest.formats.avro_schemas import RowCodec


class Layouts(Protocol):
    def columns(self, layout: str | None, table: str, pos: str) -> list[dict[str, Any]]:
        """The columns of ``layout`` (``[{"name","type","nullable","default","comment"}]``);
        ``table`` and ``pos`` name the change that asks, for the error."""
        ...

    def timestamps(self, db: str, table: str) -> frozenset[bytes]:
        """The columns of ``db.table`` that are timestamps in any of its typed layouts."""
        ...


class SchemaIds(Protocol):
    def schema_id(self, side: str, topic: str, codec: RowCodec, table: str, pos: str,
                  key_free: bool) -> int:
        """The registry's id of ``codec``'s schema under ``side`` (``key``/``value``) of
        ``topic``, registered when new; ``key_free``: the table's keys were just emptied, so
        its key schema may change."""
        ...
