"""The snapshot's packet reader when the server stops a SELECT in the middle, on purpose.

The rows are slow on the server (``SLEEP`` per row, each row bigger than the server's
network buffer, so each arrives alone); once the first rows are in, another connection
kills the query, or the whole connection. A killed query ends in the server's error packet:
the read fails naming the chunk and the connection works for the next query. A killed
connection is a lost server: ``SourceUnavailable``, the kind capture rides through.
"""

from __future__ import annotations

from typing import Any

import pytest

from cdc_ingest.capture.snapshot import values as V
from cdc_ingest.capture.snapshot.table import _textrows
from cdc_ingest.errors import SourceError, SourceUnavailable
from cdc_ingest.mysql import ConnectionSettings, connect, query_rows
from cdc_ingest.mysql.packets import stream_packets
from tests.conftest import admin_conn
from tests.integration.flavors import Source

ROWS = 40
WIDE = 40_000  # bytes a row: more than the server's network buffer (16 KiB)


class KillAfterFirstRows:
    """A compiled reader of ``(id, pad, slept)`` that runs ``kill`` once rows have come."""

    def __init__(self, seq: int, kill: Any) -> None:
        self.rows: dict[bytes, tuple[bytes, bytes]] = {}
        plain = V.json_converter("utf8", None, None)
        self._parser = _textrows.TextRows(
            [V.TEXT_INT, V.TEXT_STR, V.TEXT_INT], [plain] * 3,
            [(b'"id":', 0), (b'"slept":', 2)], [(b'"id":', 0)], seq, self.rows)
        self._kill = kill
        self.feeds = 0

    @property
    def seq(self) -> int:
        return int(self._parser.seq)

    @property
    def last(self) -> bytes | None:
        return self._parser.last  # type: ignore[no-any-return]

    def feed(self, data: bytes) -> int:
        self.feeds += 1
        state = int(self._parser.feed(data))
        if self._kill is not None and len(self.rows) >= 2:
            self._kill()
            self._kill = None
        return state


def _setup(source: Source, db: str) -> tuple[Any, int]:
    assert _textrows is not None, "the compiled extensions are not built (pip install -e .)"
    with admin_conn(source, db) as admin, admin.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY)")
        cur.execute("INSERT INTO t VALUES " + ",".join(f"({i})" for i in range(1, ROWS + 1)))
    settings = ConnectionSettings(host="127.0.0.1", port=source.port, user="root",
                                  password=source.admin["password"])
    conn = connect(settings, server_text=True)
    return conn, int(query_rows(conn, "SELECT CONNECTION_ID()")[0][0])


SLOW = "SELECT id, REPEAT('x', %s), SLEEP(0.05) FROM {db}.t ORDER BY id"


@pytest.mark.parametrize("kill", ["QUERY", "CONNECTION"])
def test_a_select_killed_in_the_middle_fails_cleanly(
        source: Source, fresh_source_db: str, kill: str) -> None:
    conn, conn_id = _setup(source, fresh_source_db)
    made: list[KillAfterFirstRows] = []

    def killer() -> None:
        with admin_conn(source) as admin, admin.cursor() as cur:
            cur.execute(f"KILL {kill} {conn_id}")

    def parser(_converters: list[Any], seq: int) -> KillAfterFirstRows:
        made.append(KillAfterFirstRows(seq, killer))
        return made[0]

    expected = SourceError if kill == "QUERY" else SourceUnavailable
    with pytest.raises(expected) as failure:
        stream_packets(conn, SLOW.format(db=fresh_source_db), (WIDE,), "a snapshot chunk of x.t",
                       parser)
    text = str(failure.value)
    assert "a snapshot chunk of x.t" in text
    assert 2 <= len(made[0].rows) < ROWS  # rows came, then the server stopped sending
    if kill == "QUERY":
        assert type(failure.value) is SourceError and "interrupted" in text.lower()
        # the error packet ended the result: the connection goes on as usual
        assert query_rows(conn, "SELECT 41 + 1") == [(42,)]
    else:
        assert not conn.open  # it was lost: closed, so nothing reads a half stream again
    conn.close()


def test_a_select_read_whole_leaves_the_connection_ready(
        source: Source, fresh_source_db: str) -> None:
    conn, _ = _setup(source, fresh_source_db)
    made: list[KillAfterFirstRows] = []

    def parser(_converters: list[Any], seq: int) -> KillAfterFirstRows:
        made.append(KillAfterFirstRows(seq, None))
        return made[-1]

    sql = f"SELECT id, REPEAT('x', %s), 0 FROM {fresh_source_db}.t ORDER BY id"
    for _ in range(3):  # the same connection, again and again
        stream_packets(conn, sql, (WIDE,), "x.t", parser)
        assert query_rows(conn, "SELECT 1") == [(1,)]
    assert [len(p.rows) for p in made] == [ROWS] * 3
    assert made[0].rows[b'{"id":7}'] == (b'{"id":7}', b'{"id":7,"slept":0}')
    assert made[0].feeds > 1  # 1.6 MB came in several reads
    conn.close()
