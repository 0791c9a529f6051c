#!/usr/bin/env bash
# Quick start: installs what is missing (scripts/setup.sh), then runs `cdc-ingest demo`:
# local MariaDB and Kafka, a sample `shop` schema, `cdc-ingest start` with
# routes/shop-demo.yaml, a few live changes, what landed in Kafka and `cdc-ingest verify`.
# The pipeline keeps running until Ctrl-C, which stops everything the demo started.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PYTHON="${PYTHON:-python3}"
./scripts/setup.sh
exec "$PYTHON" -m cdc_ingest.cli demo "$@"
