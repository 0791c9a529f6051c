"""The binlog connection's reads: exact byte counts across receives, and what is waiting."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from cdc_ingest.capture.socket_reader import ReadStopped, SocketReader


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair()
    a.settimeout(5)
    yield a, b
    a.close()
    b.close()


def test_reads_are_exact_across_receives_and_keep_the_rest(
        pair: tuple[socket.socket, socket.socket]) -> None:
    ours, server = pair
    reader = SocketReader(ours, size=16)
    server.sendall(b"0123456789abcdefghij")
    assert reader.read(4) == b"0123"
    assert reader.read(3) == b"456"
    # crosses the end of the first receive (16 bytes at most)
    assert reader.read(10) == b"789abcdefg"
    assert reader.read(3) == b"hij"


def test_a_read_larger_than_the_buffer_arrives_whole(
        pair: tuple[socket.socket, socket.socket]) -> None:
    ours, server = pair
    reader = SocketReader(ours, size=8)
    payload = bytes(range(256)) * 40
    sender = threading.Thread(target=lambda: [server.sendall(payload[i:i + 100])
                                              for i in range(0, len(payload), 100)])
    sender.start()
    assert reader.read(2) == payload[:2]
    assert reader.read(len(payload) - 2) == payload[2:]
    sender.join()


def test_idle_is_called_only_while_waiting_for_the_server_and_when_it_asks(
        pair: tuple[socket.socket, socket.socket]) -> None:
    ours, server = pair
    ours.settimeout(None)
    calls: list[float] = []

    def idle() -> float | None:
        calls.append(time.monotonic())
        return 0.05 if len(calls) == 1 else None  # "ask me again in 50 ms", then done

    reader = SocketReader(ours, size=64, idle=idle)
    server.sendall(b"abcdef")
    time.sleep(0.05)
    assert reader.read(2) == b"ab" and reader.read(4) == b"cdef"
    assert calls == []  # bytes were at hand: no wait, no call
    threading.Timer(0.4, lambda: server.sendall(b"g")).start()
    assert reader.read(1) == b"g"
    # called when the wait began, again 50 ms later as asked, then at the stop checks only
    assert len(calls) >= 2 and 0.04 <= calls[1] - calls[0] < 0.2, calls


def test_end_of_stream_gives_a_short_read(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, server = pair
    reader = SocketReader(ours, size=64)
    server.sendall(b"xyz")
    server.shutdown(socket.SHUT_WR)
    assert reader.read(10) == b"xyz"  # PyMySQL reports a short read as a lost connection
    assert reader.read(1) == b""


def test_a_socket_timeout_is_raised_to_the_caller(
        pair: tuple[socket.socket, socket.socket]) -> None:
    ours, _server = pair
    ours.settimeout(0.05)
    with pytest.raises(TimeoutError):
        SocketReader(ours).read(1)


def test_a_stop_request_ends_a_wait_for_the_server(
        pair: tuple[socket.socket, socket.socket]) -> None:
    ours, server = pair
    ours.settimeout(None)  # the binlog stream waits as long as the server is quiet
    asked = threading.Event()
    reader = SocketReader(ours, stopping=asked.is_set)
    server.sendall(b"ab")
    assert reader.read(2) == b"ab"  # bytes at hand: read whatever stopping says
    threading.Timer(0.1, asked.set).start()
    started = time.monotonic()
    with pytest.raises(ReadStopped):
        reader.read(1)
    assert asked.is_set() and time.monotonic() - started < 5


def test_the_socket_timeout_still_applies_while_asking_to_stop(
        pair: tuple[socket.socket, socket.socket]) -> None:
    ours, _server = pair
    ours.settimeout(0.05)
    with pytest.raises(TimeoutError):
        SocketReader(ours, stopping=lambda: False).read(1)
