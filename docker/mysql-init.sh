#!/bin/bash
# Run once by the mysql image's entrypoint on an empty data directory, against its temporary
# init server (sourced when not executable, so no `set` options here: they would leak into the
# entrypoint). Creates the replication user cdc-ingest connects as, with its password from
# the file $CDC_PASSWORD_FILE (the Compose secret cdc_password) or else $CDC_PASSWORD (a .sh
# rather than .sql because SQL files cannot read either), and a small `shop` database to
# capture. The entrypoint has put the root password in $MYSQL_ROOT_PASSWORD (it reads
# MYSQL_ROOT_PASSWORD_FILE).

if [ -n "${CDC_PASSWORD_FILE:-}" ]; then
  CDC_PASSWORD=$(cat "$CDC_PASSWORD_FILE")
fi
: "${CDC_PASSWORD:?set CDC_PASSWORD_FILE (or CDC_PASSWORD) for the mysql service}"
cdc_password=${CDC_PASSWORD//\'/\'\'}   # SQL string literal: double any single quote

MYSQL_PWD="${MYSQL_ROOT_PASSWORD}" mysql --protocol=socket -uroot <<SQL
CREATE USER IF NOT EXISTS 'cdc'@'%' IDENTIFIED BY '${cdc_password}';
GRANT REPLICATION SLAVE, REPLICATION CLIENT, SELECT ON *.* TO 'cdc'@'%';

CREATE DATABASE IF NOT EXISTS shop;
CREATE TABLE IF NOT EXISTS shop.orders (
  id         INT PRIMARY KEY,
  customer   VARCHAR(64) NOT NULL,
  status     VARCHAR(20) NOT NULL,
  amount     DECIMAL(10, 2) NOT NULL,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
);
INSERT INTO shop.orders (id, customer, status, amount) VALUES
  (1, 'alice', 'new',     19.90),
  (2, 'bob',   'paid',    42.00),
  (3, 'carol', 'shipped',  7.50);
SQL
