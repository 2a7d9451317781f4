"""Wake-ups between processes sharing one SQLite file on one host (issue 14).

SQLite has no notifications. Each waiting watcher (`SQLiteStore.listen`) binds a Unix
datagram socket in a directory beside the database file, `<db>.rota-wake/<pid>-<token>.sock`;
after each enqueue commits, the enqueuing store sends one datagram to every socket in that
directory (but its own). An enqueue's datagram carries nothing (`w`): it only tells the
watcher to look now instead of at its next `PRAGMA data_version` poll, which finds the new
jobs by id. A change that makes existing jobs claimable again (a requeue, a resume, a limit
change) adds no id to find, so its datagrams name the Queues (`q` and the names, one per
line; Queue names hold no whitespace), in as many datagrams as the names need. The poll
stays the safety net for everything the datagrams miss (a transactional enqueue on the
caller's connection, a platform without AF_UNIX datagram sockets, a directory rota may not
write, a path too long for a socket address, a receive buffer full): a requeue it misses
is found by the worker's own poll (`poll_interval`).

Rules that keep it an optimisation only:
- Nothing here raises into the caller: every failure means "poll only", logged at DEBUG.
- Sending never blocks (a full receive buffer already holds a wake-up for that watcher).
- A socket file whose owner is gone (the process was killed) answers ECONNREFUSED: the
  sender removes it. ENOENT (removed meanwhile) is ignored.

Imports only the standard library.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import select
import socket
import threading
import time
from collections.abc import Collection

log = logging.getLogger(__name__)

DIRECTORY_SUFFIX = ".rota-wake"
SOCKET_SUFFIX = ".sock"
_DATAGRAM = b"w"
_NAMED = b"q"  # then Queue names, one per line
# Named datagrams stay far below the smallest AF_UNIX datagram limit of the platforms
# (and the receive buffer): a Queue name is at most 200 characters, 800 bytes of UTF-8.
_MAX_DATAGRAM = 4096


def named_datagrams(queues: Collection[str]) -> list[bytes]:
    """The datagrams naming `queues` (each at most `_MAX_DATAGRAM` bytes)."""
    datagrams: list[bytes] = []
    current = bytearray(_NAMED)
    for queue in queues:
        name = queue.encode()
        if len(current) > 1 and len(current) + 1 + len(name) > _MAX_DATAGRAM:
            datagrams.append(bytes(current))
            current = bytearray(_NAMED)
        if len(current) > 1:
            current += b"\n"
        current += name
    if len(current) > 1:
        datagrams.append(bytes(current))
    return datagrams


def supported() -> bool:
    """Whether this platform has Unix datagram sockets (not Windows)."""
    return hasattr(socket, "AF_UNIX") and hasattr(select, "poll") and os.name == "posix"


def wake_directory(database_path: str) -> str:
    """The directory of wake-up sockets for the database file at `database_path`."""
    return os.path.abspath(database_path) + DIRECTORY_SUFFIX


class WakeListener:
    """One bound datagram socket in the wake directory; owned by one watcher thread.

    `bind` answers None when a socket cannot be made (no AF_UNIX, a directory rota may not
    create or write, a path too long for a socket address): the watcher then polls only.
    """

    def __init__(self, sock: socket.socket, path: str) -> None:
        self._sock = sock
        self.path = path
        self.name = os.path.basename(path)
        self.wakes = 0  # datagram wake-ups seen (the tests read it)
        self._named: list[str] = []  # Queues named by datagrams, until `take_named`
        # poll(), not select(): select() refuses descriptors above FD_SETSIZE (1024), which
        # a process with many connections open reaches.
        self._poller = select.poll()
        self._poller.register(sock, select.POLLIN)

    @classmethod
    def bind(cls, directory: str) -> WakeListener | None:
        if not supported():
            return None
        try:
            os.mkdir(directory)
        except FileExistsError:
            pass
        except OSError as error:
            log.debug("wake-up sockets unavailable in %s (%s); polling only", directory, error)
            return None
        path = os.path.join(directory, f"{os.getpid()}-{secrets.token_hex(4)}{SOCKET_SUFFIX}")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            sock.bind(path)
            sock.setblocking(False)
        except OSError as error:  # read-only directory, path too long, ...
            sock.close()
            log.debug("cannot bind wake-up socket %s (%s); polling only", path, error)
            return None
        return cls(sock, path)

    def wait(self, timeout_s: float) -> bool:
        """Wait up to `timeout_s` for a datagram; True if one (or more) came. Reads every
        pending datagram, so a burst of enqueues costs one wake-up; the Queues that named
        ones carry wait for `take_named`."""
        try:
            ready = self._poller.poll(max(timeout_s, 0.0) * 1000)
        except (OSError, ValueError) as error:
            # Never a busy loop: wait out the timeout as the plain poll would.
            log.debug("waiting on wake-up socket %s failed: %s", self.path, error)
            time.sleep(timeout_s)
            return False
        if not ready:
            return False
        with contextlib.suppress(OSError):
            while datagram := self._sock.recv(_MAX_DATAGRAM):
                if datagram[:1] == _NAMED:
                    self._named.extend(datagram[1:].decode(errors="replace").split("\n"))
        self.wakes += 1
        return True

    def take_named(self) -> list[str]:
        """The Queues named since the last call, in order of arrival (a Queue named by
        several datagrams appears as often)."""
        named, self._named = self._named, []
        return [name for name in named if name]

    def poke(self) -> None:
        """Wake the thread waiting in `wait` (used to stop it promptly)."""
        with contextlib.suppress(OSError), \
                socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sender:
            sender.setblocking(False)
            sender.sendto(_DATAGRAM, self.path)

    def close(self) -> None:
        """Close the socket and remove its file; idempotent."""
        self._sock.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)


class WakeSender:
    """Sends one datagram to every listener in the wake directory but the store's own.

    Thread-safe (concurrent `sendto` on one datagram socket is fine); costs one directory
    listing and one `sendto` per listener, and nothing when the directory does not exist.
    """

    def __init__(self, directory: str) -> None:
        self._directory = directory
        self._own: set[str] = set()
        self._own_lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._closed = False
        if supported():
            try:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                sock.setblocking(False)
                self._sock = sock
            except OSError as error:
                log.debug("no wake-up sender (%s); other processes poll", error)

    def add_own(self, name: str) -> None:
        with self._own_lock:
            self._own = self._own | {name}

    def remove_own(self, name: str) -> None:
        with self._own_lock:
            self._own = self._own - {name}

    def send(self, queues: Collection[str] = ()) -> int:
        """Wake every other listener; return how many datagrams were sent. Never raises.

        With `queues`, the datagrams name them (work claimable again in those Queues
        without a new job id for the watcher to find); without, one plain wake-up."""
        sock = self._sock
        if sock is None or self._closed:
            return 0
        datagrams = named_datagrams(queues) if queues else [_DATAGRAM]
        try:
            with os.scandir(self._directory) as entries:
                names = [e.name for e in entries if e.name.endswith(SOCKET_SUFFIX)]
        except OSError:  # no directory: nobody listens
            return 0
        own = self._own
        sent = 0
        for name in names:
            if name in own:
                continue
            path = os.path.join(self._directory, name)
            try:
                for datagram in datagrams:
                    sock.sendto(datagram, path)
                    sent += 1
            except (BlockingIOError, FileNotFoundError):
                # Its buffer is full (a wake-up is pending already) or it just went away.
                pass
            except ConnectionRefusedError:
                # Nobody is bound there any more: its process died without cleaning up.
                with contextlib.suppress(OSError):
                    os.unlink(path)
            except OSError as error:  # permission denied, closed meanwhile, ...
                log.debug("wake-up datagram to %s failed: %s", path, error)
        return sent

    def close(self) -> None:
        self._closed = True
        if self._sock is not None:
            self._sock.close()
