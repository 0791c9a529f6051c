"""MySQL GTIDs on the wire: a GTID set as COM_BINLOG_DUMP_GTID wants it, and the body of
a GTID_TAGGED_LOG_EVENT (type 42). Pure functions, no I/O.

GTID set (sql/rpl_gtid_set.cc ``Gtid_set::encode`` / ``add_gtid_encoding``, MySQL 8.3+),
all integers little-endian::

    n_sids      8 bytes   untagged format: the number of uuid[:tag] sources
                          tagged format:   0x01 << 56 | n << 8 | 0x01 (``encode_nsids_format``)
    per source, in MySQL's order (uuid bytes, then tag; ``Tsid_map::get_sorted_sidno``):
      uuid        16 bytes
      tag         tagged format only: varint length + the characters (``Tag::encode_tag``;
                  length 0 for the untagged intervals of a uuid)
      n_intervals 8 bytes, then per interval: start 8 bytes, end 8 bytes (exclusive)

The tagged format is used only when the set has a tag, so servers before 8.3 get what they
know.

A tagged GTID event body is one mysql::serialization message (libs/mysql/serialization,
readme.md; ``Gtid_event::define_fields`` in libs/mysql/binlog/event/control_events.h)::

    varint format version (1), varint message size (all of it), varint last non-ignorable
    field id, then fields as ``varint id`` + value, ids ascending, optional ones left out:
    0 gtid_flags (uint8)   1 uuid (16 x varint uint8)   2 gno (signed)   3 tag (string)
    4 last_committed (signed)   5 sequence_number (signed)   6 immediate_commit_timestamp
    7 original_commit_timestamp (absent: = immediate)   8 transaction_length
    9 immediate_server_version (uint32)   10 original_server_version (absent: = immediate)
    11 commit_group_ticket (absent: 0)

Varints (``variable_length_integers.h``): the first byte's trailing one bits + 1 is the byte
count (1..9), the value follows those bits, little-endian; signed values are zig-zag
encoded (``x << 1``, or ``(-(x + 1) << 1) | 1`` when negative).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

from cdc_ingest.mysql.gtid import (
    GNO_MAX,
    TAG_MAX,
    GtidIntervals,
    format_gtid_set,
    ordered_sources,
    parse_gtid_set_strict,
)

_FORMAT_TAGGED = 1  # mysql::gtid::Gtid_format::tagged
SERIALIZATION_VERSION = 1  # mysql::serialization::serialization_format_version
FLAG_MAY_HAVE_SBR = 1  # Gtid_event::FLAG_MAY_HAVE_SBR
_TAG_CHARS = re.compile(r"[a-z_][a-z0-9_]*", re.IGNORECASE)
_U64 = 2**64 - 1


def varint(value: int) -> bytes:
    """An unsigned integer (0 .. 2**64-1) in mysql::serialization's variable-length form."""
    if not 0 <= value <= _U64:
        raise ValueError(f"{value} does not fit an unsigned 64-bit integer")
    size = (value.bit_length() * 575 >> 12) + 1  # get_size_integer_varlen_unsigned
    if size == 9:
        return b"\xff" + value.to_bytes(8, "little")
    return ((value << size) | ((1 << (size - 1)) - 1)).to_bytes(size, "little")


def signed_varint(value: int) -> bytes:
    """A signed 64-bit integer, zig-zag encoded then as ``varint``."""
    if not -(2**63) <= value < 2**63:
        raise ValueError(f"{value} does not fit a signed 64-bit integer")
    return varint(value << 1 if value >= 0 else ((-(value + 1)) << 1) | 1)


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """(value, position after it) of the unsigned varint at ``data[pos]``."""
    if pos >= len(data):
        raise ValueError(f"varint expected at byte {pos}, the data ends there")
    first = data[pos]
    size = 9 if first == 0xFF else (~first & (first + 1)).bit_length()  # trailing ones + 1
    if pos + size > len(data):
        raise ValueError(f"{size}-byte varint at byte {pos} runs past the end ({len(data)} bytes)")
    if size == 9:
        return int.from_bytes(data[pos + 1:pos + 9], "little"), pos + 9
    return int.from_bytes(data[pos:pos + size], "little") >> size, pos + size


def _read_signed(data: bytes, pos: int) -> tuple[int, int]:
    raw, pos = read_varint(data, pos)
    return (raw >> 1) ^ -(raw & 1), pos


# --- GTID sets ---------------------------------------------------------------------------


def encode_gtid_set(gtid_set: str) -> bytes:
    """The binary GTID set of COM_BINLOG_DUMP_GTID's data (and of Previous_gtids events)."""
    sources = ordered_sources(parse_gtid_set_strict(gtid_set))
    tagged = any(tag for _, tag, _ in sources)
    count = len(sources)
    head = (_FORMAT_TAGGED << 56 | count << 8 | _FORMAT_TAGGED) if tagged else count
    out = [struct.pack("<Q", head)]
    for uuid, tag, intervals in sources:
        out.append(bytes.fromhex(uuid.replace("-", "")))
        if tagged:
            out.append(varint(len(tag)) + tag.encode("ascii"))
        out.append(struct.pack("<Q", len(intervals)))
        out += [struct.pack("<qq", low, high + 1) for low, high in intervals]
    return b"".join(out)


def decode_gtid_set(data: bytes) -> str:
    """``encode_gtid_set`` backwards: MySQL's text of a binary GTID set (either format)."""
    if len(data) < 8:
        raise ValueError(f"a binary GTID set has at least 8 bytes, got {len(data)}")
    head = struct.unpack_from("<Q", data)[0]
    fmt = head >> 56
    if fmt not in (0, _FORMAT_TAGGED) or (fmt and head & 0xFF != _FORMAT_TAGGED):
        raise ValueError(f"unknown GTID set format in its first 8 bytes {data[:8].hex()}")
    count = (head >> 8) & (2**48 - 1) if fmt else head
    pos = 8
    intervals: GtidIntervals = {}
    for _ in range(count):
        if pos + 16 > len(data):
            raise ValueError(f"binary GTID set ends inside a uuid at byte {pos}")
        hexed = data[pos:pos + 16].hex()
        key = "-".join((hexed[:8], hexed[8:12], hexed[12:16], hexed[16:20], hexed[20:]))
        pos += 16
        if fmt:
            length, pos = read_varint(data, pos)
            tag = data[pos:pos + length].decode("ascii", "replace")
            if length > TAG_MAX or len(tag) != length or (tag and not _TAG_CHARS.fullmatch(tag)):
                raise ValueError(f"bad tag {tag[:40]!r} in a binary GTID set at byte {pos}")
            key, pos = (f"{key}:{tag}" if tag else key), pos + length
        if pos + 8 > len(data):
            raise ValueError(f"binary GTID set ends before an interval count at byte {pos}")
        n_intervals = struct.unpack_from("<Q", data, pos)[0]
        pos += 8
        if pos + 16 * n_intervals > len(data):
            raise ValueError(f"binary GTID set too short for {n_intervals} intervals of {key}")
        last = 0
        for _ in range(n_intervals):  # ascending with gaps, as add_gtid_encoding checks
            start, end = struct.unpack_from("<qq", data, pos)
            pos += 16
            if not last < start < end <= GNO_MAX + 1:
                raise ValueError(f"bad interval [{start}, {end}) of {key} in a binary GTID set")
            intervals.setdefault(key, []).append((start, end - 1))
            last = end
    if pos != len(data):
        raise ValueError(f"{len(data) - pos} bytes after a binary GTID set of {pos} bytes")
    return format_gtid_set(intervals)


# --- GTID_TAGGED_LOG_EVENT -------------------------------------------------------------------


@dataclass(frozen=True)
class TaggedGtidEvent:
    """A decoded GTID_TAGGED_LOG_EVENT. Timestamps are microseconds since the epoch."""

    uuid: str
    tag: str
    gno: int
    flags: int
    last_committed: int
    sequence_number: int
    immediate_commit_timestamp: int
    original_commit_timestamp: int
    transaction_length: int
    immediate_server_version: int
    original_server_version: int
    commit_group_ticket: int

    @property
    def gtid(self) -> str:
        """``uuid:tag:gno`` (``uuid:gno`` should a server ever send it without a tag)."""
        return f"{self.uuid}:{self.tag}:{self.gno}" if self.tag else f"{self.uuid}:{self.gno}"

    @property
    def may_have_sbr(self) -> bool:
        """The transaction may have statement-based changes (gtid_flags bit 0)."""
        return bool(self.flags & FLAG_MAY_HAVE_SBR)


_LAST_FIELD = 11  # commit_group_ticket
_UNSIGNED_MAX = {0: 0xFF, 9: 0xFFFFFFFF, 10: 0xFFFFFFFF}  # narrower than 64 bits
_SIGNED = (2, 4, 5)


def _read_field(body: bytes, pos: int, field: int) -> tuple[object, int]:
    if field == 1:
        raw = []
        for _ in range(16):
            byte, pos = read_varint(body, pos)
            if byte > 0xFF:
                raise ValueError(f"uuid byte {byte} > 255 in a tagged GTID event")
            raw.append(byte)
        hexed = bytes(raw).hex()
        return "-".join((hexed[:8], hexed[8:12], hexed[12:16], hexed[16:20], hexed[20:])), pos
    if field == 3:
        length, pos = read_varint(body, pos)
        tag = body[pos:pos + length].decode("ascii", "replace")
        if length > TAG_MAX or len(tag) != length or (tag and not _TAG_CHARS.fullmatch(tag)):
            raise ValueError(f"bad tag {tag[:40]!r} ({length} bytes) in a tagged GTID event")
        return tag.lower(), pos + length
    if field in _SIGNED:
        return _read_signed(body, pos)
    value, pos = read_varint(body, pos)
    if value > _UNSIGNED_MAX.get(field, _U64):
        raise ValueError(f"field {field} = {value} is out of range in a tagged GTID event")
    return value, pos


def parse_tagged_gtid_event(body: bytes) -> TaggedGtidEvent:
    """Decode a GTID_TAGGED_LOG_EVENT body: after the 19-byte event header, without the
    4-byte checksum. ``ValueError`` on anything malformed."""
    version, pos = read_varint(body, 0)
    if version != SERIALIZATION_VERSION:
        raise ValueError(f"tagged GTID event: serialization format {version}, only "
                         f"{SERIALIZATION_VERSION} is known")
    size, pos = read_varint(body, pos)
    if size != len(body):
        raise ValueError(f"tagged GTID event says {size} bytes, the body has {len(body)} "
                         "(a checksum left on, or a truncated event?)")
    last_needed, pos = read_varint(body, pos)
    if last_needed > _LAST_FIELD + 1:
        raise ValueError(f"tagged GTID event has unknown fields that must not be skipped "
                         f"(up to id {last_needed - 1}); a newer server format?")
    values: dict[int, object] = {}
    for field in range(_LAST_FIELD + 1):
        if pos == size:
            break
        field_id, after = read_varint(body, pos)
        if field_id == field:
            values[field], pos = _read_field(body, after, field)
    if pos < size:
        field_id, _ = read_varint(body, pos)
        if field_id <= _LAST_FIELD:  # newer servers may only append fields after the known
            raise ValueError(f"tagged GTID event: field {field_id} out of order at byte {pos}")
    for needed, name in ((1, "uuid"), (2, "gno")):
        if needed not in values:
            raise ValueError(f"tagged GTID event without its {name}")
    gno = values[2]
    if not isinstance(gno, int) or not 1 <= gno <= GNO_MAX:
        raise ValueError(f"tagged GTID event: gno {gno} is not within 1..{GNO_MAX}")
    number = {k: v for k, v in values.items() if isinstance(v, int)}
    immediate_ts = number.get(6, 0)
    immediate_version = number.get(9, 0)
    return TaggedGtidEvent(
        uuid=str(values[1]), tag=str(values.get(3, "")), gno=gno, flags=number.get(0, 0),
        last_committed=number.get(4, 0), sequence_number=number.get(5, 0),
        immediate_commit_timestamp=immediate_ts,
        original_commit_timestamp=number.get(7, immediate_ts),
        transaction_length=number.get(8, 0),
        immediate_server_version=immediate_version,
        original_server_version=number.get(10, immediate_version),
        commit_group_ticket=number.get(11, 0))
