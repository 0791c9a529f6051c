#!/usr/bin/env bash
# The project's one test command. Installs what is missing (scripts/setup.sh), runs ruff and
# mypy, then pytest with any arguments given:
#   ./scripts/test.sh                                   # everything
#   ./scripts/test.sh tests/unit -k routing             # a subset
# Exits with pytest's code; "no tests collected" (5) counts as a failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export PYTHON="${PYTHON:-python3}"
CDC_INGEST_SETUP_TESTS=1 ./scripts/setup.sh

echo "test.sh: ruff and mypy" >&2
"$PYTHON" -m ruff check --quiet .
"$PYTHON" -m mypy cdc_ingest

status=0
"$PYTHON" -m pytest -q -p no:cacheprovider --durations=30 "$@" || status=$?
if [ "$status" -eq 5 ]; then
  echo "test.sh: pytest collected no tests; that is a failure" >&2
  status=1
fi
exit "$status"
