"""Which way a set-binlog-position moves capture, in the words its log and notification use
(capture/set_position.py): back (what is read again), forward (what is skipped), or both."""

from __future__ import annotations

import pytest

from cdc_ingest.capture.set_position import _direction
from cdc_ingest.model import Position

U = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


@pytest.mark.parametrize(("old", "new", "mariadb", "said"), [
    ("0-1-6000", "0-1-5000", True, "back: reads again domain 0: 5001-6000"),
    ("0-1-5000", "0-1-6000", True, "forward: skips domain 0: 5001-6000"),
    ("0-1-5000,1-2-9", "0-1-6000,1-2-3", True,
     "back: reads again domain 1: 4-9; forward: skips domain 0: 5001-6000"),
    ("0-1-5000", "0-1-5000", True, "the same position"),
    (f"{U}:1-6000", f"{U}:1-5000", False, f"back: reads again {U}:5001-6000"),
    (f"{U}:1-5000", f"{U}:1-6000", False, f"forward: skips {U}:5001-6000"),
])
def test_direction_of_gtid_sets(old: str, new: str, mariadb: bool, said: str) -> None:
    assert _direction(Position(gtid_set=old), Position(gtid_set=new), mariadb) == said


def test_direction_of_files_and_positions() -> None:
    old = Position(file="b.000002", pos=900)
    assert _direction(old, Position(file="b.000001", pos=4), False) == (
        "back: reads again from b.000001:4 to b.000002:900")
    assert _direction(old, Position(file="b.000002", pos=1200), False) == (
        "forward: skips b.000002:900 to b.000002:1200")


@pytest.mark.parametrize(("have", "wanted", "lacks"), [
    (f"{U}:1-5000", f"{U}:1-6000", f"{U}:5001-6000"),
    (f"{U}:1-10:20-30", f"{U}:1-40", f"{U}:11-19,{U}:31-40"),
    (f"{U}:5-8", f"{U}:1-3", f"{U}:1-3"),
    (f"{U}:1-40", f"{U}:3-9", ""),
    ("", f"{U}:7", f"{U}:7-7"),
])
def test_subtract_is_exact(have: str, wanted: str, lacks: str) -> None:
    from cdc_ingest.mysql.gtid import subtract  # noqa: PLC0415 - next to its cases

    assert subtract(have, wanted) == lacks


@pytest.mark.parametrize(("mariadb", "text", "why"), [
    (False, "garbage", "is not a MySQL GTID set"),
    (False, f"{U}:abc", "it names no transaction"),
    (False, f"{U}:9-3", "it names no transaction"),  # reversed: empty, as in MySQL
    (True, "0-1", "is not a MariaDB GTID list"),
    (True, "0-1-x", "is not a MariaDB GTID list"),
])
def test_a_gtid_set_spelled_wrong_is_refused_not_a_crash(mariadb: bool, text: str,
                                                         why: str) -> None:
    from cdc_ingest.capture.set_position import Refused, _spelled  # noqa: PLC0415

    class Server:
        is_mariadb = mariadb

    with pytest.raises(Refused, match=why):
        _spelled(Server(), text)  # type: ignore[arg-type]
    _spelled(Server(), "0-1-5,1-2-9" if mariadb else f"{U}:1-5")  # spelled right: taken
