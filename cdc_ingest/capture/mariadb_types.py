"""MariaDB's data-type plugins UUID (10.7+), INET4 (10.10+) and INET6 (10.5+) from their binlog
bytes to the text the server prints for them (what ``SELECT`` shows, the snapshot reads and
``verify`` compares with).

The binlog describes such a column as BINARY(16 / 4 / 16) with the binary charset; only the
catalog (``information_schema.COLUMNS.DATA_TYPE``) names the type, so capture takes it from
there (:class:`cdc_ingest.mysql.TableFacts`). A row image packs the value like BINARY's:
trailing zero bytes dropped, so each reading pads first.
"""

from __future__ import annotations

from collections.abc import Callable


def uuid_text(data: bytes) -> str:
    """MariaDB's UUID as the server prints it. The binlog holds its 16 bytes in the text's
    order (the storage engine's swapped order is undone when a row is packed), trailing zero
    bytes dropped like BINARY(16)'s."""
    h = data.ljust(16, b"\x00").hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def inet4_text(data: bytes) -> str:
    """MariaDB's INET4 (4 bytes, network order) as the server prints it."""
    a, b, c, d = data.ljust(4, b"\x00")
    return f"{a}.{b}.{c}.{d}"


def inet6_text(data: bytes) -> str:
    """MariaDB's INET6 (16 bytes, network order) as the server prints it (``Inet6::to_string``):
    the longest run of zero groups (the first of equals, one group too) as ``::``, groups in
    lower-case hex without leading zeros, and the last 32 bits as a dotted IPv4 address when
    exactly the first six groups are zero (``::1.2.3.4``) or the first five are and the sixth
    is ffff (``::ffff:1.2.3.4``)."""
    raw = data.ljust(16, b"\x00")
    words = [raw[i] << 8 | raw[i + 1] for i in range(0, 16, 2)]
    gap_pos, gap_len, run_pos, run_len = -1, 0, -1, 0
    for i, word in enumerate([*words, 1]):  # a sentinel closes a trailing run
        if word == 0:
            run_pos, run_len = (run_pos, run_len + 1) if run_pos >= 0 else (i, 1)
            continue
        if run_pos >= 0 and run_len > gap_len:
            gap_pos, gap_len = run_pos, run_len
        run_pos, run_len = -1, 0
    if gap_pos == 0 and (gap_len == 6 or (gap_len == 5 and words[5] == 0xFFFF)):
        prefix = "::" if gap_len == 6 else "::ffff:"
        return prefix + ".".join(str(b) for b in raw[12:])
    out, i = [], 0
    while i < 8:
        if i == gap_pos:
            out.append("::" if i == 0 else ":")
            i += gap_len
            continue
        out.append(f"{words[i]:x}" + (":" if i != 7 else ""))
        i += 1
    return "".join(out)


# MariaDB's plugin types -> (n of the BINARY(n) the binlog describes them as, their text from
# the binlog's bytes)
PLUGIN_TYPES: dict[str, tuple[int, Callable[[bytes], str]]] = {
    "uuid": (16, uuid_text), "inet4": (4, inet4_text), "inet6": (16, inet6_text),
}
