"""MySQL binary JSON -> text: the reference (``mysql_json.json_text``) against the compiled
reader (``_jsontext.pyx``), on documents encoded in memory; no server, no Kafka.

    python benchmarks/json_text.py [--seconds 0.3] [--repeat 5] [--out FILE]

Documents: ``payload``, the JSON column of every row of benchmarks/capture.py (keys in
MySQL's stored order); ``object-2k``, an object of 40 keys holding strings, integers, doubles
and small arrays; ``doubles``, an array of 200 doubles; ``unicode``, an object of non-ASCII
and escaped strings; ``array-80k``, 1000 payloads in one array. A run decodes one document
with one reader for about ``--seconds``; the two readers' runs alternate, and each figure is
the median of ``--repeat`` runs, in microseconds per document. Results:
``benchmarks/results/json-text.json``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import machine_info, write_json

from cdc_ingest.capture import mysql_json
from cdc_ingest.capture.plan import compiled_json_text
from tests.unit.binary_json_docs import (
    ARRAY,
    DOUBLE,
    INT16,
    INT64,
    LITERAL,
    OBJECT,
    STRING,
    Container,
    Scalar,
    document,
)

STATUSES = ("new", "paid", "packed", "shipped", "delivered", "returned")


def _payload(i: int) -> Container:
    """benchmarks/capture.py's payload of row ``i``; MySQL stores keys by length, then bytes."""
    return Container(OBJECT, [Scalar(INT16, i % 7 + 1), Scalar(STRING, f"SKU-{i % 9973}"),
                              Scalar(LITERAL, 1 if i % 4 else 2),
                              Container(ARRAY, [Scalar(STRING, "web"),
                                                Scalar(STRING, STATUSES[i % 6])])],
                     ["qty", "sku", "gift", "tags"])


def _documents() -> dict[str, bytes]:
    rng = random.Random(48)
    keys = sorted({f"field_{rng.randrange(10_000)}" for _ in range(40)}, key=lambda k: (len(k), k))
    values: list[object] = []
    for n, _ in enumerate(keys):
        values.append([Scalar(STRING, f"value {n} " * rng.randrange(1, 6)),
                       Scalar(INT64, rng.randrange(-2**62, 2**62)),
                       Scalar(DOUBLE, rng.uniform(-1e6, 1e6)),
                       Container(ARRAY, [Scalar(INT16, k) for k in range(8)])][n % 4])
    text = ["naïve café", "日本語のテキスト", "emoji 😀 and \"quotes\"", "tab\tnew\nline"]
    return {
        "payload": document(_payload(12345)),
        "object-2k": document(Container(OBJECT, values, keys)),
        "doubles": document(Container(ARRAY, [Scalar(DOUBLE, rng.uniform(-1e9, 1e9))
                                              for _ in range(200)])),
        "unicode": document(Container(OBJECT, [Scalar(STRING, t * 4) for t in text],
                                      ["k1", "k2", "k3", "k4"])),
        "array-80k": document(Container(ARRAY, [_payload(i) for i in range(1000)])),
    }


def _per_run(read: Callable[[bytes], str], data: bytes, seconds: float) -> int:
    """How many decodes take about ``seconds``."""
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            read(data)
        took = time.perf_counter() - start
        if took >= seconds / 4:
            return max(1, round(n * seconds / took))
        n *= 4


def _run_us(read: Callable[[bytes], str], data: bytes, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        read(data)
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.3, help="of one run")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).parent / "results" / "json-text.json")
    args = parser.parse_args()
    info = machine_info()
    compiled = compiled_json_text()
    if compiled is None:
        sys.exit("the compiled reader is not built (python setup.py build_ext --inplace)")
    print(f"{'document':<12}{'bytes':>8}{'python us':>12}{'compiled us':>13}{'speed-up':>10}")
    results = []
    for name, data in _documents().items():
        assert compiled(data) == mysql_json.json_text(data), name
        readers = (mysql_json.json_text, compiled)
        counts = [_per_run(read, data, args.seconds) for read in readers]
        runs: list[list[float]] = [[], []]
        for _ in range(args.repeat):  # alternating, so both see the same load
            for k, read in enumerate(readers):
                runs[k].append(_run_us(read, data, counts[k]))
        python, fast = (statistics.median(r) for r in runs)
        print(f"{name:<12}{len(data):>8}{python:>12.2f}{fast:>13.3f}{python / fast:>9.1f}x")
        results.append({"document": name, "bytes": len(data), "decodes_per_run": counts,
                         "python_us": round(python, 3), "compiled_us": round(fast, 3),
                         "speed_up": round(python / fast, 1)})
    write_json(args.out, {"benchmark": "json_text", "repeat": args.repeat,
                          "statistic": "median of the runs", "results": results,
                          "machine_info": info})


if __name__ == "__main__":
    main()
