"""``source:`` - the MySQL/MariaDB server and tables to capture (Flink CDC ``type: mysql``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal

from pydantic import Field, SecretStr, model_validator

from cdc_ingest.config import jdbc
from cdc_ingest.config.durations import Duration, PositiveDuration
from cdc_ingest.config.problems import Found, raise_problems
from cdc_ingest.config.source_types import (
    ExcludedTables,
    KeyColumns,
    MetadataList,
    ServerId,
    StartupMode,
    StartupModeOption,
    Tables,
    TimeZone,
    capture_id_problems,
    selector,
)
from cdc_ingest.config.types import ConfigModel, FrozenDict

_OFFSET = "scan.startup.specific-offset."
_SPECIFIC_OFFSET_OPTIONS = {
    "scan_startup_specific_offset_file": _OFFSET + "file",
    "scan_startup_specific_offset_pos": _OFFSET + "pos",
    "scan_startup_specific_offset_gtid_set": _OFFSET + "gtid-set",
    "scan_startup_specific_offset_skip_events": _OFFSET + "skip-events",
    "scan_startup_specific_offset_skip_rows": _OFFSET + "skip-rows",
}


class MySqlSourceDef(ConfigModel):
    """Where to read changes from. Option names and defaults follow Flink CDC's MySQL source."""

    type: Literal["mysql"] = Field(description="the source kind; only mysql", examples=["mysql"])
    name: str | None = Field(None, description="a display name for logs")
    hostname: str = Field(description="the MySQL / MariaDB server: host name or IP",
                          examples=["db.example.com"])
    port: int = Field(3306, ge=1, le=65535, description="the MySQL / MariaDB server's port")
    username: str = Field(description="a user with REPLICATION SLAVE, REPLICATION CLIENT "
                          "(MariaDB: BINLOG MONITOR) and SELECT", examples=["cdc"])
    password: SecretStr = Field(description="that user's password; never shown in logs, "
                                "errors or repr",
                                examples=["${MYSQL_PASSWORD}"])
    tables: Tables = Field(description="table selector: comma-separated "
                           "`<db-regex>.<table-regex>`; the unescaped `.` separates database "
                           "and table, `\\.` is the regex \"any character\" (`shop.\\.*`, "
                           "`app.order_[0-9]+`)",
                           examples=["shop.\\.*"])
    tables_exclude: ExcludedTables | None = Field(
        None, alias="tables.exclude", description="tables to leave out, same syntax as `tables`")
    # Our own option (Flink CDC has no equivalent): key columns for tables without a primary
    # key, as selector -> "col1,col2". The first entry (in YAML order) that matches wins.
    tables_key_columns: KeyColumns = Field(
        FrozenDict(), alias="tables.key-columns",
        description="mapping `selector: col1,col2` giving key columns to tables "
        "without a primary key (our option); the first matching entry wins")
    server_id: ServerId = Field(alias="server-id", examples=["5400"],
                                description="replica server id or range (`5400-5404`), unique "
                                "among the server's replicas. The binlog reader takes the first "
                                "id, snapshot reader *i* the first + 1 + *i*: a range must hold "
                                "1 + `scan.incremental.snapshot.parallelism` ids; a single id "
                                "lends the readers the ids right after it (refused with that "
                                "option set above 1; mysql-setup.md)")
    server_time_zone: TimeZone = Field("UTC", alias="server-time-zone",
                                       description="the server's session time zone (an IANA "
                                       "name such as `Asia/Shanghai`, or `+08:00`); checked, "
                                       "but no value depends on it (TIMESTAMP is read and "
                                       "written in UTC), so setting it gives a warning")
    scan_startup_mode: StartupModeOption = Field(
        StartupMode.INITIAL, alias="scan.startup.mode",
        description="where capture starts on its first start: `initial` (snapshot of the "
        "existing rows, then the binlog with no gap and no duplicate), `snapshot` (snapshot "
        "only, then exit 0), `latest-offset`, `earliest-offset`, `specific-offset`, `timestamp`")
    scan_startup_specific_offset_file: str | None = Field(
        None, alias=_OFFSET + "file",
        description="with `specific-offset`: start at this binlog file (with `.pos`)")
    scan_startup_specific_offset_pos: int | None = Field(
        None, alias=_OFFSET + "pos", ge=0,
        description="with `specific-offset`: the position in that binlog file (an event "
        "boundary)")
    scan_startup_specific_offset_gtid_set: str | None = Field(
        None, alias=_OFFSET + "gtid-set",
        description="with `specific-offset`: start after this GTID set (MariaDB `0-1-122`, "
        "MySQL `uuid:1-122`)")
    scan_startup_specific_offset_skip_events: int = Field(
        0, alias=_OFFSET + "skip-events", ge=0,
        description="Flink CDC's events to skip after the start position; accepted for "
        "compatibility, capture skips by `skip-rows`")
    scan_startup_specific_offset_skip_rows: int = Field(
        0, alias=_OFFSET + "skip-rows", ge=0,
        description="with a GTID set: rows of the first transaction already captured")
    scan_startup_timestamp_millis: int | None = Field(
        None, alias="scan.startup.timestamp-millis", ge=0,
        description="with `timestamp`: start at the first transaction at or after this time "
        "(epoch milliseconds)")
    heartbeat_interval: Duration = Field(timedelta(seconds=30), alias="heartbeat.interval",
                                         description="how often the committed position "
                                         "advances while nothing captured changes; 0 "
                                         "disables heartbeats (the position then moves only "
                                         "with captured changes, and a binlog purged past it "
                                         "stops capture at its next start)")
    connect_timeout: PositiveDuration = Field(
        timedelta(seconds=30), alias="connect.timeout",
        description="how long connecting to MySQL may take")
    connect_max_retries: int = Field(3, alias="connect.max-retries", ge=0,
                                     description="retries, with backoff (1, 2, 4, 8, then 10 "
                                     "s), of a failed connection to MySQL, the binlog's "
                                     "included; then capture exits 11 and `start` restarts it")
    scan_incremental_snapshot_chunk_size: int = Field(
        8096, alias="scan.incremental.snapshot.chunk.size", ge=1,
        description="primary-key rows per snapshot chunk (one Kafka transaction each)")
    scan_snapshot_fetch_size: int = Field(
        1024, alias="scan.snapshot.fetch.size", ge=1,
        description="rows fetched per round trip while a chunk streams")
    scan_incremental_snapshot_parallelism: int | None = Field(
        None, alias="scan.incremental.snapshot.parallelism", ge=1,
        description="snapshot chunks read at once, each reader replicating with a server id "
        "of its own (`server-id`)")
    treat_tinyint1_as_boolean_enabled: bool = Field(
        True, alias="treat-tinyint1-as-boolean.enabled",
        description="TINYINT(1) as JSON boolean")
    scan_newly_added_table_enabled: bool = Field(
        False, alias="scan.newly-added-table.enabled",
        description="a table added to `tables` (or taken out of `tables.exclude`) between two "
        "runs is snapshotted at the next start, while the binlog goes on; off: such a start "
        "stops, naming the tables (operations.md)")
    scan_binlog_newly_added_table_enabled: bool = Field(
        True, alias="scan.binlog.newly-added-table.enabled",
        description="tables created while capture runs are captured from their first row "
        "whatever this says (a created table has no earlier rows to snapshot)")
    metadata_list: MetadataList = Field(
        (), alias="metadata.list", examples=["op_ts"],
        description="metadata transform rules may use: `op_ts`, the change's binlog time in "
        "epoch milliseconds (0 for snapshot rows), as in Flink CDC (docs/transform.md)")
    jdbc_properties: jdbc.JdbcPropertiesDef = Field(
        jdbc.JdbcPropertiesDef(), alias="jdbc.properties",
        description="Connector/J properties, written `jdbc.properties.<name>`: TLS to MySQL "
        "(`sslMode`, trust and client key stores, `tlsVersions`) as Connector/J means them; "
        "properties with no effect here are accepted with a warning, others refused "
        "(docs/flink-cdc-compatibility.md)")
    # Our own options: how much of the binlog one Kafka transaction of the capture may hold.
    capture_transaction_max_rows: int = Field(
        50_000, alias="capture.transaction.max-rows", ge=1,
        description="rows per Kafka transaction of the changelog (our option); bounds the "
        "memory of an open transaction and how often capture waits for a commit")
    capture_transaction_max_interval: PositiveDuration = Field(
        timedelta(seconds=1), alias="capture.transaction.max-interval",
        description="longest a Kafka transaction of the changelog stays open while the "
        "binlog keeps coming; when it has read all the server sent, capture commits at the "
        "end of the MySQL transaction, at most once every 50 ms (our option)")

    @property
    def server_id_first(self) -> int:
        return self.server_id.first

    @property
    def server_id_last(self) -> int:
        return self.server_id.last

    def captures(self, db: str, table: str) -> bool:
        """True for a table that ``tables`` selects and ``tables.exclude`` does not."""
        excluded = self.tables_exclude is not None and self.tables_exclude.matches(db, table)
        return self.tables.matches(db, table) and not excluded

    def key_columns_for(self, db: str, table: str) -> tuple[str, ...] | None:
        """The configured key of a table without a primary key, or None."""
        for text, columns in self.tables_key_columns.items():
            if selector(text, "tables.key-columns").matches(db, table):
                return columns
        return None

    @model_validator(mode="before")
    @classmethod
    def _gather_jdbc_properties(cls, data: Any) -> Any:
        return jdbc.gather(data) if isinstance(data, dict) else data

    @model_validator(mode="after")
    def _options_fit_together(self) -> MySqlSourceDef:
        found = self._offset_problems() + self._timestamp_problems() + self._server_id_problems()
        raise_problems("source", found)
        return self

    def _offset_problems(self) -> Found:
        if self.scan_startup_mode is StartupMode.SPECIFIC_OFFSET:
            return self._missing_offset()
        # Judged by value, not by presence: a dumped definition spells out nulls and zeros.
        given = [name for name in _SPECIFIC_OFFSET_OPTIONS if getattr(self, name) not in (None, 0)]
        return [((_SPECIFIC_OFFSET_OPTIONS[name],),
                 "is only used with scan.startup.mode: specific-offset",
                 "set scan.startup.mode: specific-offset, or remove this option")
                for name in given]

    def _timestamp_problems(self) -> Found:
        wanted = self.scan_startup_mode is StartupMode.TIMESTAMP
        given = self.scan_startup_timestamp_millis is not None
        if wanted and not given:
            return [(("scan.startup.timestamp-millis",),
                     "is required by scan.startup.mode: timestamp",
                     "add scan.startup.timestamp-millis: <epoch milliseconds>")]
        if given and not wanted:
            return [(("scan.startup.timestamp-millis",),
                     "is only used with scan.startup.mode: timestamp",
                     "set scan.startup.mode: timestamp, or remove this option")]
        return []

    def _server_id_problems(self) -> Found:
        # set here: judged with the source's other problems; else pipeline.parallelism
        # decides (implied_server_id_problems, once the pipeline section is read)
        parallelism = self.scan_incremental_snapshot_parallelism
        if parallelism is None:
            return []
        return capture_id_problems(self.server_id, parallelism)

    def snapshot_readers(self, pipeline_parallelism: int) -> int:
        """Snapshot readers at once: the option, else ``pipeline.parallelism``."""
        return self.scan_incremental_snapshot_parallelism or pipeline_parallelism

    def implied_server_id_problems(self, pipeline_parallelism: int) -> Found:
        """``server-id`` problems when ``pipeline.parallelism`` sets the snapshot readers."""
        if self.scan_incremental_snapshot_parallelism is not None:
            return []  # the source's own validation judged them
        return capture_id_problems(self.server_id, pipeline_parallelism,
                                   implied_by=pipeline_parallelism)

    def _missing_offset(self) -> Found:
        if self.scan_startup_specific_offset_gtid_set:
            return []
        has_file = bool(self.scan_startup_specific_offset_file)
        has_pos = self.scan_startup_specific_offset_pos is not None
        if has_file and has_pos:
            return []
        fix = (f"add {_OFFSET}gtid-set, or both {_OFFSET}file and {_OFFSET}pos "
               "(SHOW MASTER STATUS shows them)")
        if has_file or has_pos:
            missing = _OFFSET + ("pos" if has_file else "file")
            return [((missing,), "is required with the other binlog coordinate", fix)]
        return [(("scan.startup.mode",), "specific-offset needs a position to start from", fix)]
