"""The transaction metadata contract, spelled once (``sink.transaction-metadata.topic``;
docs/output-contract.md, "Transaction metadata", and docs/changelog-format.md): what capture,
the sink and the transaction reader (cdc_ingest.transactions) write and read of it.

* the **headers** every sink message of a MySQL transaction carries (:data:`ID_HEADER`,
  :data:`TOTAL_ORDER_HEADER`, :data:`COLLECTION_ORDER_HEADER`), and :func:`tx_headers`: a
  row record's headers, read from its changelog value (by the sink, per record);
* the **TX record**, a keyless changelog record capture writes into every partition at a
  MySQL transaction's end (:func:`tx_value`; :data:`TX_VALUE_START` tells one from the other
  records; :data:`decode_tx`);
* the **part records** a sink task commits to ``<prefix>.tx-parts`` with its messages, and
  the sink's driver adds up (:func:`part_values`, :data:`decode_part`);
* the **BEGIN and END** records of the metadata topic, as Debezium writes them
  (:func:`begin_end`, by the sink's driver; :func:`decode_end`, by the transaction reader).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import msgspec
import orjson

from cdc_ingest.model.changelog import CHANGELOG_VERSION, Op

ID_HEADER = "transaction.id"
TOTAL_ORDER_HEADER = "transaction.total_order"
COLLECTION_ORDER_HEADER = "transaction.data_collection_order"

# -- a row record's transaction, read from its changelog value -----------------------------

# How model/changelog.value_tail spells a row record's last fields (ts_ms, table_delta when
# the metadata is on, pos); tests/unit/test_transaction_metadata_contract.py pins them to
# every encoder.
_POS = b',"pos":"'
_TS = b',"ts_ms":'
_DELTA = b',"table_delta":'
_SNAPSHOT = b"snapshot"  # changelog.SNAPSHOT_POS


def tx_headers(value: bytes) -> list[tuple[str, bytes]] | None:
    """The ``transaction.*`` headers of a row record's messages, from the record's value;
    None for a row of no source transaction (a snapshot row). Called per record, so it reads
    the bytes instead of decoding them: the envelope's ``pos`` is its last field and ``ts_ms``
    (with ``table_delta``) comes right before it (:func:`~cdc_ingest.model.changelog.
    value_tail`), so searching from the end finds them and never a column of the row (whose
    names and strings come earlier). Row records only: a DDL record's ``pos`` is not last."""
    at = value.rfind(_POS)
    pos = value[at + len(_POS):-2]
    if at < 0 or pos == _SNAPSHOT:
        return None
    hash_at = pos.rfind(b"#")
    number = pos[hash_at + 1:]
    table_no = number
    ts_at = value.rfind(_TS, 0, at)
    delta_at = value.find(_DELTA, ts_at, at)
    if delta_at >= 0:
        table_no = b"%d" % (int(number) + int(value[delta_at + len(_DELTA):at]))
    return [(ID_HEADER, pos[:hash_at]), (TOTAL_ORDER_HEADER, number),
            (COLLECTION_ORDER_HEADER, table_no)]


# -- the TX record -------------------------------------------------------------------------

# how a TX record's value starts, and no other record's (their "op" is another)
TX_VALUE_START = b'{"v":%d,"op":"%b",' % (CHANGELOG_VERSION, Op.TX.value.encode())


def tx_value(tx_id: str, partitions: int, ts_ms: int) -> bytes:
    """The end of a MySQL transaction: a keyless record in every changelog partition after
    the transaction's last row, in the capture transaction that commits the position past
    it. ``partitions``: how many partitions got it; ``ts_ms``: its commit time."""
    return orjson.dumps({"v": CHANGELOG_VERSION, "op": Op.TX.value, "id": tx_id,
                         "partitions": partitions, "ts_ms": ts_ms})


class TxRecord(msgspec.Struct):
    """A TX record as the sink reads it."""

    id: str
    partitions: int
    ts_ms: int


decode_tx = msgspec.json.Decoder(TxRecord).decode


# -- part records --------------------------------------------------------------------------

PART_VERSION = 1
PART_ENTRIES = 2000  # MySQL transactions per part record (each entry is well under 300 bytes)

# One MySQL transaction in a part record: (id, messages the sink transaction wrote of it per
# sink topic, how many partitions its TX record went to (0: this partition's TX record was not
# passed), its commit time (0: likewise), the changelog offset of its last record seen).
PartEntry = tuple[str, dict[str, int], int, int, int]


class PartRecord(msgspec.Struct):
    """What one sink transaction of the task of changelog ``partition`` wrote per MySQL
    transaction, in the order the transactions first appear there (commit order)."""

    v: int
    partition: int
    tx: list[PartEntry]


def part_values(partition: int, entries: Sequence[PartEntry]) -> list[bytes]:
    """The part records of ``entries`` (none: no record), at most :data:`PART_ENTRIES`
    transactions each, so one stays far below a topic's message limit however small the
    transactions are."""
    return [orjson.dumps({"v": PART_VERSION, "partition": partition,
                          "tx": entries[i:i + PART_ENTRIES]})
            for i in range(0, len(entries), PART_ENTRIES)]


decode_part = msgspec.json.Decoder(PartRecord).decode


# -- BEGIN and END -------------------------------------------------------------------------


def begin_end(tx_id: str, counts: dict[str, int], ts_ms: int) -> tuple[bytes, bytes, bytes]:
    """(key, BEGIN, END) of a transaction as Debezium writes them; ``counts``: the messages
    written per sink topic."""
    key = orjson.dumps({"id": tx_id})
    begin = orjson.dumps({"status": "BEGIN", "id": tx_id, "event_count": None,
                          "data_collections": None, "ts_ms": ts_ms})
    end = orjson.dumps({
        "status": "END", "id": tx_id, "event_count": sum(counts.values()),
        "data_collections": [{"data_collection": topic, "event_count": n}
                             for topic, n in sorted(counts.items())],
        "ts_ms": ts_ms})
    return key, begin, end


class MetadataRecordError(ValueError):
    """A metadata topic record that breaks the contract (the message says how)."""


@dataclass(frozen=True, slots=True)
class EndRecord:
    """An END record: the transaction's id, commit time, messages in all and per topic."""

    id: str
    ts_ms: int
    event_count: int
    counts: dict[str, int]


def decode_end(value: bytes) -> EndRecord | None:
    """The END record in a metadata topic record's ``value``; None for a BEGIN or another
    status. Raises :class:`MetadataRecordError` for a value that is not a JSON record, or an
    END without a field the contract has."""
    try:
        record = orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise MetadataRecordError(f"not a JSON record ({exc})") from None
    if not isinstance(record, dict) or record.get("status") != "END":
        return None
    try:
        counts: dict[str, int] = {}
        for entry in record["data_collections"] or []:
            topic = str(entry["data_collection"])
            counts[topic] = counts.get(topic, 0) + int(entry["event_count"])
        return EndRecord(str(record["id"]), int(record.get("ts_ms") or 0),
                         int(record["event_count"]), counts)
    except (KeyError, TypeError, ValueError) as exc:
        raise MetadataRecordError(
            f"an END record without {exc} as the contract has it: "
            f"{value[:300].decode(errors='replace')}") from None
