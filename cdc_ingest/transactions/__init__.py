"""Whole MySQL transactions out of a pipeline's sink topics, in commit order.

With ``sink.transaction-metadata.topic`` set, every sink message of a MySQL transaction
carries ``transaction.id`` / ``transaction.total_order`` / ``transaction.data_collection_order``
headers, and the metadata topic holds a BEGIN and an END record per transaction, in commit
order, the END counting the messages per sink topic (docs/output-contract.md, "Transaction
metadata"). :class:`TransactionReader` reads both ``read_committed`` and hands out:

- :class:`Transaction`: ``id`` (the GTID), ``ts_ms`` (its binlog commit time), ``event_count``,
  ``data_collections`` (sink topic -> messages), ``messages`` (:class:`TxMessage`, in the
  transaction's order: ``total_order``, then the order read within one topic-partition) and
  ``by_topic()``. Only when its END has been read and every topic's messages are all read;
  in END order (a whole transaction waits for an earlier one that is not whole yet); never a
  part of one.
- :class:`Standalone`: a message without ``transaction.id`` (snapshot rows, the tombstones a
  DDL writes), when read. Its order relative to transactions is not defined beyond its own
  partition's order.

Resuming: with a ``group_id``, :meth:`TransactionReader.commit` commits (synchronously) what
has been handed out; a reader of the same group started later goes on with the next item,
nothing handed out twice and nothing lost. The commits are ordinary consumer-group offsets
with a metadata string (cdc_ingest/transactions/resume.py). Without a group nothing is
committed and every start reads from the beginning.

Example::

    from cdc_ingest.transactions import Transaction, TransactionReader

    reader = TransactionReader({"bootstrap.servers": "kafka:9092"},
                               ["shop.orders", "shop.order_lines"], "shop.transactions",
                               group_id="order-totals")
    with reader:
        for item in reader:
            if isinstance(item, Transaction):
                apply(item.by_topic())       # every row of the MySQL transaction
            else:
                apply_one(item)              # a snapshot row or a DDL's tombstone
            reader.commit()

Memory is not bounded: messages are held until their transaction is whole (a warning past
100,000 held messages).
"""

from cdc_ingest.transactions.model import (
    Item,
    Standalone,
    Transaction,
    TransactionContractError,
    TxMessage,
)
from cdc_ingest.transactions.reader import TransactionReader

__all__ = [
    "Item",
    "Standalone",
    "Transaction",
    "TransactionContractError",
    "TransactionReader",
    "TxMessage",
]
