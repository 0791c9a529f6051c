"""`cdc-ingest start` end to end: every column type as exact sink bytes, and supervision.

The all-types sink messages are compared, as raw bytes, with a reviewed fixture, and that
fixture is checked against the changelog fixture of test_capture_types so the two cannot
drift apart: a sink value is byte for byte the changelog record's ``after``. The topic read
as a table (each key's last message) and the fixture are also checked against an oracle
that is not cdc-ingest's output (``server_oracle``: the server's own text of each value,
and hand-written values). Both flavours (each has its fixture pair); supervision does not
depend on the server and runs on MariaDB.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import admin_conn
from tests.integration import server_oracle
from tests.integration.flavors import MARIADB, MYSQL, Facts, Source
from tests.integration.pipeline_helpers import (
    child_pids,
    process_alive,
    sink_topic,
    start_command,
    stop,
    wait_for,
    write_pipeline,
)
from tests.integration.test_capture_types import fill_all_types

DB = "<db>"  # the fixture's stand-in for the per-test database name


# -- fixtures as raw text -------------------------------------------------------------------


def _raw_member(line: str, name: str) -> str | None:
    """The exact JSON text of a top-level member of one fixture line (None for null)."""
    decoder = json.JSONDecoder()
    line = line.rstrip()
    assert line.startswith("{") and line.endswith("}"), line[:80]
    pos = 1  # raw_decode gives each member's exact span (the fixtures have no blanks)
    while line[pos] != "}":
        key, pos = decoder.raw_decode(line, pos)
        assert line[pos] == ":", line[pos:pos + 20]
        begin = pos + 1
        _, pos = decoder.raw_decode(line, begin)
        if key == name:
            text = line[begin:pos]
            return None if text == "null" else text
        pos += line[pos] == ","
    raise KeyError(name)


def _changelog_fixture(facts: Facts) -> list[dict[str, Any]]:
    """test_capture_types' records: op, and pk / after as their exact text."""
    lines = [line for line in facts.all_types_fixture.read_text().splitlines() if line.strip()]
    return [{"op": json.loads(line)["op"], "pk": _raw_member(line, "pk"),
             "after": _raw_member(line, "after")} for line in lines]


def _sink_fixture(facts: Facts) -> list[dict[str, Any]]:
    text = facts.all_types_sink_fixture.read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("facts", [MARIADB, MYSQL], ids=lambda f: f.name)
def test_sink_fixture_is_the_changelog_fixture_as_upserts(facts: Facts) -> None:
    """Each sink message = the changelog record's pk as key and `after` as value, byte for
    byte; a delete is a tombstone. Needs no services: it only reads the two fixtures."""
    _assert_fixtures_correspond(facts)


def _assert_fixtures_correspond(facts: Facts) -> None:
    changelog, sink = _changelog_fixture(facts), _sink_fixture(facts)
    assert len(sink) == len(changelog) == 6
    for c, s in zip(changelog, sink, strict=True):
        assert s["key"] == c["pk"], (s["key"], c["pk"])
        assert s["value"] == c["after"], f"value for key {s['key']} differs from `after`"
        assert (s["value"] is None) == (c["op"] == "-D")
        assert s["headers"] == {"namespace": "", "schemaName": DB, "tableName": "all_types"}
    assert [(c["op"], s["key"]) for c, s in zip(changelog, sink, strict=True)][-1] == (
        "-D", '{"id":2}')
    assert sink[-1]["value"] is None


def _as_table(messages: list[dict[str, Any]]) -> dict[int, dict[str, Any] | None]:
    """Sink messages (key and value as text) -> each key's row after its last message
    (None after a tombstone), numbers as their exact text."""
    rows: dict[int, dict[str, Any] | None] = {}
    for m in messages:
        value = m["value"]
        rows[json.loads(m["key"])["id"]] = None if value is None else server_oracle.parse(value)
    return rows


def test_all_types_yield_fixed_key_value_json_in_the_sink_topic(
    source: Source, kafka: Any, fresh_source_db: str, tmp_path: Path
) -> None:
    db = fresh_source_db
    start = fill_all_types(source, db)
    facts = source.facts

    config = write_pipeline(
        tmp_path / "types.yaml", source, kafka, f"sink-types-{db}", f"{db}.all_types",
        source={"scan.startup.mode": "specific-offset",
                "scan.startup.specific-offset.gtid-set": start},
        # one sink partition too: offset order is binlog order
        sink={"sink.delivery-guarantee": "exactly-once",
              "sink.add-tableId-to-header-enabled": True, "topic.partitions": 1},
        pipeline={"parallelism": 1},
    )
    log = tmp_path / "start.log"
    proc = start_command("start", config, log)
    try:
        messages = wait_for(lambda: (m := sink_topic(kafka, f"{db}.all_types")) and len(m) >= 6
                            and m, timeout=120, what="6 messages in the sink topic")
    finally:
        code = stop(proc, timeout=90)
    assert code == 0, log.read_text()[-3000:]

    got = [
        {"key": m.key.decode(), "value": None if m.value is None else m.value.decode(),
         "headers": {k: v.decode().replace(db, DB) for k, v in m.headers}}
        for m in messages
    ]
    assert all(len(m.headers) == 3 for m in messages)  # no header twice
    # the independent oracle before any fixture rewrite: the topic as a table is the server's
    server = server_oracle.read_server(source.admin, db)
    latest = _as_table(got)
    wrong = (server_oracle.differences(server, latest)
             + server_oracle.hand_written_differences(latest, facts is MYSQL))
    assert not wrong, "the sink's values are not the server's:\n" + "\n".join(wrong)
    if os.environ.get("CDC_INGEST_WRITE_FIXTURES") == "1":  # after a reviewed change only
        facts.all_types_sink_fixture.write_bytes(b"".join(orjson.dumps(g) + b"\n" for g in got))
    expected = _sink_fixture(facts)
    fixture_wrong = server_oracle.differences(server, _as_table(expected))
    assert not fixture_wrong, "the sink fixture is not the server's:\n" + "\n".join(fixture_wrong)
    assert len(got) == len(expected), [g["key"] for g in got]
    for g, e in zip(got, expected, strict=True):
        assert g == e, f"message for key {e['key']} differs"
    # exact number text made it through Spark and the sink (not through a float)
    values = "".join(g["value"] or "" for g in got)
    for text in ('"biu":18446744073709551615', '"d":0.50', '"f":3.4028235e+38',
                 '"dbig":-12345678901234567890123456789012345.123456789012345678901234567891'):
        assert text in values, text
    _assert_fixtures_correspond(facts)  # so a rewritten sink fixture cannot drift either


# -- supervision ----------------------------------------------------------------------------


def _descendants(pid: int) -> list[int]:
    out, todo = [], child_pids(pid)
    while todo:
        kid = todo.pop()
        out.append(kid)
        todo += child_pids(kid)
    return out


def _command(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except OSError:
        return []


def _stage(start_pid: int, name: str) -> int:
    """The pid of `start`'s child running `cdc-ingest <name>`."""
    pids = [p for p in child_pids(start_pid) if _command(p)[3:4] == [name]]
    assert len(pids) == 1, {p: _command(p) for p in child_pids(start_pid)}
    return pids[0]


def _end(proc: subprocess.Popen[bytes]) -> None:
    """After a failure: stop start, then anything it left behind (only its own processes)."""
    family = _descendants(proc.pid)
    try:
        stop(proc, timeout=90)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    for pid in family:
        if process_alive(pid):
            os.kill(pid, signal.SIGKILL)


def _wait_in_log(proc: subprocess.Popen[bytes], log: Path, text: str, what: str) -> None:
    wait_for(lambda: text in log.read_text() or proc.poll() is not None,
             timeout=120, what=what)
    assert proc.poll() is None, log.read_text()[-3000:]


def test_start_stops_both_when_one_dies_and_says_which(
    mariadb: Any, kafka: Any, fresh_db: str, tmp_path: Path
) -> None:
    db = fresh_db
    conn = admin_conn(mariadb, db)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY)")
    config = write_pipeline(tmp_path / "p.yaml", mariadb, kafka, f"supervise-{db}", f"{db}.t",
                            pipeline={"parallelism": 1})

    # 1. capture dies: start stops the sink and exits 9 naming capture and its code
    log = tmp_path / "start.log"
    proc = start_command("start", config, log)
    try:
        _wait_in_log(proc, log, "starts at", "capture running")
        with conn.cursor() as cur:  # the sink logs a batch only when there is data
            cur.execute("INSERT INTO t VALUES (1)")
        _wait_in_log(proc, log, "batch ", "a sink batch")
        capture, sink = _stage(proc.pid, "capture"), _stage(proc.pid, "sink")
        family = _descendants(proc.pid)  # the sink's JVM and Python workers too
        os.kill(capture, signal.SIGKILL)
        began = time.monotonic()
        code = proc.wait(90)
        took = time.monotonic() - began
    finally:
        if proc.poll() is None:
            _end(proc)
    output = log.read_text()
    assert code == 9, output[-3000:]
    assert "capture was killed by signal SIGKILL" in output, output[-3000:]
    assert "sink exited 0 after being asked to stop" in output, output[-3000:]
    assert not process_alive(capture) and not process_alive(sink)
    wait_for(lambda: not any(process_alive(p) for p in family), timeout=30,
             what=f"every process of start gone: {[_command(p) for p in family]}")
    print(f"start exited {took:.1f} s after capture was killed")

    # 2. SIGTERM to start once both run: both stop cleanly, exit 0
    log = tmp_path / "start2.log"
    proc = start_command("start", config, log)
    try:
        _wait_in_log(proc, log, "starts at", "capture running")
        _wait_in_log(proc, log, "sink query started", "the sink's query running")
        family = _descendants(proc.pid)
        children = child_pids(proc.pid)
        assert len(children) == 2, [_command(p) for p in children]
    finally:
        code = stop(proc, timeout=90)
    assert code == 0, log.read_text()[-3000:]
    assert not any(process_alive(p) for p in children)
    wait_for(lambda: not any(process_alive(p) for p in family), timeout=30,
             what=f"every process of start gone: {[_command(p) for p in family]}")

    # 3. SIGTERM to start's whole process group, as `kill %1`, `timeout`, Ctrl-C and
    # supervisord's stopasgroup deliver it: start alone takes it (capture, the sink and
    # Spark's JVM run in their own groups) and stops them in order: exit 0, no traceback
    log = tmp_path / "start3.log"
    with log.open("ab") as handle:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cdc_ingest.cli", "start", "--config", str(config)],
            stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_in_log(proc, log, "sink query started", "the sink's query running")
        with conn.cursor() as cur:
            cur.execute("INSERT INTO t VALUES (3)")
        wait_for(lambda: log.read_text().count("batch ") >= 1, timeout=60, what="a batch")
        family = _descendants(proc.pid)
        os.killpg(proc.pid, signal.SIGTERM)
        code = proc.wait(90)
    finally:
        if proc.poll() is None:
            _end(proc)
    output = log.read_text()
    assert code == 0, output[-3000:]
    for noise in ("Traceback", "Py4J", "not cleanly"):
        assert noise not in output, output[-3000:]
    wait_for(lambda: not any(process_alive(p) for p in family), timeout=30,
             what=f"every process of start gone: {[_command(p) for p in family]}")
