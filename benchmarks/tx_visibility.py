"""How long a read_committed reader of several partitions can see part of a Kafka transaction.

    python benchmarks/tx_visibility.py [--transactions 1000] [--rate 20] [--out FILE]

A transactional confluent-kafka producer writes transactions that each put one record into
each of 3 partitions of a fresh topic and commit; 3 read_committed consumers (one per
partition, threads of this process) record the wall time each record becomes readable. Per
transaction, the skew is the last partition's visibility minus the first's: how long a reader
of all three could hold part of the transaction and not the rest. Two runs: paced at
``--rate`` transactions/s, and back to back (the next transaction begins when the previous
commit returns). The broker is cdc_ingest.services' Kafka (a private one, or
``--kafka-bootstrap``). ``tx_metadata.py`` runs the same measurement on its own broker.
See benchmarks/README.md ("tx_metadata.py").
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import shutil
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _common import (
    REPO,
    machine_info,
    percentile,
    setup_logging,
    system_cpu_seconds,
    write_json,
)
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from cdc_ingest.services import KafkaBroker

log = logging.getLogger("benchmarks.tx_visibility")

PARTITIONS = 3
WARMUP_TX = 20  # transactions written (and waited for) before measuring: consumers fetching
DRAIN_S = 30.0


class PartitionReader(threading.Thread):
    """One read_committed consumer of ``partitions``: (partition, sequence number) ->
    perf_counter when poll returned the record, for every record."""

    def __init__(self, bootstrap: str, topic: str, partitions: list[int],
                 settings: dict[str, Any]) -> None:
        super().__init__(daemon=True, name=f"reader-p{'-'.join(map(str, partitions))}")
        self.partitions = partitions
        self.seen: dict[tuple[int, int], float] = {}
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self._consumer = Consumer({
            "bootstrap.servers": bootstrap,
            "group.id": f"cdc-ingest-bench-vis-{secrets.token_hex(6)}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            **settings,
        })  # fmt: skip
        self._consumer.assign([TopicPartition(topic, p, 0) for p in partitions])

    def run(self) -> None:
        seen, poll, clock = self.seen, self._consumer.poll, time.perf_counter
        try:
            while not self.stop.is_set():
                msg = poll(0.1)
                if msg is None:
                    continue
                now = clock()  # first thing after poll returns
                error = msg.error()
                if error is not None:
                    if error.code() != KafkaError._PARTITION_EOF:
                        raise RuntimeError(str(error))
                    continue
                seen[(msg.partition() or 0, int(msg.value() or b"-1"))] = now
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            self.error = exc
        finally:
            self._consumer.close()


def _stats(values_ms: list[float]) -> dict[str, Any]:
    ordered = sorted(values_ms)
    if not ordered:
        return {"count": 0}
    return {
        "count": len(ordered),
        "median_ms": percentile(ordered, 50),
        "p90_ms": percentile(ordered, 90),
        "p99_ms": percentile(ordered, 99),
        "max_ms": ordered[-1],
        "min_ms": ordered[0],
        "mean_ms": sum(ordered) / len(ordered),
    }


def _create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # leaders elected: metadata lists every partition
        info = admin.list_topics(topic, timeout=10).topics.get(topic)
        if info is not None and info.error is None and len(info.partitions) == partitions and \
                all(p.leader >= 0 for p in info.partitions.values()):
            return
        time.sleep(0.1)
    raise RuntimeError(f"topic {topic} not ready")


def visibility_run(bootstrap: str, transactions: int, rate: float, one_reader: bool = False,
                   consumer_settings: dict[str, Any] | None = None,
                   partitions: int = PARTITIONS) -> dict[str, Any]:
    """One run: ``transactions`` Kafka transactions of one record per partition, paced at
    ``rate`` per second (0: back to back); per transaction the visibility skew across the
    partitions, and commit-to-visible times. Readers: one consumer per partition, or with
    ``one_reader`` a single consumer assigned every partition."""
    settings = dict(consumer_settings or {})
    topic = f"bench.txvis.{secrets.token_hex(4)}"
    _create_topic(bootstrap, topic, partitions)
    groups = [list(range(partitions))] if one_reader else [[p] for p in range(partitions)]
    readers = [PartitionReader(bootstrap, topic, g, settings) for g in groups]
    for reader in readers:
        reader.start()
    producer = Producer({
        "bootstrap.servers": bootstrap,
        "transactional.id": f"cdc-ingest-bench-vis-{secrets.token_hex(4)}",
        "enable.idempotence": True,
        "linger.ms": 0,
    })  # fmt: skip
    producer.init_transactions(30)
    total = WARMUP_TX + transactions
    begun: dict[int, float] = {}
    committed: dict[int, float] = {}
    interval = 1.0 / rate if rate > 0 else 0.0
    late = 0
    load_before = os.getloadavg()[0]
    busy0, total0 = system_cpu_seconds()
    try:
        t0 = time.perf_counter()
        for seq in range(total):
            if seq == WARMUP_TX:  # the readers have fetched the warm-up: all are reading
                _wait_for(readers, range(WARMUP_TX), DRAIN_S)
                t0 = time.perf_counter()
                busy0, total0 = system_cpu_seconds()
            if interval and seq >= WARMUP_TX:
                due = t0 + (seq - WARMUP_TX) * interval
                wait = due - time.perf_counter()
                if wait > 0:
                    time.sleep(wait)
                elif wait < -interval:
                    late += 1
            value = str(seq).encode()
            producer.begin_transaction()
            for p in range(partitions):
                producer.produce(topic, value, partition=p)
            begun[seq] = time.perf_counter()
            producer.commit_transaction(30)
            committed[seq] = time.perf_counter()
        write_s = time.perf_counter() - t0
        busy1, total1 = system_cpu_seconds()
        _wait_for(readers, range(total), DRAIN_S)
    finally:
        for reader in readers:
            reader.stop.set()
        for reader in readers:
            reader.join(10)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.delete_topics([topic])[topic].result(30)
    for reader in readers:
        if reader.error is not None:
            raise RuntimeError(f"{reader.name}: {reader.error}")
    seen = {k: v for reader in readers for k, v in reader.seen.items()}
    skews, first_lat, last_lat, commit_ms = [], [], [], []
    last_partition = [0] * partitions
    for seq in range(WARMUP_TX, total):
        times = [seen[(p, seq)] for p in range(partitions)]
        skews.append((max(times) - min(times)) * 1000)
        first_lat.append((min(times) - committed[seq]) * 1000)
        last_lat.append((max(times) - committed[seq]) * 1000)
        commit_ms.append((committed[seq] - begun[seq]) * 1000)
        last_partition[times.index(max(times))] += 1
    n = len(skews)
    out: dict[str, Any] = {
        "readers": "one consumer, all partitions" if one_reader else
                   "one consumer per partition",
        "topic_partitions": partitions,
        "transactions": n,
        "rate_target_tx_per_s": rate or None,
        "achieved_tx_per_s": n / write_s if write_s else None,
        "late_ticks": late,
        "consumer_settings": settings,
        "loadavg_1m_before": load_before,
        "machine_busy_pct": (100 * (busy1 - busy0) / (total1 - total0)
                             if total1 > total0 else None),
        "skew": _stats(skews),
        "skew_over_0_1ms_fraction": sum(s > 0.1 for s in skews) / n,
        "skew_over_1ms_fraction": sum(s > 1 for s in skews) / n,
        "skew_over_10ms_fraction": sum(s > 10 for s in skews) / n,
        "skew_histogram_ms": _histogram(skews),
        "last_visible_partition_counts": last_partition,
        "commit_return_to_first_visible": _stats(first_lat),
        "commit_return_to_last_visible": _stats(last_lat),
        "commit_transaction_call": _stats(commit_ms),
    }
    log.info("visibility (%s, %s): skew median %.3f ms, p99 %.3f ms, max %.3f ms; >1 ms "
             "%.1f%%, >10 ms %.1f%% of %d transactions", out["readers"],
             f"{rate:.0f} tx/s" if rate else "back to back", out["skew"]["median_ms"],
             out["skew"]["p99_ms"], out["skew"]["max_ms"],
             100 * out["skew_over_1ms_fraction"], 100 * out["skew_over_10ms_fraction"], n)
    return out


def _histogram(values_ms: list[float]) -> dict[str, int]:
    bounds = [0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 50, 100, 500]
    out = {f"<={b}": 0 for b in bounds}
    out[f">{bounds[-1]}"] = 0
    for v in values_ms:
        for b in bounds:
            if v <= b:
                out[f"<={b}"] += 1
                break
        else:
            out[f">{bounds[-1]}"] += 1
    return out


def _wait_for(readers: list[PartitionReader], seqs: range, timeout_s: float) -> None:
    """Until every reader has read every record of ``seqs`` in each of its partitions."""
    deadline = time.monotonic() + timeout_s
    for reader in readers:
        while not all((p, s) in reader.seen for s in seqs for p in reader.partitions):
            if reader.error is not None:
                raise RuntimeError(f"{reader.name}: {reader.error}")
            if time.monotonic() > deadline:
                missing = [(p, s) for s in seqs for p in reader.partitions
                           if (p, s) not in reader.seen]
                raise RuntimeError(f"{reader.name}: {len(missing)} records never became "
                                   f"readable (first {missing[:5]})")
            time.sleep(0.01)


RUNS = (  # (key in the JSON, paced?, one consumer for all partitions?)
    ("paced", True, False),
    ("back_to_back", False, False),
    ("one_consumer_back_to_back", False, True),
)


def measure_visibility(bootstrap: str, transactions: int, rate: float) -> dict[str, Any]:
    """Three runs on fresh topics: one consumer per partition paced at ``rate`` tx/s and
    back to back, then a single consumer of all three partitions back to back; librdkafka's
    default fetch settings (fetch.wait.max.ms 500, fetch.min.bytes 1: a waiting fetch
    returns as soon as a record is readable)."""
    out: dict[str, Any] = {
        "readers": "read_committed confluent-kafka consumers, threads of one Python process; "
                   "time = time.perf_counter() right after poll returns the record",
        "producer": "one transactional confluent-kafka producer (linger.ms 0): "
                    "begin_transaction, one record per partition, commit_transaction",
    }
    for key, paced, one in RUNS:
        out[key] = visibility_run(bootstrap, transactions, rate if paced else 0.0,
                                  one_reader=one)
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="Visibility skew of a Kafka transaction across "
                                "partitions, for read_committed readers.")
    p.add_argument("--transactions", type=int, default=1000,
                   help="measured transactions per run (default %(default)s)")
    p.add_argument("--rate", type=float, default=20.0,
                   help="transactions/s of the paced run (default %(default)s)")
    p.add_argument("--kafka-bootstrap", default=None,
                   help="use this Kafka instead of starting a private one")
    p.add_argument("--out", type=Path,
                   default=REPO / "benchmarks" / "results" / "tx-visibility.json")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    setup_logging()
    machine = machine_info()
    started = time.perf_counter()
    home = Path(tempfile.mkdtemp(prefix="cdc-ingest-bench-"))
    broker = None
    try:
        bootstrap = args.kafka_bootstrap
        if bootstrap is None:
            broker = KafkaBroker(home / "kafka")
            broker.start()
            bootstrap = broker.bootstrap
        result = measure_visibility(bootstrap, args.transactions, args.rate)
    finally:
        if broker is not None:
            broker.stop()
        shutil.rmtree(home, ignore_errors=True)
    for label, _paced, _one in RUNS:
        r = result[label]
        s = r["skew"]
        print(f"{label} ({r['readers']}): {r['transactions']} transactions, "
              f"{r['achieved_tx_per_s']:.0f} tx/s; "
              f"skew median {s['median_ms']:.3f} ms, p99 {s['p99_ms']:.3f} ms, max "
              f"{s['max_ms']:.3f} ms; > 1 ms {100 * r['skew_over_1ms_fraction']:.2f}%, "
              f"> 10 ms {100 * r['skew_over_10ms_fraction']:.2f}%")
    write_json(args.out, {
        "benchmark": "tx-visibility",
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "config": {"transactions": args.transactions, "rate": args.rate,
                   "partitions": PARTITIONS, "warmup_transactions": WARMUP_TX},
        "machine": machine,
        "visibility": result,
        "total_wall_s": time.perf_counter() - started,
    })
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
