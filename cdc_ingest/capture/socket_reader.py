"""The binlog stream connection's reads, and what capture does while the server is quiet.

PyMySQL reads a connection through ``sock.makefile("rb")``, which blocks until bytes come.
:class:`SocketReader` takes the place of that file object on the stream connection: the same
``read(n)`` (short only at the end of the stream; errors and timeouts as the socket raises
them, which PyMySQL turns into its lost-connection error), and while a read waits for the
server it calls two hooks: ``idle`` (capture has everything the server sent: it commits what
it read, cdc_ingest.capture.binlog_phase), and ``stopping``, four times a second (when it says so
the read raises :class:`ReadStopped`, so a stop request is not held up until the next event
or heartbeat). A hook runs while capture waits for bytes, sometimes in the middle of an
event's packet, but always after the last event capture handled and before the next: the
position capture holds is exact then.
"""

from __future__ import annotations

import select
import socket
import ssl
import time
from collections.abc import Callable

BUFFER_BYTES = 256 << 10  # one receive; a rows event is about 8 KiB (binlog_row_event_max_size)
STOP_CHECK_S = 0.25  # how often a wait for the server asks whether to stop

# idle() -> seconds until it wants to be called again while the wait goes on, or None
Idle = Callable[[], float | None]


class ReadStopped(Exception):
    """Stop was requested while waiting for the server (not an OSError: PyMySQL passes it
    through after closing the connection)."""


class SocketReader:
    __slots__ = ("_buf", "_end", "_hooked", "_idle", "_sock", "_start", "_stopping", "_view")

    def __init__(self, sock: socket.socket, size: int = BUFFER_BYTES,
                 stopping: Callable[[], bool] | None = None, idle: Idle | None = None) -> None:
        self._sock = sock
        self._stopping = stopping
        self._idle = idle
        self._hooked = stopping is not None or idle is not None
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
            if self._hooked:
                self._wait_readable()
            n = self._sock.recv_into(view[got:])
            if n == 0:
                break
            got += n
        return got

    def _wait_readable(self) -> None:
        """Until the socket has bytes (or is closed), calling the hooks meanwhile; the
        socket's own timeout, if any, still applies."""
        timeout = self._sock.gettimeout()
        deadline = None if timeout is None else time.monotonic() + timeout
        again: float | None = None  # when idle() wants to be called again
        while not self._readable(0):
            if self._stopping is not None and self._stopping():
                raise ReadStopped("stop requested while waiting for the binlog")
            now = time.monotonic()
            if self._idle is not None and (again is None or now >= again):
                later = self._idle()
                again = None if later is None else time.monotonic() + later
            wait = STOP_CHECK_S if again is None else max(0.0, min(STOP_CHECK_S,
                                                                    again - now))
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

    def close(self) -> None:
        """PyMySQL closes the socket itself; nothing else is held."""
