"""MariaDB 11.4+ writes the events inside a transaction with end_log_pos 0
(``binlog_legacy_event_pos=OFF``, its default). Capture placed such rows at binlog position 0,
so while a snapshot's binlog window was open every row change counted as already held by the
snapshot and was dropped: a capture restarted after its snapshot, before the first change
after it, lost that change. Here that timing is made on purpose, on every server."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import admin_conn
from tests.integration.flavors import ALL_SERVERS, Source
from tests.integration.pipeline_helpers import (
    changelog,
    rows_of,
    start_capture,
    stop,
    wait_for,
    write_pipeline,
)


def _in_binlog_phase(log: Path, starts: int) -> bool:
    return log.read_text().count("(row decoder:") >= starts


@pytest.mark.parametrize("source", ALL_SERVERS, indirect=True)
def test_a_restart_inside_the_snapshots_window_loses_nothing(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    db = fresh_source_db
    with admin_conn(source, db) as conn, conn.cursor() as cur:
        if not source.facts.rows_events_positioned:  # the server setting that does it
            cur.execute("SELECT @@binlog_legacy_event_pos")
            assert cur.fetchone()[0] == 0
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, note VARCHAR(20))")
        cur.execute("INSERT INTO t VALUES (1, 'snapshot'), (2, 'snapshot'), (3, 'snapshot')")
    name = f"window-{db}"
    config = write_pipeline(tmp_path / "window.yaml", source, kafka, name, f"{db}.t",
                            source={"scan.startup.mode": "initial"},
                            pipeline={"parallelism": 1})  # one partition: binlog order
    log = tmp_path / "capture.log"
    proc = start_capture(config, log)
    try:
        # the snapshot is committed; nothing was written after it, so its window is open
        wait_for(lambda: _in_binlog_phase(log, 1), what="the binlog phase")
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        proc = start_capture(config, log)
        wait_for(lambda: _in_binlog_phase(log, 2), what="the binlog phase after the restart")
        with admin_conn(source, db) as conn, conn.cursor() as cur:
            cur.execute("INSERT INTO t VALUES (4, 'first after'), (5, 'first after')")
            cur.execute("UPDATE t SET note = 'second after' WHERE id = 1")
        rows = wait_for(lambda: len(r := rows_of(changelog(kafka, name))) >= 6 and r,
                        timeout=60, what="the three snapshot rows and three changes")
    finally:
        assert stop(proc) == 0, log.read_text()[-3000:]
    got = [(r["op"], r["after"]["id"], r["after"]["note"]) for r in rows]
    assert got == [("+I", 1, "snapshot"), ("+I", 2, "snapshot"), ("+I", 3, "snapshot"),
                   ("+I", 4, "first after"), ("+I", 5, "first after"),
                   ("+U", 1, "second after")]
