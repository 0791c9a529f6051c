#!/bin/bash
# The stand-in mysql image's entrypoint (docker/test/mysql/Dockerfile says why it exists).
# As the official image's: arguments starting with '-' are mysqld's; on an empty data
# directory: initialise, start a temporary server on the socket only, give root its
# password (MYSQL_ROOT_PASSWORD or the file MYSQL_ROOT_PASSWORD_FILE names, for localhost
# and '%'), run /docker-entrypoint-initdb.d/*
# (*.sh run when executable, else sourced; *.sql piped to mysql), stop it; then mysqld.
set -eo pipefail

log() { echo "$(date -u +%FT%TZ) [Entrypoint]: $*" >&2; }

if [ "${1:0:1}" = '-' ]; then
  set -- mysqld "$@"
fi
if [ "$1" != mysqld ]; then
  exec "$@"
fi
shift
mkdir -p /var/run/mysqld
chown mysql:mysql /var/run/mysqld /var/lib/mysql

if [ -n "${MYSQL_ROOT_PASSWORD_FILE:-}" ]; then  # as the official image: VAR_FILE -> VAR
  MYSQL_ROOT_PASSWORD=$(cat "$MYSQL_ROOT_PASSWORD_FILE")
  export MYSQL_ROOT_PASSWORD
  unset MYSQL_ROOT_PASSWORD_FILE
fi
if [ ! -d /var/lib/mysql/mysql ]; then
  : "${MYSQL_ROOT_PASSWORD:?the mysql service needs MYSQL_ROOT_PASSWORD or MYSQL_ROOT_PASSWORD_FILE}"
  log "initialising the data directory"
  mysqld --initialize-insecure "$@"
  log "starting a temporary server on the socket only"
  mysqld --skip-networking "$@" &
  temp=$!
  for _ in $(seq 60); do
    mysqladmin -uroot --protocol=socket ping --silent 2>/dev/null && break
    kill -0 "$temp" 2>/dev/null || { log "the temporary server exited"; exit 1; }
    sleep 1
  done
  root_password=${MYSQL_ROOT_PASSWORD//\'/\'\'}
  mysql -uroot --protocol=socket <<SQL
SET @@SESSION.SQL_LOG_BIN = 0;
ALTER USER 'root'@'localhost' IDENTIFIED BY '${root_password}';
CREATE USER 'root'@'%' IDENTIFIED BY '${root_password}';
GRANT ALL ON *.* TO 'root'@'%' WITH GRANT OPTION;
SQL
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sh)
        log "running $f"
        if [ -x "$f" ]; then "$f"; else . "$f"; fi ;;
      *.sql)
        log "running $f"
        MYSQL_PWD="$MYSQL_ROOT_PASSWORD" mysql -uroot --protocol=socket < "$f" ;;
      *) ;;
    esac
  done
  MYSQL_PWD="$MYSQL_ROOT_PASSWORD" mysqladmin -uroot --protocol=socket shutdown
  wait "$temp"
  log "initialised; starting the server"
fi
exec mysqld "$@"
