"""Transform cost in a sink task: changelog records -> upsert messages, with and without rules.

    python benchmarks/transform.py [--records 100000] [--repeat 3] [--out results/transform.json]

Pure CPU, no services: one task's serde (`SinkSerde.add`, what `write_partition` calls per
record) over the same update records (two row images each), without a rule, with a filter,
and with a projection (two computed columns) plus a filter. Prints the median records/s of
each and its ratio to no rule, measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from cdc_ingest.formats.upsert_json import SinkSerde, UpsertOptions
from cdc_ingest.transform.rules import RuleSpec

CASES: dict[str, tuple[RuleSpec, ...]] = {
    "no rule": (),
    "filter": (RuleSpec("app.orders", None, "amount >= 10"),),
    "projection + filter": (RuleSpec(
        "app.orders", r"\*, amount * 2 AS dbl, UPPER(status) AS st",
        "amount >= 10 AND status <> 'draft'"),),
}


def _records(n: int) -> list[tuple[bytes, bytes]]:
    out = []
    for i in range(n):
        row = b'{"id":%d,"name":"n%d","amount":%s,"price":1.50,"status":"%s"}'
        before, after = row % (i, i, b"10.00", b"new"), row % (i, i, b"12.50", b"paid")
        out.append((b'{"id":%d}' % i,
                    b'{"v":1,"op":"+U","db":"app","table":"orders","pk":{"id":%d},'
                    b'"before":%s,"after":%s,"ts_ms":1,"pos":"g#1"}' % (i, before, after)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/transform.json"))
    args = parser.parse_args()
    records = _records(args.records)
    rates: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(args.repeat):
        for name, specs in CASES.items():
            serde = SinkSerde(lambda db, table: ("out",), UpsertOptions(False, False, specs))
            out: list[object] = []
            began = time.perf_counter()
            for key, value in records:
                serde.add(out, key, value)
            rates[name].append(len(records) / (time.perf_counter() - began))
    base = statistics.median(rates["no rule"])
    rows = {name: {"records_per_s": round(statistics.median(r)),
                   "slower_than_no_rule": round(base / statistics.median(r), 2)}
            for name, r in rates.items()}
    print(f"{'case':<22}{'records/s':>12}{'vs no rule':>12}")
    for name, row in rows.items():
        print(f"{name:<22}{row['records_per_s']:>12,}{row['slower_than_no_rule']:>11}x")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"records": args.records, "repeat": args.repeat,
                                    "cases": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
