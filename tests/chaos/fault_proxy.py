"""A loopback TCP proxy that misbehaves on command: the network between a worker and its
database, made bad on purpose.

Every connection a client opens to the proxy gets one to the target; two pumps per
direction carry the bytes across (a reader that stamps each chunk with its arrival time, a
writer that sends it once it is due). The faults, each a method:

- `delay(up_s, down_s)`: every chunk is held that long before it is sent on (client->server
  "up", server->client "down"): per-packet latency, order kept, throughput not capped.
- `black_hole()` / `heal()`: nothing is sent on, in either direction, on any connection
  (new ones included, which are still accepted): the link is down. Held bytes are sent
  after `heal()`, as TCP's retransmissions would once the link is back.
- `forget_connections()`: the connections open now are forgotten, as by a NAT or firewall
  that dropped their state: whatever either side sends on them is lost for good and
  neither side is told. Connections opened afterwards work. This is the half-open case.
- `reset()`: every connection open now is reset (RST on both sides), as by a middlebox
  that gave up on them.

The proxy's own kernel acknowledges what the client sends, so TCP keepalives and
`tcp_user_timeout` between the client and the proxy never fire: a client behind this
proxy notices a dead link only by its own deadlines, which is what the tests check.
Loopback only, threads only; `close()` ends every thread it started.
"""

from __future__ import annotations

import contextlib
import queue
import socket
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import TracebackType

_CHUNK = 65536
_EOF = b""


@dataclass(eq=False)
class _Link:
    """One proxied connection: the client's socket and ours to the target."""

    client: socket.socket
    server: socket.socket
    forgotten: bool = False
    was_reset: bool = False
    threads: list[threading.Thread] = field(default_factory=list)

    def reset(self) -> None:
        """Wake both readers (SHUT_RD sends nothing); each then closes its socket, which
        sends RST (SO_LINGER with a zero timeout) instead of FIN."""
        self.was_reset = True
        for sock in (self.client, self.server):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RD)


class FaultProxy:
    """A TCP proxy on 127.0.0.1 to `target_host:target_port` (see the module docstring).

    Use as a context manager, or call `close()`. `port` is where clients connect."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._lock = threading.Lock()
        self._links: list[_Link] = []  # open and not reset
        self._every_link: list[_Link] = []  # every link ever made, for close() to join
        self._up_s = 0.0
        self._down_s = 0.0
        # Set while the link is up; writers wait on it before sending.
        self._flowing = threading.Event()
        self._flowing.set()
        self._closed = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.port: int = self._listener.getsockname()[1]
        self._accepter = threading.Thread(target=self._accept, name="fault-proxy-accept",
                                          daemon=True)
        self._accepter.start()

    # -- faults ---------------------------------------------------------------------------

    def delay(self, up_s: float = 0.0, down_s: float = 0.0) -> None:
        """Hold every chunk `up_s` (client->server) or `down_s` (server->client) seconds."""
        with self._lock:
            self._up_s, self._down_s = up_s, down_s

    def black_hole(self) -> None:
        """Stop sending anything on, on every connection, until `heal()`."""
        self._flowing.clear()

    def heal(self) -> None:
        """End a black hole: held bytes flow again (forgotten connections stay dead)."""
        self._flowing.set()

    def forget_connections(self) -> int:
        """Forget every connection open now (half-open); returns how many."""
        with self._lock:
            links = [link for link in self._links if not link.forgotten]
            for link in links:
                link.forgotten = True
        return len(links)

    def reset(self) -> int:
        """Reset every connection open now; returns how many."""
        with self._lock:
            links, self._links = self._links, []
        for link in links:
            link.reset()
        return len(links)

    @property
    def connections(self) -> int:
        """Connections open now that still carry bytes (not forgotten)."""
        with self._lock:
            return sum(1 for link in self._links if not link.forgotten)

    # -- life cycle -----------------------------------------------------------------------

    def close(self) -> None:
        """Stop accepting, close every connection and end every thread."""
        self._closed.set()
        self._flowing.set()  # writers blocked on a black hole see the close
        self._accepter.join(5)
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            self._links = []
            links = list(self._every_link)
        for link in links:
            for sock in (link.client, link.server):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    sock.close()
        for link in links:
            for thread in link.threads:
                thread.join(5)

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    # -- pumps ----------------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                server = socket.create_connection(self._target, timeout=5)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            client.settimeout(None)
            link = _Link(client, server)
            for source, sink, up in ((client, server, True), (server, client, False)):
                chunks: queue.SimpleQueue[tuple[float, bytes]] = queue.SimpleQueue()
                link.threads += [
                    threading.Thread(target=self._read, args=(link, source, chunks, up),
                                     daemon=True, name="fault-proxy-read"),
                    threading.Thread(target=self._write, args=(link, sink, chunks),
                                     daemon=True, name="fault-proxy-write"),
                ]
            with self._lock:
                self._links.append(link)
                self._every_link.append(link)
            for thread in link.threads:
                thread.start()

    def _read(self, link: _Link, source: socket.socket,
              chunks: queue.SimpleQueue[tuple[float, bytes]], up: bool) -> None:
        while True:
            try:
                data = source.recv(_CHUNK)
            except OSError:
                data = _EOF
            if link.forgotten and data:
                continue  # lost in a middlebox that no longer knows this connection
            with self._lock:
                delay_s = self._up_s if up else self._down_s
            chunks.put((time.monotonic() + delay_s, data))
            if not data:
                if link.was_reset:
                    with contextlib.suppress(OSError):
                        source.close()  # the RST, once no thread is inside a call on it
                return

    def _write(self, link: _Link, sink: socket.socket,
               chunks: queue.SimpleQueue[tuple[float, bytes]]) -> None:
        for due, data in _drain(chunks):
            wait_s = due - time.monotonic()
            if wait_s > 0 and self._closed.wait(wait_s):
                return
            self._flowing.wait()
            if self._closed.is_set():
                return
            if link.forgotten or link.was_reset:
                if not data:
                    return
                continue
            try:
                if data:
                    sink.sendall(data)
                else:
                    sink.shutdown(socket.SHUT_WR)
                    return
            except OSError:
                return


def _drain(chunks: queue.SimpleQueue[tuple[float, bytes]]) -> Iterator[tuple[float, bytes]]:
    while True:
        item = chunks.get()
        yield item
        if not item[1]:
            return


__all__ = ["FaultProxy"]
