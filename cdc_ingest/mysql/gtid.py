"""MySQL GTID sets as plain data: parse, and tell what one set has that another lacks.

``uuid:1-5:7,uuid2:tag:1-3`` -> ``{"uuid": [(1, 5), (7, 7)], "uuid2:tag": [(1, 3)]}``.
Server differences use it (``flavor.py``); the binlog reader keeps its own (the library's).
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
