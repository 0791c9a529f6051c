"""The binlog stream connection's reads, with whether more is already waiting.

PyMySQL reads a connection through ``sock.makefile("rb")``, which cannot say whether bytes
are waiting without blocking for them. Capture needs to know: when nothing more of the
binlog has arrived after a MySQL transaction ends, it has caught up with the server and
commits the open Kafka transaction at once instead of holding the records until the next
event, heartbeat or ``capture.transaction.max-interval`` (cdc_ingest.capture.stream).
:class:`SocketReader` takes the place of that file object on the stream connection: the same
``read(n)`` (short only at end of stream, errors and timeouts as the socket raises them,
which PyMySQL turns into its lost-connection error), plus :meth:`pending`. While it waits for
the server it asks ``stopping`` four times a second and raises :class:`ReadStopped` when it
says so: a stop request is not held up until the next event or heartbeat.
"""

from __future__ import annotations

import select
import socket
import ssl
import time
from collections.abc import Callable

BUFFER_BYTES = 256 << 10  # one receive; a rows event is about 8 KiB (binlog_row_event_max_size)
STOP_CHECK_S = 0.25  # how often a wait for the server asks whether to stop


class ReadStopped(Exception):
    """Stop was requested while waiting for the server (not an OSError: PyMySQL passes it
    through after closing the connection)."""


class SocketReader:
    __slots__ = ("_buf", "_end", "_sock", "_start", "_stopping", "_view")

    def __init__(self, sock: socket.socket, size: int = BUFFER_BYTES,
                 stopping: Callable[[], bool] | None = None) -> None:
        self._sock = sock
        self._stopping = stopping
        self._buf = bytearray(size)
        self._view = memoryview(self._buf)
        self._start = 0  # next unread byte
        self._end = 0  # end of the bytes received

    def read(self, n: int) -> bytes:
        """``n`` bytes, fewer only when the server closed the connection."""
        start, end = self._start, self._end
        if end - start >= n:
            self._start = start + n
            return bytes(self._view[start:start + n])
        head = bytes(self._view[start:end])
        self._start = self._end = 0
        need = n - len(head)
        if need > len(self._buf):  # larger than the buffer: straight into its own bytes
            out = bytearray(need)
            got = self._fill(memoryview(out), need)
            return head + bytes(out[:got])
        got = self._fill(self._view, need)
        take = min(got, need)
        self._start, self._end = take, got
        return head + bytes(self._view[:take])

    def _fill(self, view: memoryview, need: int) -> int:
        """Receive into ``view`` until at least ``need`` bytes or the end of the stream."""
        got = 0
        while got < need:
            if self._stopping is not None:
                self._wait_readable()
            n = self._sock.recv_into(view[got:])
            if n == 0:
                break
            got += n
        return got

    def _wait_readable(self) -> None:
        """Until the socket has bytes (or is closed), asking ``stopping`` meanwhile; the
        socket's own timeout, if any, still applies."""
        timeout = self._sock.gettimeout()
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._readable(0):
            if self._stopping is not None and self._stopping():
                raise ReadStopped("stop requested while waiting for the binlog")
            wait = STOP_CHECK_S
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("timed out")
                wait = min(wait, left)
            if self._readable(wait):
                return

    def _readable(self, wait: float) -> bool:
        if isinstance(self._sock, ssl.SSLSocket) and self._sock.pending():
            return True
        try:
            readable, _, _ = select.select([self._sock], [], [], wait)
        except (OSError, ValueError):  # closed: the read reports it
            return True
        return bool(readable)

    def pending(self) -> bool:
        """Whether a read would find bytes without waiting for the server."""
        return self._end > self._start or self._readable(0)

    def close(self) -> None:
        """PyMySQL closes the socket itself; nothing else is held."""
