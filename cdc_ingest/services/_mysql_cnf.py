"""The my.cnf of the local MySQL 9.7 (``cdc_ingest.services.mysql``): what capture needs,
sized for a small machine shared with MariaDB, Kafka and Spark."""

from __future__ import annotations

from pathlib import PurePosixPath

from cdc_ingest.services._process import LOCALHOST
from cdc_ingest.services._server import OptionValue


def server_options(run: PurePosixPath, port: int) -> dict[str, OptionValue]:
    """The my.cnf [mysqld] options, paths as mysqld sees them (inside the root).

    Keys use underscores so overrides can replace them. Sized for a small shared machine:
    a 128 MiB buffer pool, a small redo log, a smaller performance_schema (the memory that
    makes, measured: docs/decisions/0011).
    """
    return {
        "datadir": str(run / "data"),
        "port": port,
        "bind_address": LOCALHOST,
        "socket": str(run / "mysqld.sock"),
        "pid_file": str(run / "mysqld.pid"),
        "tmpdir": str(run / "tmp"),
        "mysqlx": "OFF",  # no X protocol listener on 33060: two servers would clash
        "server_id": 1,
        "log_bin": str(run / "binlog" / "mysql-bin"),
        "binlog_format": "ROW",
        "binlog_row_image": "FULL",
        "binlog_row_metadata": "FULL",
        "gtid_mode": "ON",
        "enforce_gtid_consistency": "ON",
        "secure_file_priv": "",
        "max_allowed_packet": "64M",
        "character_set_server": "utf8mb4",
        "default_time_zone": "'+00:00'",
        "skip_name_resolve": True,
        "host_cache_size": 0,
        "max_connections": 100,
        "table_open_cache": 400,
        "table_definition_cache": 400,
        "innodb_buffer_pool_size": "128M",
        "innodb_redo_log_capacity": "64M",
        "innodb_log_buffer_size": "8M",
        # performance_schema stays on (performance_schema.log_status), with its
        # per-account/host/user/thread and per-error tables sized smaller (docs/decisions/0011)
        "performance_schema": "ON",
        "performance_schema_accounts_size": 20,
        "performance_schema_hosts_size": 20,
        "performance_schema_users_size": 20,
        "performance_schema_max_thread_instances": 200,
        "performance_schema_error_size": 1000,
        "performance_schema_max_table_instances": 400,
        "performance_schema_max_table_handles": 400,
        "performance_schema_digests_size": 1000,
        "performance_schema_events_statements_history_long_size": 1000,
        "performance_schema_events_transactions_history_long_size": 1000,
    }


def render_cnf(options: dict[str, OptionValue]) -> str:
    lines = ["# written by cdc_ingest.services.mysql; rewritten on every start", "[mysqld]"]
    for key, value in options.items():
        if value is None or value is False:
            continue
        lines.append(key if value is True else f"{key}={value}")
    return "\n".join([*lines, ""])
