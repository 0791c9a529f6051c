"""MySQL GTID sets as plain data: parse, tell what one set lacks, add one GTID, print.

``uuid:1-5:7,uuid2:tag:1-3`` -> ``{"uuid": [(1, 5), (7, 7)], "uuid2:tag": [(1, 3)]}``.
Server differences use it (``flavor.py``); the binlog reader still keeps the library's GtidSet,
which cannot parse tags: ``add_gtid``/``format_gtid_set`` here and ``gtid_wire`` are its
replacement. Tagged GTIDs (MySQL 8.3+, ``uuid:tag:gno``) are sources of their own.
``format_gtid_set`` prints a set the way MySQL prints ``@@gtid_executed`` (sql/rpl_gtid_set.cc
``Gtid_set::to_string``, ``default_string_format``): uuids in byte order, each once, its
untagged intervals first, then its tags in alphabetical order, ``uuid:1-5:7-9:tag:1-3``,
uuids joined by ``",\n"``.
"""

from __future__ import annotations

import re

GtidIntervals = dict[str, list[tuple[int, int]]]
_TAG = re.compile(r"[a-z_][a-z0-9_]*", re.IGNORECASE)


def parse_gtid_set(text: str) -> GtidIntervals:
    out: GtidIntervals = {}
    for part in filter(None, (p.strip() for p in text.replace("\n", "").split(","))):
        fields = part.split(":")
        source, tag = fields[0].lower(), ""
        for field in fields[1:]:
            if _TAG.fullmatch(field):
                tag = field.lower()
                continue
            low, _, high = field.partition("-")
            key = f"{source}:{tag}" if tag else source
            out.setdefault(key, []).append((int(low), int(high or low)))
    return out


def _covered(interval: tuple[int, int], by: list[tuple[int, int]]) -> bool:
    """Every number of ``interval`` is in one of ``by``'s intervals (joined where adjacent)."""
    low, high = interval
    for start, end in sorted(by):
        if start > low:
            return False
        if end >= low:
            low = end + 1
            if low > high:
                return True
    return low > high


def lacking(have: str, wanted: str) -> str:
    """The part of ``wanted`` that ``have`` lacks, as ``source:low-high`` items; "" if none."""
    mine = parse_gtid_set(have)
    out = []
    for source, intervals in parse_gtid_set(wanted).items():
        for interval in intervals:
            if not _covered(interval, mine.get(source, [])):
                out.append(f"{source}:{interval[0]}-{interval[1]}")
    return ",".join(out)


def mariadb_gtid_list(gtid_list: str) -> dict[int, tuple[int, int]]:
    """MariaDB's ``0-1-5000,1-2-9`` -> ``{domain: (server_id, sequence)}``; ValueError when
    an item is not ``domain-server-sequence``."""
    out = {}
    for part in filter(None, (p.strip() for p in gtid_list.split(","))):
        domain, server, seq = (int(x) for x in part.split("-"))
        out[domain] = (server, seq)
    return out


def subtract(have: str, wanted: str) -> str:
    """The GTIDs of ``wanted`` that ``have`` lacks, exactly, as ``source:low-high`` items
    joined by ``,``; "" if none."""
    mine = parse_gtid_set(have)
    out = []
    for source, intervals in parse_gtid_set(wanted).items():
        for first, high in intervals:
            low = first  # the first number of the interval not yet accounted for
            for start, end in sorted(mine.get(source, [])):
                if end < low or start > high:
                    continue
                if start > low:
                    out.append(f"{source}:{low}-{start - 1}")
                low = max(low, end + 1)
                if low > high:
                    break
            if low <= high:
                out.append(f"{source}:{low}-{high}")
    return ",".join(out)


# --- strict parsing and MySQL's own text (tagged GTIDs included) --------------------------

GNO_MAX = 2**63 - 2  # MySQL: a gno is below GNO_END = INT64_MAX
TAG_MAX = 32  # mysql::gtid::tag_max_length
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
_TAG_STRICT = re.compile(r"[a-z_][a-z0-9_]{0,%d}" % (TAG_MAX - 1), re.IGNORECASE)
_INTERVAL = re.compile(r"([0-9]+)\s*(?:-\s*([0-9]+))?")

Source = tuple[str, str, list[tuple[int, int]]]  # (uuid, tag or "", merged intervals)


def _uuid(text: str, where: str) -> str:
    text = text.strip()
    if not _UUID.fullmatch(text):
        raise ValueError(f"expected a UUID (8-4-4-4-12 hex digits), got {text[:40]!r} in {where!r}")
    return text.lower()


def _tag(text: str, where: str) -> str:
    text = text.strip()
    if not _TAG_STRICT.fullmatch(text):
        raise ValueError(f"expected a GTID tag ([a-z_][a-z0-9_]*, at most {TAG_MAX} "
                         f"characters), got {text[:40]!r} in {where!r}")
    return text.lower()


def _gno(text: str, where: str) -> int:
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= GNO_MAX:
        raise ValueError(f"expected a transaction number 1..{GNO_MAX}, got {text[:30]!r} "
                         f"in {where!r}")
    return int(text)


def parse_gtid_set_strict(text: str) -> GtidIntervals:
    """Like ``parse_gtid_set`` but what MySQL would refuse raises ``ValueError``.

    Tags are lower-cased, at most 32 characters; a reversed interval (``5-3``) is empty, as in
    MySQL; whitespace around items is allowed. Keys with no interval may be present.
    """
    out: GtidIntervals = {}
    for part in text.split(","):
        if not part.strip():
            continue
        fields = part.split(":")
        uuid = key = _uuid(fields[0], part)
        for item in fields[1:]:
            field = item.strip()
            if field[:1].isalpha() or field[:1] == "_":
                key = f"{uuid}:{_tag(field, part)}"
                continue
            match = _INTERVAL.fullmatch(field)
            if not match:
                raise ValueError(f"expected a tag or an interval, got {field[:40]!r} in {part!r}")
            low = _gno(match[1], part)
            high = _gno(match[2], part) if match[2] else low
            out.setdefault(key, [])
            if high >= low:
                out[key].append((low, high))
    return out


def _merged(intervals: list[tuple[int, int]], where: str) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for low, high in sorted(intervals):
        if not 1 <= low <= high <= GNO_MAX:
            raise ValueError(f"interval {low}-{high} of {where!r} is not within 1..{GNO_MAX}")
        if out and low <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], high))
        else:
            out.append((low, high))
    return out


def ordered_sources(intervals: GtidIntervals) -> list[Source]:
    """``(uuid, tag, intervals)`` in MySQL's order (uuid bytes, then "" before tags in byte
    order), intervals sorted and merged where they touch, sources without intervals left out."""
    merged: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for key, items in intervals.items():
        uuid_text, _, tag_text = key.partition(":")
        source = (_uuid(uuid_text, key), _tag(tag_text, key) if tag_text else "")
        merged.setdefault(source, []).extend(items)
    # lower-case hex text sorts like the 16 bytes; "" sorts before any tag
    return [(uuid, tag, ivs) for (uuid, tag), items in sorted(merged.items())
            if (ivs := _merged(items, f"{uuid}:{tag}" if tag else uuid))]


def format_gtid_set(intervals: GtidIntervals) -> str:
    """``{"u": [(1, 5)], "u:t": [(1, 3)]}`` -> ``u:1-5:t:1-3``, as MySQL prints it."""
    groups: list[list[str]] = []
    last_uuid = None
    for uuid, tag, ivs in ordered_sources(intervals):
        if uuid != last_uuid:
            groups.append([uuid])
            last_uuid = uuid
        if tag:
            groups[-1].append(tag)
        groups[-1] += [f"{low}-{high}" if high > low else str(low) for low, high in ivs]
    return ",\n".join(":".join(group) for group in groups)


def parse_gtid(gtid: str) -> tuple[str, int]:
    """``uuid:gno`` or ``uuid:tag:gno`` -> (``uuid`` or ``uuid:tag``, gno); ValueError if not."""
    fields = gtid.split(":")
    if len(fields) not in (2, 3):
        raise ValueError(f"expected uuid:gno or uuid:tag:gno, got {gtid[:80]!r}")
    key = _uuid(fields[0], gtid)
    if len(fields) == 3:
        key += ":" + _tag(fields[1], gtid)
    return key, _gno(fields[-1].strip(), gtid)


def gtid_in_set(gtid_set: str, gtid: str) -> bool:
    """Whether the one GTID ``gtid`` (tagged or not) is in ``gtid_set``."""
    key, gno = parse_gtid(gtid)
    return any(low <= gno <= high for low, high in parse_gtid_set_strict(gtid_set).get(key, []))


def add_gtid(gtid_set: str, gtid: str) -> str:
    """``gtid_set`` plus one executed GTID, in MySQL's text; ``gtid_set`` itself if it has it."""
    key, gno = parse_gtid(gtid)
    intervals = parse_gtid_set_strict(gtid_set)
    mine = intervals.setdefault(key, [])
    if any(low <= gno <= high for low, high in mine):
        return gtid_set
    mine.append((gno, gno))
    return format_gtid_set(intervals)


def has_gtid(gtid_set: str, gtid: str) -> bool:
    """Whether ``gtid_set`` has the one executed GTID ``gtid`` (MariaDB ``d-s-n``: its
    domain's sequence number reached it; MySQL: the set holds it, tagged or not)."""
    if ":" in gtid:
        return gtid_in_set(gtid_set, gtid)
    domain, _server, seq = gtid.split("-")
    for part in (p.strip() for p in gtid_set.split(",")):
        if part.split("-", 1)[0] == domain and int(part.rsplit("-", 1)[1]) >= int(seq):
            return True
    return False


def advance_gtid_set(gtid_set: str, gtid: str) -> str:
    """``gtid_set`` plus one executed GTID (MariaDB ``d-s-n``, or MySQL ``uuid:n`` and
    ``uuid:tag:n``); ``gtid_set`` itself when it has it already (a transaction sent again).
    MySQL sets come out as MySQL prints them, without its line breaks."""
    if ":" in gtid:
        return add_gtid(gtid_set, gtid).replace("\n", "")
    domain, _server, seq = gtid.split("-")
    parts = [p.strip() for p in gtid_set.split(",") if p.strip()] if gtid_set else []
    out = []
    replaced = False
    for part in parts:
        if part.split("-", 1)[0] == domain:
            replaced = True
            if int(part.rsplit("-", 1)[1]) >= int(seq):
                out.append(part)
                continue
            out.append(gtid)
        else:
            out.append(part)
    if not replaced:
        out.append(gtid)
    return ",".join(sorted(out, key=lambda p: int(p.split("-", 1)[0])))
