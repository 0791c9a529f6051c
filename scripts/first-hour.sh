#!/usr/bin/env bash
# A new user's first hour, replayed on a fresh clone of this checkout; fails on any regression
# of what such a user once hit (the "first hour" issue):
#   1. the quick start works, and a second demo run verifies equal (no stale results);
#   2. the README's "Try it by hand" block runs verbatim (no sleeps to guess), `kill %1` exit 0;
#   3. SIGTERM to `start`'s whole process group exits 0 without a traceback;
#   4. an unreachable Kafka gives a few lines and the fix: `validate` and `start` both, `start`
#      gone within 15 s.
# Runs in a virtualenv inside the clone (nothing installed into the system Python); takes
# about 10 minutes on 2 cores. Usage: scripts/first-hour.sh [work dir]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="${1:-$(mktemp -d /tmp/first-hour.XXXXXX)}"
clone="$work/clone"
failures=0

step() { echo; echo "== first-hour: $*"; }
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
check() {  # check <file> <what> <grep -E pattern>: the pattern must occur
  grep -qE -- "$3" "$1" || fail "$2 (no /$3/ in $1)"
}
refuse() {  # refuse <file> <what> <grep -E pattern>: the pattern must not occur
  if grep -qE -- "$3" "$1"; then fail "$2 (/$3/ in $1)"; fi
}

rm -rf "$clone"
git clone -q "$repo" "$clone"
cd "$clone"
python3 -m venv .venv
export PYTHON="$clone/.venv/bin/python" PATH="$clone/.venv/bin:$PATH"
# the clone's own cache, state and services: nothing of the checkout's is reused
export CDC_INGEST_STATE="$work/state"
trap 'python -m cdc_ingest.services stop all >/dev/null 2>&1 || true' EXIT

step "1. quick start: ./scripts/demo.sh, twice"
./scripts/demo.sh --no-wait > "$work/demo1.log" 2>&1 || fail "the first demo run exited $?"
check "$work/demo1.log" "first demo run verifies equal" "equal to MySQL"
python -m cdc_ingest.cli demo --no-wait > "$work/demo2.log" 2>&1 \
  || fail "the second demo run exited $?"
check "$work/demo2.log" "second demo run verifies equal" "equal to MySQL"
check "$work/demo2.log" "second demo run shows its own changes" "key=\{\"id\":1003\} value=null"
refuse "$work/demo2.log" "second demo run differs" "DIFFERENT|Traceback"

step "2. README: 'Try it by hand', verbatim"
awk '/^## Try it by hand/{on=1} on && /^```bash/{grab=1; next} grab && /^```/{exit} grab' \
  README.md > "$work/by-hand.sh"
[ -s "$work/by-hand.sh" ] || fail "no 'Try it by hand' block in README.md"
export MYSQL_ROOT_PASSWORD="${MYSQL_ROOT_PASSWORD:-root}"
timeout 900 bash -euo pipefail "$work/by-hand.sh" > "$work/by-hand.log" 2>&1 \
  || fail "the README's hand-run block exited $? (its last command: kill %1; wait)"
check "$work/by-hand.log" "the hand-run's verify is equal" "equal to MySQL"
check "$work/by-hand.log" "the hand-run's topic holds order 1 paid" \
  "\\{\"id\":1\\}' b'\\{\"id\":1,\"status\":\"paid\"\\}'"
check "$work/by-hand.log" "the hand-run's topic holds the tombstone" "\\{\"id\":2\\}' None"
refuse "$work/by-hand.log" "the hand-run printed a traceback" "Traceback|Py4J"

pipeline() {  # pipeline <name> <bootstrap>: the README's pipeline on the running services
  cat <<EOF
source:
  type: mysql
  hostname: 127.0.0.1
  port: ${MYSQL_PORT}
  username: cdc
  password: \${MYSQL_PASSWORD}
  tables: shop.\.*
  server-id: 5410
sink:
  type: upsert-kafka
  properties.bootstrap.servers: $2
  sink.delivery-guarantee: exactly-once
pipeline:
  name: $1
  parallelism: 2
EOF
}

step "3. SIGTERM to start's process group"
python -m cdc_ingest.services start all > /dev/null
# shellcheck disable=SC2046
export $(python -m cdc_ingest.services status all)
pipeline first-hour-group "$KAFKA_BOOTSTRAP" > "$work/group.yaml"
setsid cdc-ingest start --config "$work/group.yaml" > "$work/group.log" 2>&1 &
leader=$!
cdc-ingest status --config "$work/group.yaml" --wait-caught-up 240 > /dev/null \
  || fail "the group pipeline did not catch up"
kill -TERM -- "-$leader"
code=0; wait "$leader" || code=$?
[ "$code" -eq 0 ] || fail "start exited $code after SIGTERM to its process group"
refuse "$work/group.log" "a group SIGTERM printed a traceback" "Traceback|Py4J|not cleanly"

step "4. an unreachable Kafka"
pipeline first-hour-nokafka 127.0.0.1:1 > "$work/nokafka.yaml"
code=0; cdc-ingest validate --config "$work/nokafka.yaml" > "$work/nokafka-validate.log" 2>&1 \
  || code=$?
[ "$code" -eq 4 ] || fail "validate exited $code with Kafka unreachable (4 expected)"
[ "$(wc -l < "$work/nokafka-validate.log")" -le 12 ] \
  || fail "validate printed more than 12 lines with Kafka unreachable"
check "$work/nokafka-validate.log" "validate names the unreachable Kafka and the fix" \
  "cannot reach Kafka at 127.0.0.1:1.*Fix:"
began=$(date +%s)
code=0; timeout 120 cdc-ingest start --config "$work/nokafka.yaml" > "$work/nokafka-start.log" \
  2>&1 || code=$?
took=$(( $(date +%s) - began ))
[ "$code" -ne 0 ] || fail "start exited 0 with Kafka unreachable"
[ "$took" -le 15 ] || fail "start took ${took}s to give up on an unreachable Kafka (15 s at most)"
check "$work/nokafka-start.log" "start names the unreachable Kafka and the fix" \
  "cannot reach Kafka at 127.0.0.1:1.*Fix:"
refuse "$work/nokafka-start.log" "librdkafka's raw lines or errors reached the user" \
  '^%[0-9]\||KafkaError\{'
[ "$(grep -cvE 'WARN|Spark|log4j|incubator|setLogLevel|^\s*$' "$work/nokafka-start.log")" -le 8 ] \
  || fail "start printed more than 8 lines of its own with Kafka unreachable"
python -m cdc_ingest.services stop all > /dev/null

echo
if [ "$failures" -gt 0 ]; then
  echo "first-hour: $failures failure(s); logs in $work" >&2
  exit 1
fi
echo "first-hour: all steps passed (logs in $work)"
