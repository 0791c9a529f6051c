#!/usr/bin/env bash
# The random-table test (tests/integration/test_every_type.py) at length, on MariaDB 10.11,
# MySQL 9.7 and MariaDB 11.8: ROUNDS runs per server, each with TABLES random tables of
# random column types and ROWS rows per table, a new seed each (printed; replay one with
# CDC_INGEST_TEST_SEED=<seed>). Needs what ./scripts/test.sh sets up.
#   ROUNDS=5 TABLES=40 ROWS=150 ./scripts/dev/random-types.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export CDC_INGEST_RANDOM_TABLES="${TABLES:-30}" CDC_INGEST_RANDOM_ROWS="${ROWS:-120}"
for round in $(seq "${ROUNDS:-3}"); do
  echo "random-types: round $round" >&2
  "${PYTHON:-python3}" -m pytest -q -s -p no:cacheprovider \
    tests/integration/test_every_type.py -k random_tables
done
