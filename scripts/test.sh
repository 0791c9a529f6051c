#!/usr/bin/env bash
# The project's one test command. Installs what is missing (Debian packages, the package
# itself with its test extras, the Kafka jars), then runs pytest with any arguments given:
#   ./scripts/test.sh                                   # everything
#   ./scripts/test.sh tests/unit -k routing             # a subset
# Exits with pytest's code; "no tests collected" (5) counts as a failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON="${PYTHON:-python3}"
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1

missing=()
[ -x /usr/sbin/mariadbd ] || missing+=(mariadb-server)
command -v mariadb >/dev/null || missing+=(mariadb-client)
command -v java >/dev/null || missing+=(default-jdk-headless)
command -v mvn >/dev/null || missing+=(maven)
if [ "${#missing[@]}" -gt 0 ]; then
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  echo "test.sh: installing Debian packages: ${missing[*]}" >&2
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

echo "test.sh: pip install -e '.[test]'" >&2
"$PYTHON" -m pip install -q -e '.[test]'

echo "test.sh: Kafka jars" >&2
"$PYTHON" -m cdc_ingest.services fetch kafka >/dev/null

echo "test.sh: Spark Kafka connector jars" >&2
"$PYTHON" -m cdc_ingest.sink.spark fetch >/dev/null

echo "test.sh: ruff and mypy" >&2
"$PYTHON" -m ruff check --quiet .
"$PYTHON" -m mypy cdc_ingest

status=0
"$PYTHON" -m pytest -q -p no:cacheprovider "$@" || status=$?
if [ "$status" -eq 5 ]; then
  echo "test.sh: pytest collected no tests; that is a failure" >&2
  status=1
fi
exit "$status"
