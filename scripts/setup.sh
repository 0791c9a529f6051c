#!/usr/bin/env bash
# Installs what cdc-ingest needs on a Debian 12 machine, only what is missing (safe to run
# again): Debian's MariaDB server and client, a JDK, Maven and debootstrap; the package with
# its test extras; Kafka's jars and Spark's Kafka connector from Maven Central into .cache/;
# the MySQL 9.7 root (Debian sid + mysql-server-core, for chroot) into .cache/mysql-root;
# for the tests (CDC_INGEST_SETUP_TESTS=1, set by scripts/test.sh) also Percona Toolkit
# (Debian's percona-toolkit: pt-online-schema-change), GitHub's gh-ost (built with Go from
# the Go module proxy into .cache/gh-ost), a PyFlink virtualenv
# with Flink's Kafka connector and avro-confluent format jars, the Schema Registry's app
# (Apicurio Registry), the MariaDB 11.8 root (Debian sid + mariadb-server) into
# .cache/mariadb-root, and the Docker engine, Compose v2 and the images of the Docker Compose
# test.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON="${PYTHON:-python3}"
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)

missing=()
[ -x /usr/sbin/mariadbd ] || missing+=(mariadb-server)
command -v mariadb >/dev/null || missing+=(mariadb-client)
command -v java >/dev/null || missing+=(default-jdk-headless)
command -v mvn >/dev/null || missing+=(maven)
command -v gcc >/dev/null || missing+=(gcc libc6-dev)  # the compiled row decoder
[ -x /usr/sbin/debootstrap ] || missing+=(debootstrap)  # the MySQL 9.7 root
if [ "${CDC_INGEST_SETUP_TESTS:-0}" = 1 ]; then
  # pt-online-schema-change (tests/integration/test_online_schema_change.py)
  command -v pt-online-schema-change >/dev/null || missing+=(percona-toolkit)
fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}" >&2
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

where="$("$PYTHON" -c 'import sys; print(sys.prefix)')"
if [ "$("$PYTHON" -c 'import sys; print(sys.prefix != sys.base_prefix)')" = False ]; then
  echo "setup: note: $PYTHON is not a virtualenv; the package goes into $where. To keep it" \
       "apart: python3 -m venv .venv, then PYTHON=.venv/bin/python ./scripts/demo.sh" >&2
fi
echo "setup: pip install -e '.[test]' into $where (builds the compiled row decoder; about" \
     "1-2 minutes the first time, quiet meanwhile)" >&2
# A failed build of the C extension fails setup here; outside setup it only falls back.
CDC_INGEST_REQUIRE_EXT=1 "$PYTHON" -m pip install -q -e '.[test]'

echo "setup: Kafka jars" >&2
"$PYTHON" -m cdc_ingest.services fetch kafka >/dev/null

echo "setup: Spark Kafka connector jars, and the sink JVM's class-data sharing archive" \
     "(once: about 30 s)" >&2
"$PYTHON" -m cdc_ingest.sink.runtime.session fetch >/dev/null

# PyFlink for the Flink read-back tests (tests/integration/test_flink_*readback.py): apache-flink
# pins its own pyarrow/pandas/numpy/apache-beam, which would break PySpark's, so it goes into
# a virtualenv of its own, <cache>/pyflink-<version>-venv, never into this environment; and
# Flink's Kafka SQL connector and avro-confluent format jars from Maven Central. Made once
# (marker written last), under a lock: tests/integration/flink_env.py.
if [ "${CDC_INGEST_SETUP_TESTS:-0}" = 1 ]; then  # scripts/test.sh only; the demo needs none
  echo "setup: PyFlink virtualenv, Flink's Kafka SQL connector and avro-confluent format" \
       "(once: about a minute)" >&2
  "$PYTHON" -m tests.integration.flink_env >/dev/null
  # the Schema Registry (Apicurio Registry, for the avro-confluent tests): its 142 MB app
  # from Maven Central, unpacked once into .cache/ (marker written last, under a lock)
  echo "setup: Schema Registry (Apicurio Registry; once: about 30 s)" >&2
  "$PYTHON" -m cdc_ingest.services fetch registry >/dev/null
fi

# gh-ost for tests/integration/test_gh_ost.py: the pinned release built from source with Go
# into .cache/gh-ost/ (tests/integration/gh_ost.py), skipped when built already
if [ "${CDC_INGEST_SETUP_TESTS:-0}" = 1 ]; then
  echo "setup: gh-ost (once: go build, about a minute)" >&2
  # a build that fails (no Go, the module proxy refusing) does not stop the other tests:
  # test_gh_ost.py builds again and fails with the reason
  "$PYTHON" -m tests.integration.gh_ost >/dev/null || echo "setup: warning: gh-ost could not be built; tests/integration/test_gh_ost.py will fail saying why" >&2
fi

echo "setup: MySQL 9.7 root (once: debootstrap sid + apt-get, about a minute)" >&2
# debootstrap and chroot need root; the cache is resolved before sudo drops the environment.
cache="$("$PYTHON" -c 'from cdc_ingest.download_cache import cache_dir; print(cache_dir())')"
"${sudo[@]}" env CDC_INGEST_CACHE="$cache" "$(command -v "$PYTHON")" \
  -m cdc_ingest.services fetch mysql >/dev/null

# MariaDB 11.8 (Debian sid's mariadb-server) for the tests: its own root, the same way.
if [ "${CDC_INGEST_SETUP_TESTS:-0}" = 1 ]; then
  echo "setup: MariaDB 11.8 root (once: debootstrap sid + apt-get, about a minute)" >&2
  "${sudo[@]}" env CDC_INGEST_CACHE="$cache" "$(command -v "$PYTHON")" \
    -m cdc_ingest.services fetch mariadb118 >/dev/null
fi

# The Docker Compose test (tests/integration/test_docker_compose.py): a Docker engine
# (Debian's docker.io, dockerd started when not running), the Compose v2 plugin (from Debian
# sid's docker-compose) and its images, built from the repository on Debian bases made here
# with debootstrap when no registry can be pulled from (tests/integration/docker_env.py;
# about 6 minutes the first time, cached by the engine after). A machine where this fails
# still sets up: the Docker test then fails with the same reason.
if [ "${CDC_INGEST_SETUP_TESTS:-0}" = 1 ]; then
  echo "setup: Docker engine, Compose and the Docker test's images (once: about 6 minutes)" >&2
  "${sudo[@]}" env CDC_INGEST_CACHE="$cache" "$(command -v "$PYTHON")" \
    -m tests.integration.docker_env || true
fi
