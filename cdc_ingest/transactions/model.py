"""What the transaction reader hands out, and the contract's pieces it parses: the
``transaction.*`` headers of a sink message and the END records of the metadata topic
(docs/output-contract.md, "Transaction metadata"; spelled in model/transaction_metadata.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from cdc_ingest.errors import CdcIngestError
from cdc_ingest.kafka.consumer import Message
from cdc_ingest.model.transaction_metadata import (
    COLLECTION_ORDER_HEADER,
    ID_HEADER,
    TOTAL_ORDER_HEADER,
    MetadataRecordError,
    decode_end,
)


class TransactionContractError(CdcIngestError):
    """The topics break the transaction metadata contract: a malformed header or END record,
    or more messages with a transaction's id than its END counts. Nothing partial is handed
    out; the error names the transaction and what was read."""


@dataclass(frozen=True, slots=True)
class TxMessage:
    """One sink message of a MySQL transaction, with its ``transaction.*`` numbers."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None  # None: a tombstone
    headers: tuple[tuple[str, bytes], ...]
    total_order: int
    data_collection_order: int
    timestamp_ms: int = 0


@dataclass(frozen=True, slots=True)
class Standalone:
    """A sink message of no source transaction (no ``transaction.id`` header): a snapshot row,
    a DDL's tombstone. Handed out when read; its order relative to transactions is not defined
    beyond its own partition's order."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    timestamp_ms: int = 0


@dataclass(frozen=True, slots=True)
class Transaction:
    """One whole MySQL transaction: every message its END counts, in the transaction's order
    (``total_order``, then the order read within one topic-partition).

    ``id``: the GTID (MariaDB's ``domain-server-sequence``, or ``file:pos`` without GTIDs);
    ``ts_ms``: its commit time in the binlog; ``data_collections``: sink topic -> messages;
    ``end_offset``: the END record's offset in the metadata topic."""

    id: str
    ts_ms: int
    event_count: int
    data_collections: dict[str, int]
    messages: list[TxMessage]
    end_offset: int = -1

    def by_topic(self) -> dict[str, list[TxMessage]]:
        """The messages per sink topic, each list in the transaction's order."""
        out: dict[str, list[TxMessage]] = {}
        for m in self.messages:
            out.setdefault(m.topic, []).append(m)
        return out


Item = Transaction | Standalone


@dataclass(frozen=True, slots=True)
class End:
    """An END record: the transaction's id, offset in the metadata topic, counts per topic."""

    id: str
    offset: int
    ts_ms: int
    event_count: int
    counts: dict[str, int] = field(default_factory=dict)


def header(m: Message, name: str) -> bytes | None:
    for k, v in m.headers:
        if k == name:
            return v
    return None


def transaction_id(m: Message) -> str | None:
    raw = header(m, ID_HEADER)
    return None if raw is None else raw.decode(errors="replace")


def tx_message(m: Message, tx_id: str) -> TxMessage:
    """``m`` with its ``transaction.*`` numbers; a missing or malformed number is an error."""
    return TxMessage(m.topic, m.partition, m.offset, m.key, m.value, m.headers,
                     _number(m, tx_id, TOTAL_ORDER_HEADER),
                     _number(m, tx_id, COLLECTION_ORDER_HEADER), m.timestamp_ms)


def standalone(m: Message) -> Standalone:
    return Standalone(m.topic, m.partition, m.offset, m.key, m.value, m.headers,
                      m.timestamp_ms)


def _number(m: Message, tx_id: str, name: str) -> int:
    raw = header(m, name)
    if raw is not None and raw.strip().isdigit():
        return int(raw)
    shown = "missing" if raw is None else repr(raw)
    raise TransactionContractError(
        f"{m.topic} partition {m.partition} offset {m.offset} (transaction {tx_id}): "
        f"header {name} is {shown}, not a number")


def parse_end(m: Message) -> End | None:
    """The END record in ``m``; None for a BEGIN, a tombstone or another status."""
    if m.value is None:
        return None
    try:
        end = decode_end(m.value)
    except MetadataRecordError as exc:
        raise TransactionContractError(
            f"{m.topic} partition {m.partition} offset {m.offset}: {exc}") from None
    if end is None:
        return None
    return End(end.id, m.offset, end.ts_ms, end.event_count, end.counts)
