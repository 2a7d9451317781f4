"""The fault proxy itself (tests/chaos/fault_proxy.py), against an echo server on loopback:
each fault does what the network scenarios rely on, and nothing else."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from tests.chaos.fault_proxy import FaultProxy


@pytest.fixture
def echo_port() -> Iterator[int]:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()
    peers: list[socket.socket] = []

    def echo(conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := conn.recv(4096):
                conn.sendall(data)

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            peers.append(conn)
            threading.Thread(target=echo, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(5)
    for conn in peers:
        conn.close()
    server.close()


@pytest.fixture
def proxy(echo_port: int) -> Iterator[FaultProxy]:
    with FaultProxy("127.0.0.1", echo_port) as proxy:
        yield proxy


def _client(proxy: FaultProxy) -> socket.socket:
    return socket.create_connection(("127.0.0.1", proxy.port), timeout=5)


def _round_trip(sock: socket.socket, payload: bytes) -> bytes:
    sock.sendall(payload)
    received = b""
    while len(received) < len(payload):
        chunk = sock.recv(4096)
        if not chunk:
            break
        received += chunk
    return received


def test_bytes_pass_both_ways_unchanged(proxy: FaultProxy) -> None:
    with _client(proxy) as sock:
        assert _round_trip(sock, b"hello") == b"hello"
        assert _round_trip(sock, b"x" * 100_000) == b"x" * 100_000


def test_a_delay_holds_each_direction_at_least_that_long(proxy: FaultProxy) -> None:
    # Given 0.1 s each way
    proxy.delay(up_s=0.1, down_s=0.1)
    with _client(proxy) as sock:
        began = time.monotonic()
        # Then a round trip takes at least 0.2 s, and the bytes arrive intact, in order
        assert _round_trip(sock, b"abc") == b"abc"
        assert time.monotonic() - began >= 0.2


def test_a_black_hole_holds_everything_until_healed(proxy: FaultProxy) -> None:
    with _client(proxy) as sock:
        assert _round_trip(sock, b"before") == b"before"
        proxy.black_hole()
        sock.sendall(b"during")
        sock.settimeout(0.3)
        with pytest.raises(TimeoutError):
            sock.recv(10)
        # When the link heals, what was held arrives (as retransmissions would)
        proxy.heal()
        sock.settimeout(5)
        assert sock.recv(10) == b"during"


def test_forgotten_connections_stay_dead_while_new_ones_work(proxy: FaultProxy) -> None:
    with _client(proxy) as old:
        assert _round_trip(old, b"a") == b"a"
        assert proxy.forget_connections() == 1
        old.sendall(b"lost")
        old.settimeout(0.3)
        with pytest.raises(TimeoutError):
            old.recv(10)
        # And a new connection passes
        with _client(proxy) as new:
            assert _round_trip(new, b"fresh") == b"fresh"
        assert proxy.connections >= 1


def test_reset_breaks_every_open_connection(proxy: FaultProxy) -> None:
    with _client(proxy) as sock:
        assert _round_trip(sock, b"a") == b"a"
        assert proxy.reset() == 1
        # Then the client's next call fails with a reset (an orderly close would read b"")
        with pytest.raises(ConnectionResetError):
            for _ in range(50):
                sock.sendall(b"x")
                assert sock.recv(10) != b"", "closed with FIN, not reset"
        with _client(proxy) as new:
            assert _round_trip(new, b"b") == b"b"
