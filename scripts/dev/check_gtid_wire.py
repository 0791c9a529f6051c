"""Check cdc_ingest.mysql.gtid and gtid_wire against a real MySQL 8.3+ (tagged GTIDs).

    python -m cdc_ingest.services start mysql --home /tmp/gtid-check   # a throwaway server
    python scripts/dev/check_gtid_wire.py --port <its MYSQL97_PORT>
    python -m cdc_ingest.services stop mysql --home /tmp/gtid-check

As root it writes tagged and untagged transactions (database ``gtid_wire_check``, and empty
transactions of two made-up uuids) and rotates the binlog, so the server's gtid_executed keeps
tagged GTIDs afterwards: point it at a throwaway server, not one other tests capture from.

It checks that
1. ``add_gtid``, applied GTID by GTID, gives exactly ``SELECT @@gtid_executed``; so does
   rebuilding the whole set from the GTIDs ``SHOW BINLOG EVENTS`` lists;
2. the server accepts COM_BINLOG_DUMP_GTID with ``encode_gtid_set`` of a set with tagged
   GTIDs and holes (and of an untagged one), and sends exactly the transactions not in it;
3. ``parse_tagged_gtid_event`` decodes every type-42 event to the GTID ``SHOW BINLOG EVENTS``
   reports at that position, with the transaction's true length;
4. every Previous_gtids event (MySQL's own encoding of a set) re-encodes byte for byte and
   holds the GTIDs of the files before it.
Exit status 0 when everything holds, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import re
import struct
import sys
import zlib
from itertools import pairwise
from pathlib import Path

import pymysql

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from anywhere, uninstalled
from cdc_ingest.mysql.gtid import (
    add_gtid,
    format_gtid_set,
    gtid_in_set,
    parse_gtid_set_strict,
)
from cdc_ingest.mysql.gtid_wire import (
    decode_gtid_set,
    encode_gtid_set,
    parse_tagged_gtid_event,
)
from cdc_ingest.services._server import ROOT_PASSWORD

COM_BINLOG_DUMP_GTID = 0x1E
NON_BLOCK, THROUGH_GTID = 0x01, 0x04
ROTATE, PREVIOUS_GTIDS, GTID, TAGGED_GTID = 4, 35, 33, 42
LOW_UUID, HIGH_UUID = "00000000-0000-0000-0000-00000000c0de", "ffffffff-0000-0000-0000-00000000c0de"
_GTID_INFO = re.compile(r"GTID_NEXT\s*=\s*'([^']+)'")
failures: list[str] = []


def say(text: str) -> None:
    sys.stdout.write(text + "\n")


def check(ok: bool, what: str) -> None:
    say(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def one(cur: pymysql.cursors.Cursor, sql: str) -> str:
    cur.execute(sql)
    return str(cur.fetchone()[0] or "")


def binlog_gtids(cur: pymysql.cursors.Cursor) -> list[tuple[str, int, str]]:
    """(file, end position, GTID) of every GTID event in the binlogs, oldest first."""
    cur.execute("SHOW BINARY LOGS")
    out = []
    for file in [row[0] for row in cur.fetchall()]:
        cur.execute(f"SHOW BINLOG EVENTS IN '{file}'")
        for _, _, kind, _, end, info in cur.fetchall():
            if kind in ("Gtid", "Gtid_tagged_log_event") and (m := _GTID_INFO.search(info)):
                out.append((file, int(end), m[1]))
    return out


def next_gno(executed: str, key: str, skip: int = 0) -> int:
    intervals = parse_gtid_set_strict(executed).get(key, [])
    return max((high for _, high in intervals), default=0) + 1 + skip


def check_normalization(cur: pymysql.cursors.Cursor) -> None:
    """format_gtid_set(parse(text)) is MySQL's own normalization, GTID_SUBTRACT(text, '')."""
    server = one(cur, "SELECT @@server_uuid")
    for text in (f"{HIGH_UUID}:5:1-3, {LOW_UUID.upper()}:Tag_2:4:tag_1:9-10:2,{server}:7-9:1-6",
                 f"{server}:z:3-4:1:a:2-2:1,{server}:10-12:tag_1:3:20-19,{LOW_UUID}:q",
                 f"{HIGH_UUID}:1-5:7:6,,{HIGH_UUID}:t:1-9223372036854775806", ""):
        mysql = one(cur, f"SELECT GTID_SUBTRACT('{text}', '')")
        mine = format_gtid_set(parse_gtid_set_strict(text))
        check(mine == mysql, f"format_gtid_set(parse({text!r})) = MySQL's {mysql!r}")


def write_transactions(cur: pymysql.cursors.Cursor) -> None:
    """Each transaction, then: add_gtid(previous set, its GTID) == @@gtid_executed."""
    executed = one(cur, "SELECT @@GLOBAL.gtid_executed")
    check(format_gtid_set(parse_gtid_set_strict(executed)) == executed,
          f"format_gtid_set(parse(gtid_executed)) is gtid_executed ({executed!r})")
    cur.execute("CREATE DATABASE IF NOT EXISTS gtid_wire_check")
    cur.execute("CREATE TABLE IF NOT EXISTS gtid_wire_check.t "
                "(id INT AUTO_INCREMENT PRIMARY KEY, note VARCHAR(40))")
    executed = one(cur, "SELECT @@GLOBAL.gtid_executed")
    low_gap = next_gno(executed, f"{LOW_UUID}:chk_z", skip=1)
    plan = ["AUTOMATIC:chk_a", "AUTOMATIC:chk_a", "AUTOMATIC", "AUTOMATIC:CHK_B",
            f"{LOW_UUID}:chk_z:{low_gap}", f"{HIGH_UUID}:{next_gno(executed, HIGH_UUID)}",
            "AUTOMATIC:chk_a", f"{LOW_UUID}:chk_z:{low_gap - 1}", "AUTOMATIC"]
    for gtid_next in plan:
        cur.execute(f"SET gtid_next = '{gtid_next}'")
        if gtid_next.startswith("AUTOMATIC"):
            cur.execute("INSERT INTO gtid_wire_check.t (note) VALUES (%s)", (gtid_next,))
        else:
            cur.execute("BEGIN")
            cur.execute("COMMIT")
        cur.execute("SET gtid_next = 'AUTOMATIC'")
        gtid = binlog_gtids(cur)[-1][2]
        now = one(cur, "SELECT @@GLOBAL.gtid_executed")
        mine = add_gtid(executed, gtid)
        check(mine == now and gtid_in_set(now, gtid) and add_gtid(now, gtid) is now,
              f"add_gtid(..., {gtid}) -> {mine!r} == gtid_executed {now!r}")
        executed = now


def dump(port: int, host: str, have: str) -> list[tuple[int, bytes, int, bytes]]:
    """COM_BINLOG_DUMP_GTID (non-blocking) from ``have``: (type, header, log_pos, body)."""
    conn = pymysql.connect(host=host, port=port, user="root", password=ROOT_PASSWORD)
    try:
        with conn.cursor() as cur:
            cur.execute("SET @source_binlog_checksum = @@GLOBAL.binlog_checksum, "
                        "@master_binlog_checksum = @@GLOBAL.binlog_checksum")
            checksum = one(cur, "SELECT @@GLOBAL.binlog_checksum") == "CRC32"
        data = encode_gtid_set(have)
        # flags, server_id, binlog name length + name (none), position, data length, data
        payload = struct.pack("<HII", NON_BLOCK | THROUGH_GTID, 0x7FC0DE, 0)
        payload += struct.pack("<QI", 4, len(data)) + data
        conn._execute_command(COM_BINLOG_DUMP_GTID, payload)
        events, bad_crc = [], 0
        while True:
            raw = conn._read_packet().get_all_data()  # raises on an error packet
            if raw[0] == 0xFE and len(raw) < 9:  # EOF: non-blocking dump reached the end
                check(bad_crc == 0, f"server accepted the set; {len(events)} events, "
                      f"{bad_crc} with a bad CRC32")
                return events
            event = raw[1:]
            if checksum:
                bad_crc += zlib.crc32(event[:-4]) != struct.unpack("<I", event[-4:])[0]
                event = event[:-4]
            kind, log_pos = event[4], struct.unpack_from("<I", event, 13)[0]
            events.append((kind, event[:19], log_pos, event[19:]))
    finally:
        conn.close()


def _transaction_length(events: list[tuple[int, bytes, int, bytes]], index: int) -> int:
    """Sizes (header's event size, checksum included) of the GTID event at ``index`` and the
    events of its transaction, up to the next GTID, rotate, format or heartbeat event."""
    size = struct.unpack_from("<I", events[index][1], 9)[0]
    for kind, header, _, _ in events[index + 1:]:
        if kind in (GTID, TAGGED_GTID, 34, ROTATE, 15, PREVIOUS_GTIDS, 27, 41, 3):
            break
        size += struct.unpack_from("<I", header, 9)[0]
    return size


def check_dump(port: int, host: str, have: str, listed: list[tuple[str, int, str]],
               label: str) -> None:
    encoded = encode_gtid_set(have)
    say(f"-- dump from a {label} set ({len(encoded)} bytes, n_sids field {encoded[:8].hex()})")
    events = dump(port, host, have)
    by_position = {(file, end): gtid for file, end, gtid in listed}
    wanted = [gtid for _, _, gtid in listed if not gtid_in_set(have, gtid)]
    got: list[str] = []
    previous: list[tuple[str, str]] = []
    file = ""
    for index, (kind, _, log_pos, body) in enumerate(events):
        if kind == ROTATE:
            file = body[8:].decode()
        elif kind == PREVIOUS_GTIDS:
            decoded = decode_gtid_set(body)
            check(encode_gtid_set(decoded) == body,
                  f"Previous_gtids of {file} re-encodes byte for byte: {body.hex()}")
            previous.append((file, decoded))
        elif kind == TAGGED_GTID:
            event = parse_tagged_gtid_event(body)
            length = _transaction_length(events, index)
            check(event.transaction_length == length
                  and event.original_commit_timestamp == event.immediate_commit_timestamp
                  and event.last_committed < event.sequence_number,
                  f"type 42 {event.gtid}: transaction length {length}, last_committed "
                  f"{event.last_committed}, sequence_number {event.sequence_number}, flags "
                  f"{event.flags}, body {body.hex()}")
            check(by_position.get((file, log_pos)) == event.gtid,
                  f"type 42 at {file}:{log_pos} is {event.gtid}, as SHOW BINLOG EVENTS says")
            got.append(event.gtid)
        elif kind == GTID:
            hexed = body[1:17].hex()
            uuid = "-".join((hexed[:8], hexed[8:12], hexed[12:16], hexed[16:20], hexed[20:]))
            gtid = f"{uuid}:{struct.unpack_from('<q', body, 17)[0]}"
            check(by_position.get((file, log_pos)) == gtid,
                  f"type 33 at {file}:{log_pos} is {gtid}, as SHOW BINLOG EVENTS says")
            got.append(gtid)
    for (_, before), (file, after) in pairwise(previous):
        expected = before
        for _, _, gtid in [g for g in listed if g[0] < file and not gtid_in_set(before, g[2])]:
            expected = add_gtid(expected, gtid)
        check(after == expected, f"Previous_gtids of {file} = {after!r}")
    check(got == wanted, f"{label}: the server sent exactly the {len(wanted)} transactions "
          f"not in the set ({len(got)} sent)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default=os.environ.get("MYSQL97_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("MYSQL97_PORT", "0")))
    args = parser.parse_args()
    if not args.port:
        parser.error("--port (or MYSQL97_PORT) of a running MySQL 8.3+ is needed")
    conn = pymysql.connect(host=args.host, port=args.port, user="root",
                           password=ROOT_PASSWORD, autocommit=True)
    with conn.cursor() as cur:
        say(f"-- MySQL {one(cur, 'SELECT VERSION()')}, server uuid "
            f"{one(cur, 'SELECT @@server_uuid')}")
        check_normalization(cur)
        write_transactions(cur)
        listed = binlog_gtids(cur)
        rebuilt = one(cur, "SELECT @@GLOBAL.gtid_purged")
        for _, _, gtid in listed:
            rebuilt = add_gtid(rebuilt, gtid)
        executed = one(cur, "SELECT @@GLOBAL.gtid_executed")
        check(rebuilt == executed, f"{len(listed)} binlog GTIDs rebuild gtid_executed")
        cur.execute("FLUSH BINARY LOGS")  # a Previous_gtids event holding tagged GTIDs
        purged = one(cur, "SELECT @@GLOBAL.gtid_purged")
    conn.close()
    with_holes = purged
    for index, (_, _, gtid) in enumerate(listed):
        if index % 3 != 1:
            with_holes = add_gtid(with_holes, gtid)
    check(encode_gtid_set(with_holes)[:1] == b"\x01", f"tagged set {with_holes!r}")
    check_dump(args.port, args.host, with_holes, listed, "tagged, with holes,")
    if ":" not in "".join(parse_gtid_set_strict(purged)):  # no purged tagged GTID
        untagged = {key: ivs for key, ivs in parse_gtid_set_strict(with_holes).items()
                    if ":" not in key}
        check_dump(args.port, args.host, format_gtid_set(untagged), listed, "untagged")
    say(f"-- {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
