"""The transaction metadata topic's writer: BEGIN and END per MySQL transaction, exactly once
(docs/output-contract.md, "Transaction metadata"; the tasks' side: sink/task/metadata_parts.py).

Runs in the sink's driver, at start and after every micro-batch. It reads the part records
the tasks committed since it last did (read_committed, from the offset its state names), adds
each MySQL transaction's messages up per sink topic, and counts the partitions whose task has
passed the transaction's ``TX`` record. A transaction is whole once all of them have: every
partition holds its rows before its ``TX`` record, and a task commits a part with the messages
it describes. Then its BEGIN and END go to the metadata topic. Transactions become whole in
commit order (each partition holds the ``TX`` records in that order, and each partition's parts
are read in the order they were committed), so ENDs are written in commit order.

Exactly once: the records written, and the state that says how far the parts are read and what
is known of the transactions not yet whole, go in one Kafka transaction of our own
transactional id (a second driver fences the first). The state is a record in a compacted
topic of its own (``<prefix>.tx-state``), which nothing else writes: in a topic another
producer writes transactionally (capture's offsets topic), that producer's open transaction
holds back a read_committed read (the last stable offset) and can hide a newer state, and an
open one of ours would hide capture's newest position from capture the same way. A restart
goes on from the last committed state.
"""

from __future__ import annotations

import _thread
import logging
import threading
from typing import TYPE_CHECKING, Any

import orjson

from cdc_ingest.errors import SinkError
from cdc_ingest.kafka import TopicAdmin, TopicSpec, read_topic
from cdc_ingest.kafka.consumer import OffsetGone, PartitionReader
from cdc_ingest.model.names import tx_metadata_transactional_id, tx_parts_topic, tx_state_topic
from cdc_ingest.model.transaction_metadata import PartRecord, begin_end, decode_part
from cdc_ingest.sink.task.record_loop import BatchCallback, Counters
from cdc_ingest.sink.transaction import Send, SinkTransaction

if TYPE_CHECKING:
    from cdc_ingest.config import PipelineDef


log = logging.getLogger(__name__)

STATE_KEY = b'{"sink":"transaction-metadata"}'
STATE_VERSION = 1
IDLE_CATCH_UP_S = 0.2  # how often the background thread looks for new parts


class Tally:
    """The transactions not yet whole, from the parts read in the order they were committed,
    and ``cut``: per changelog partition, the offset of the ``TX`` record of the last
    transaction made whole (transactions become whole in commit order, so everything of
    that partition at or below it belongs to transactions already whole).

    The state that survives a restart is only ``cut`` and the parts offset to read again
    from (:meth:`restart_offset`: the first part of a transaction not yet whole): reading
    from there rebuilds the open transactions, and an entry at or below its partition's cut
    belongs to one already whole, so it is left out. The state's size depends on the number
    of partitions only, never on how many transactions are open."""

    def __init__(self, cut: dict[int, int] | None = None) -> None:
        self.cut: dict[int, int] = dict(cut or {})
        # id -> [partitions passed, partitions there are, messages per topic, commit time,
        #        {partition: its TX record's offset}, the parts offset of its first part]
        self.open: dict[str, list[Any]] = {}

    def add(self, part: PartRecord, offset: int) -> list[tuple[str, dict[str, int], int]]:
        """The part record at parts ``offset``; returns the transactions it made whole, in
        commit order, with their messages per topic and commit time."""
        whole = []
        partition = part.partition
        cut = self.cut.get(partition, -1)
        for tx_id, counts, partitions, ts, at in part.tx:
            if at <= cut:
                continue  # of a transaction already whole (a part read again after a restart)
            entry = self.open.get(tx_id)
            if entry is None:
                entry = self.open[tx_id] = [0, 0, {}, 0, {}, offset]
            seen = entry[2]
            for topic, n in counts.items():
                seen[topic] = seen.get(topic, 0) + n
            if partitions:
                entry[0] += 1
                entry[1], entry[3] = partitions, ts
                entry[4][partition] = at
                if entry[0] >= entry[1]:
                    del self.open[tx_id]
                    self.cut.update(entry[4])
                    whole.append((tx_id, seen, entry[3]))
        return whole

    def restart_offset(self, next_offset: int) -> int:
        """Where a restart reads the parts again from: the first part of a transaction not
        yet whole, else ``next_offset`` (the next part not read yet)."""
        return min((entry[5] for entry in self.open.values()), default=next_offset)


class TxMetadataWriter:
    """Started once per sink run (:meth:`start`); then catches up in a thread of its own,
    woken by the end of every micro-batch (:meth:`after`) and every :data:`IDLE_CATCH_UP_S`,
    so the END of a batch's last transaction is written even when no batch follows (a task's
    commit markers can become visible just after the batch ends), and no batch waits for it.
    A failure there is logged and stops the sink (the main thread is interrupted; the next
    batch fails too)."""

    def __init__(self, kafka: dict[str, Any], parts_topic: str, metadata_topic: str,
                 state_topic: str, transactional_id: str, replication: int = -1) -> None:
        self._kafka = kafka
        self._parts = parts_topic
        self._metadata = metadata_topic
        self._state_topic = state_topic
        self._tx = SinkTransaction(kafka, transactional_id)
        self._replication = replication
        self._next = 0  # the next parts offset to read
        self._tally = Tally()
        self._reader: PartitionReader | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()  # a batch ended: look for its parts now
        self._failure: Exception | None = None
        self._thread: threading.Thread | None = None
        self.written = 0  # transactions whose BEGIN and END this writer wrote

    def start(self) -> None:
        """Create the topics it needs, fence an older writer, load the committed state,
        catch up, and start catching up in the background."""
        admin = TopicAdmin(self._kafka)
        admin.ensure_all([TopicSpec(self._parts, 1, self._replication),
                          TopicSpec(self._metadata, 1, self._replication),
                          TopicSpec(self._state_topic, 1, self._replication,
                                    {"cleanup.policy": "compact"})])
        # Fencing completes the last writer's transaction (committed or aborted); the state
        # topic has no other writer, so read to its true end (settled) nothing newer exists.
        self._tx.register()
        state = read_state(self._kafka, self._state_topic)
        if state is not None:
            self._next = int(state["next"])
            self._tally = Tally({int(p): int(at) for p, at in state["cut"].items()})
        log.info("transaction metadata: %s, parts read again from offset %d",
                 self._metadata, self._next)
        try:
            self._reader = PartitionReader(self._kafka, self._parts, 0, self._next)
        except OffsetGone as exc:
            raise self._gone(exc) from exc
        self.catch_up()
        self._thread = threading.Thread(target=self._run, name="tx-metadata", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(IDLE_CATCH_UP_S)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self.catch_up()
            except Exception as exc:
                self._failure = exc
                log.exception("writing the transaction metadata failed; stopping the sink")
                _thread.interrupt_main()
                return

    def catch_up(self) -> int:
        """Read the parts committed since the last call; write the BEGIN and END of every
        transaction they made whole, with the new state, in one Kafka transaction. Returns
        how many transactions it wrote."""
        with self._lock:
            assert self._reader is not None, "start() first"
            try:
                parts = self._reader.available()
            except OffsetGone as exc:
                raise self._gone(exc) from exc
            if not parts:
                return 0
            records = []
            for msg in parts:
                if msg.value is None:
                    continue
                for tx_id, counts, ts in self._tally.add(decode_part(msg.value), msg.offset):
                    if counts:  # a transaction the sink wrote nothing of gets no records
                        records.append(begin_end(tx_id, counts, ts))
            self._next = parts[-1].offset + 1
            self._write(records)
            self.written += len(records)
            if records:
                log.debug("BEGIN and END of %d MySQL transaction(s) written to %s",
                          len(records), self._metadata)
            return len(records)

    def _write(self, records: list[tuple[bytes, bytes, bytes]]) -> None:
        """One transaction: the BEGIN and END records, and the state a restart goes on from."""
        def fill(send: Send) -> tuple[None, None]:
            for key, begin, end in records:
                send(self._metadata, begin, key, partition=0)
                send(self._metadata, end, key, partition=0)
            state = {"v": STATE_VERSION, "next": self._tally.restart_offset(self._next),
                     "cut": {str(p): at for p, at in self._tally.cut.items()}}
            send(self._state_topic, orjson.dumps(state), STATE_KEY)
            return None, None

        self._tx.write(fill)

    def _gone(self, exc: OffsetGone) -> SinkError:
        return SinkError(
            f"the transaction metadata's parts topic {self._parts} no longer holds offset "
            f"{self._next} ({exc}): it was deleted by retention before it was read, so the "
            "counts of the MySQL transactions it described are lost and no END can be "
            "written for them exactly. Nothing was written. Fix: raise the topic's "
            "retention.ms (its records are small) so it cannot happen again; to go on, start "
            "the pipeline under a new pipeline.name, whose metadata starts afresh")

    def after(self, on_batch: BatchCallback | None) -> BatchCallback:
        """The sink job's per-batch callback: wake the writer (the batch does not wait for
        it), then ``on_batch``. A writer that failed fails the batch."""
        def done(batch_id: int, results: list[Counters]) -> None:
            if self._failure is not None:
                raise SinkError(f"writing the transaction metadata to {self._metadata} "
                                f"failed: {self._failure}") from self._failure
            self._wake.set()
            if on_batch is not None:
                on_batch(batch_id, results)
        return done

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(60)
        with self._lock:
            if self._reader is not None:
                self._reader.close()
            self._tx.close()


def read_state(kafka: dict[str, Any], topic: str) -> dict[str, Any] | None:
    """The last state a writer committed to ``topic`` (read to its settled end), or None."""
    state = None
    for msg in read_topic(kafka, topic, settled=True):
        if msg.key == STATE_KEY and msg.value is not None:
            state = orjson.loads(msg.value)
    return state


def tx_metadata_writer(defn: PipelineDef) -> TxMetadataWriter | None:
    """The pipeline's writer of BEGIN and END, or None when the metadata is off."""
    topic = defn.sink.sink_transaction_metadata_topic
    if not topic:
        return None
    prefix = defn.transactional_id_prefix
    return TxMetadataWriter(defn.kafka_config(), tx_parts_topic(prefix), topic,
                            tx_state_topic(prefix), tx_metadata_transactional_id(prefix),
                            defn.sink.topic_replication_factor or -1)
