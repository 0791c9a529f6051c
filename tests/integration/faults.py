"""Tools for fault tests: a writer whose change log lives in MySQL, and a TCP proxy that
plays a virtual IP (a failover moves it to another server).

:class:`LoggedWriter` changes table ``t`` and records each change in table ``changes`` *in
the same transaction*, so the server, not the client, says which changes happened and in
which order, even when a commit's outcome is unknown to the client (the server went away
during it). Each key's expected change sequence is read back from ``changes``.
"""

from __future__ import annotations

import contextlib
import random
import socket
import threading
import time
from typing import Any

import pymysql

KEYS = 80
TABLES = (
    "CREATE TABLE t (id INT PRIMARY KEY, v BIGINT NOT NULL, pad VARCHAR(64))",
    "CREATE TABLE changes (seq BIGINT AUTO_INCREMENT PRIMARY KEY, id INT NOT NULL, v BIGINT)",
)
Sequences = dict[int, list[int | None]]


class LoggedWriter:
    """Random inserts, updates and deletes of ``t`` (one transaction each, with its row in
    ``changes``) from a thread, reconnecting whenever the server is away."""

    def __init__(self, conn_kwargs: dict[str, Any], db: str, seed: int,
                 pause_s: float = 0.01) -> None:
        self.conn_kwargs = {**conn_kwargs, "database": db, "autocommit": False,
                            "connect_timeout": 2, "read_timeout": 10, "write_timeout": 10}
        self.rng = random.Random(seed)
        self.pause_s = pause_s
        self.committed = 0  # commits the client saw succeed
        self.failed = 0  # attempts that raised (server away, read-only, ...)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def create_tables(self) -> None:
        with pymysql.connect(**self.conn_kwargs) as conn, conn.cursor() as cur:
            for ddl in TABLES:
                cur.execute(ddl)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        conn: Any = None
        while not self._stop.is_set():
            try:
                if conn is None:
                    conn = pymysql.connect(**self.conn_kwargs)
                self._change(conn)
                self.committed += 1
            except pymysql.MySQLError:
                self.failed += 1
                if conn is not None:
                    with contextlib.suppress(pymysql.MySQLError):
                        conn.close()
                conn = None
                time.sleep(0.2)
            time.sleep(self.pause_s)
        if conn is not None:
            conn.close()

    def _change(self, conn: Any) -> None:
        key = self.rng.randint(1, KEYS)
        value = self.rng.randint(1, 10**12)
        with conn.cursor() as cur:
            cur.execute("SELECT 1 FROM t WHERE id = %s FOR UPDATE", (key,))
            exists = cur.fetchone() is not None
            if exists and self.rng.random() < 0.25:
                cur.execute("DELETE FROM t WHERE id = %s", (key,))
                cur.execute("INSERT INTO changes (id, v) VALUES (%s, NULL)", (key,))
            else:
                cur.execute("INSERT INTO t (id, v, pad) VALUES (%s, %s, REPEAT('x', %s)) "
                            "ON DUPLICATE KEY UPDATE v = VALUES(v), pad = VALUES(pad)",
                            (key, value, value % 64))
                cur.execute("INSERT INTO changes (id, v) VALUES (%s, %s)", (key, value))
        conn.commit()


def expected_sequences(conn_kwargs: dict[str, Any], db: str) -> Sequences:
    """Each key's change sequence (values; None for a delete), as the server logged it."""
    out: Sequences = {}
    with pymysql.connect(**conn_kwargs, database=db) as conn, conn.cursor() as cur:
        cur.execute("SELECT id, v FROM changes ORDER BY seq")
        for key, value in cur.fetchall():
            out.setdefault(int(key), []).append(None if value is None else int(value))
    return out


class TcpProxy:
    """Forwards connections on :attr:`port` to ``127.0.0.1:<target>``; :meth:`switch` points
    it elsewhere and drops every open connection, as a moved virtual IP does. While
    :attr:`throttle` is set (bytes/s), what the server sends arrives that slowly: a slow
    network, so a fault can be made to land in the middle of a long read."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.throttle: float | None = None
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def switch(self, target: int) -> None:
        with self._lock:
            self.target = target
            dropped, self._open = self._open, []
        for sock in dropped:
            _close(sock)

    def close(self) -> None:
        self._closed = True
        _close(self._listener)
        self.switch(0)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.target), timeout=5)
                server.settimeout(None)
            except OSError:
                _close(client)  # nothing listens there: the client sees the connection drop
                continue
            with self._lock:
                self._open += [client, server]
            for a, b, slowed in ((client, server, False), (server, client, True)):
                threading.Thread(target=self._pump, args=(a, b, slowed), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, slowed: bool) -> None:
        try:
            while data := src.recv(8192 if slowed and self.throttle else 65536):
                dst.sendall(data)
                if slowed and self.throttle:
                    time.sleep(len(data) / self.throttle)
        except OSError:
            pass
        _close(src)
        _close(dst)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
