"""The rows of a MySQL ``PARTIAL_UPDATE_ROWS_EVENT`` (``binlog_row_value_options=PARTIAL_JSON``)
as full before and after images.

Each row is a before image (full, as ``binlog_row_image=FULL`` logs it), then the after image,
which starts with ``value_options`` (a packed integer); when its bit 1 (PARTIAL_JSON_UPDATES)
is set, a bitmap follows with one bit per JSON column of the after image (least significant
bit first): a set bit means that column's value is a diff against the before image (see
:mod:`cdc_ingest.capture.json_diff`), not a document. Then the usual null bitmap and values.

Each image is read by the row decoder capture uses for ordinary rows (the compiled plan, or the
reference with ``CDC_INGEST_DECODER=python``), JSON kept as binary until each document is
read; a diff's untouched parts are rendered by the compiled JSON reader too.
"""

from __future__ import annotations

from typing import Any

from cdc_ingest.capture.binlog_schema import FieldType, JsonText, TableSchema
from cdc_ingest.capture.decoder import RowDecoder, RowPair, compile_decoder, decoder_kind
from cdc_ingest.capture.json_diff import apply_json_diff
from cdc_ingest.capture.mysql_json import Compiled, json_text
from cdc_ingest.capture.plan import compile_plan, compiled_json_reader
from cdc_ingest.mysql.packed import packed_int

PARTIAL_JSON_UPDATES = 1


class PartialJsonError(ValueError):
    """A diff that cannot be applied exactly: ``column`` names the column."""

    def __init__(self, column: str, cause: Exception) -> None:
        super().__init__(f"column {column}: {cause}")
        self.column = column
        self.cause = cause


def _keep_binary(data: bytes) -> bytes:
    return bytes(data)


class PartialRows:
    """Decodes partial update events, one image decoder per table layout."""

    def __init__(self, json_text: JsonText = json_text) -> None:
        """``json_text`` reads the documents that are not diffs (``capture_json_text``)."""
        self._decoders: dict[tuple[object, ...], RowDecoder] = {}
        self._text = json_text
        self._compiled = decoder_kind() == "compiled"
        self._fast: Compiled | None = compiled_json_reader() if self._compiled else None

    def decode(self, schema: TableSchema, raw: bytes, off: int, end: int) -> list[RowPair]:
        decode = self._decoders.get(schema.signature)
        if decode is None:
            if self._compiled:
                decode = compile_plan(schema, _keep_binary).decode  # type: ignore[arg-type]
            else:
                decode = compile_decoder(schema, _keep_binary)  # type: ignore[arg-type]
            self._decoders[schema.signature] = decode
        json_columns = [i for i, c in enumerate(schema.columns) if c.type == FieldType.JSON]
        rows: list[RowPair] = []
        while off < end:
            before, off = decode(raw, off)
            options, off = packed_int(raw, off)
            partial = 0
            if options & PARTIAL_JSON_UPDATES:
                width = (len(json_columns) + 7) // 8
                partial = int.from_bytes(raw[off:off + width], "little")
                off += width
            after, off = decode(raw, off)
            for bit, i in enumerate(json_columns):
                old, new = before[i], after[i]
                before[i] = self._document(old)
                if partial >> bit & 1:
                    after[i] = self._apply(schema, i, old, new)
                else:
                    after[i] = self._document(new)
            rows.append((before, after))
        return rows

    def _document(self, value: Any) -> Any:
        return None if value is None else self._text(value)

    def _apply(self, schema: TableSchema, i: int, old: Any, diff: Any) -> str:
        column = schema.columns[i].name
        if old is None or diff is None:
            raise PartialJsonError(column, ValueError(
                "a partial JSON update of a NULL document"))
        try:
            return apply_json_diff(old, diff, self._fast)
        except ValueError as exc:
            raise PartialJsonError(column, exc) from exc
