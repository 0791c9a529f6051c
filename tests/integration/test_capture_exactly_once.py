"""Exactly-once into the changelog under SIGKILL, and fencing of a second capture."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import admin_conn
from tests.integration.flavors import ALL_SERVERS, Source
from tests.integration.pipeline_helpers import (
    changelog,
    gtid_now,
    rows_of,
    start_capture,
    stop,
    wait_for,
    write_pipeline,
)
from tests.integration.workload import Expected, Workload


def _seen(records: list[dict[str, Any]]) -> Expected:
    out: Expected = {}
    for r in rows_of(records):
        v = (r["after"] or {}).get("v")
        out.setdefault((r["table"], r["_key"].decode()), []).append((r["op"], v))
    return out


@pytest.mark.parametrize("source", ALL_SERVERS, indirect=True)
def test_sigkill_five_times_every_change_exactly_once_in_order(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    fresh_db = fresh_source_db
    seed = int(os.environ.get("CDC_INGEST_TEST_SEED", random.randrange(1 << 30)))
    print(f"workload seed {seed}")
    rng = random.Random(seed)
    workload = Workload(source.admin, fresh_db, seed, target_rows=50_000)
    workload.create_tables()
    name = f"kill-{fresh_db}"
    config = write_pipeline(
        tmp_path / "kill.yaml", source, kafka, name, rf"{fresh_db}.k[ab]",
        source={"scan.startup.mode": "specific-offset",
                "scan.startup.specific-offset.gtid-set": gtid_now(source),
                "capture.transaction.max-rows": 500,
                "capture.transaction.max-interval": "300ms"},
    )
    log = tmp_path / "capture.log"
    proc = start_capture(config, log)
    writer = threading.Thread(target=workload.run, daemon=True)
    writer.start()
    kills = 0
    try:
        while kills < 5:
            time.sleep(rng.uniform(0.5, 3.0))
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
            kills += 1
            time.sleep(rng.uniform(0.0, 1.0))
            proc = start_capture(config, log)
        writer.join(300)
        assert workload.error is None, workload.error
        assert workload.rows >= 50_000
        records = wait_for(
            lambda: (r := changelog(kafka, name)) and len(rows_of(r)) >= workload.rows and r,
            timeout=180, what=f"{workload.rows} row changes",
        )
    finally:
        code = stop(proc)
    assert code == 0, log.read_text()[-3000:]
    seen = _seen(records)
    assert len(rows_of(records)) == workload.rows, f"seed {seed}: duplicates or losses"
    different = [k for k in workload.expected if seen.get(k) != workload.expected[k]]
    assert not different, (
        f"seed {seed}: {len(different)} keys differ, e.g. {different[0]}: "
        f"expected {workload.expected[different[0]]}, got {seen.get(different[0])}"
    )
    assert set(seen) == set(workload.expected)


# MySQL ends the older binlog stream of a server-id as soon as another replica connects with it,
# with error 1236 "A replica with the same server_uuid/server_id as this replica has connected
# to the source" (not a purged binlog); MariaDB with its own ER_SLAVE_SAME_ID (4052).

@pytest.mark.parametrize("source", ["mariadb", "mysql"], indirect=True)
def test_second_capture_fences_the_first(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    fresh_db = fresh_source_db
    conn = admin_conn(source, fresh_db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE f (id INT PRIMARY KEY)")
    name = f"fence-{fresh_db}"
    # No heartbeat commits while idle: what ends the first capture is either the server
    # dropping its binlog stream when the second connects with the same server-id, or its
    # commit of the row; both must end in Kafka's fencing (exit 6), whichever comes first.
    config = write_pipeline(tmp_path / "fence.yaml", source, kafka, name, rf"{fresh_db}.f",
                            source={"heartbeat.interval": "60s"})
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    first = start_capture(config, first_log)
    wait_for(lambda: "starts at" in first_log.read_text(), what="first capture running")
    second = start_capture(config, second_log)
    try:
        wait_for(lambda: "starts at" in second_log.read_text(), what="second capture running")
        with conn.cursor() as cur:
            cur.execute("INSERT INTO f VALUES (1)")
        conn.commit()
        code = first.wait(60)
        assert code == 6, first_log.read_text()[-2000:]
        assert "another process took over transactional id" in first_log.read_text()
        assert f"cdc-ingest.{name}.capture" in first_log.read_text()
        # the second one carries on and captures the row
        wait_for(lambda: len(rows_of(changelog(kafka, name))) == 1, what="row via second")
    finally:
        stop(first)
        assert stop(second) == 0, second_log.read_text()[-2000:]
