"""MariaDB's plugin types from binlog bytes to the server's text (the integration tests compare
every value with a real server's SELECT; these pin the rules of ``Inet6::to_string``)."""

from __future__ import annotations

import ipaddress

import pytest

from cdc_ingest.capture.mariadb_types import inet4_text, inet6_text, uuid_text


@pytest.mark.parametrize(("text", "printed"), [
    ("::", "::"),
    ("::1", "::1"),
    ("1::", "1::"),
    ("1:0:2:3:4:5:6:7", "1::2:3:4:5:6:7"),  # one zero group is compressed too
    ("1:0:0:2:0:0:0:3", "1:0:0:2::3"),  # the longest run
    ("1:0:0:2:0:0:3:4", "1::2:0:0:3:4"),  # the first of equal runs
    ("::ffff:10.1.2.3", "::ffff:10.1.2.3"),  # IPv4-mapped
    ("::1.2.3.4", "::1.2.3.4"),  # IPv4-compatible: exactly six zero groups first
    ("::ffff:0:0", "::ffff:0.0.0.0"),
    ("2001:DB8::1", "2001:db8::1"),
])
def test_inet6_prints_as_mariadb_does(text: str, printed: str) -> None:
    assert inet6_text(ipaddress.IPv6Address(text).packed) == printed


def test_trailing_zero_bytes_dropped_by_the_binlog_are_restored() -> None:
    assert uuid_text(b"") == "00000000-0000-0000-0000-000000000000"
    assert uuid_text(bytes(range(1, 17))) == "01020304-0506-0708-090a-0b0c0d0e0f10"
    assert inet4_text(b"\xc0\xa8") == "192.168.0.0"
    assert inet6_text(b"\x00\x01") == "1::"
