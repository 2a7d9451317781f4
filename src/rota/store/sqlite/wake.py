"""Wake-ups between processes sharing one SQLite file on one host (SQLite has no
notifications): the watcher behind `SQLiteStore.listen`, and the datagrams that wake it.

The watcher is a thread with its own connection that reads `PRAGMA data_version` (it
changes only when another connection commits) and, when it changed, the Queues of the jobs
added since: every 20 ms, and at once when a datagram comes. It binds a Unix datagram
socket in `<db>.rota-wake/`; after a commit that adds jobs, a store sends an empty
datagram (`w`) to every socket there but its own. A change that makes jobs claimable
again (a requeue, a resume, a limit change) adds no id to find, so its datagrams name the
Queues (`q`, then the names one per line).

Finish hints (`SQLiteStore.listen_finished`, what `App.wait` sleeps on) use the same
machinery apart: the finish watcher reads `data_version` every 20 ms and binds a socket of
its own kind (`.wait`, which the enqueue datagrams never reach); after a commit that
finished jobs, a store sends an empty datagram to every `.wait` socket there, its own
watchers' included. Finishing is a worker's hot path, so that sender lists the directory
at most every `RELIST_S` and costs nothing else while nobody waits; a watcher started
meanwhile sees the finish at its next `data_version` read instead.

An optimisation only: nothing here raises into the caller (a failure means "poll only",
logged at DEBUG); sending never blocks (a full receive buffer already holds a wake-up); a
socket whose owner died answers ECONNREFUSED, and the sender removes it.

Imports only the standard library and the SQLite statements.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import secrets
import select
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Collection
from contextlib import AbstractContextManager
from typing import Protocol

from rota.store.sqlite.schema import sql

log = logging.getLogger(__name__)

DIRECTORY_SUFFIX = ".rota-wake"
SOCKET_SUFFIX = ".sock"
WAIT_SUFFIX = ".wait"  # finish watchers' sockets
# How long a finishing store keeps its listing of the finish watchers' sockets.
RELIST_S = 0.5
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
    def bind(cls, directory: str, suffix: str = SOCKET_SUFFIX) -> WakeListener | None:
        if not supported():
            return None
        try:
            os.mkdir(directory)
        except FileExistsError:
            pass
        except OSError as error:
            log.debug("wake-up sockets unavailable in %s (%s); polling only", directory, error)
            return None
        path = os.path.join(directory, f"{os.getpid()}-{secrets.token_hex(4)}{suffix}")
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
    `suffix` picks the listeners (enqueue watchers, or finish watchers: `WAIT_SUFFIX`);
    with `relist_s`, the listing is kept that long (monotonic seconds) between sends.
    """

    def __init__(self, directory: str, suffix: str = SOCKET_SUFFIX,
                 relist_s: float | None = None) -> None:
        self._directory = directory
        self._suffix = suffix
        self._relist_s = relist_s
        self._listed: list[str] = []
        self._listed_until = -math.inf
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
        if self._relist_s is not None:
            names = self._listed
            if time.monotonic() >= self._listed_until:
                names = self._listed = self._list()
                self._listed_until = time.monotonic() + self._relist_s
            if not names:
                return 0
        else:
            names = self._list()
        datagrams = named_datagrams(queues) if queues else [_DATAGRAM]
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
            except BlockingIOError:
                pass  # its buffer is full: a wake-up is pending already
            except FileNotFoundError:
                self._forget(name)  # it just went away
            except ConnectionRefusedError:
                # Nobody is bound there any more: its process died without cleaning up.
                self._forget(name)
                with contextlib.suppress(OSError):
                    os.unlink(path)
            except OSError as error:  # permission denied, closed meanwhile, ...
                log.debug("wake-up datagram to %s failed: %s", path, error)
        return sent

    def _list(self) -> list[str]:
        try:
            with os.scandir(self._directory) as entries:
                return [e.name for e in entries if e.name.endswith(self._suffix)]
        except OSError:  # no directory: nobody listens
            return []

    def _forget(self, name: str) -> None:
        """Drop a listener gone away from the kept listing (a new list, so a send
        iterating the old one is not disturbed)."""
        if name in self._listed:
            self._listed = [listed for listed in self._listed if listed != name]

    def close(self) -> None:
        self._closed = True
        if self._sock is not None:
            self._sock.close()


class WatchedStore(Protocol):
    """What the enqueue watcher needs of the SQLite store it watches (the store imports
    this module, so it is described here rather than imported)."""

    _wake: WakeSender | None
    _finish_wake: WakeSender | None
    _busy_timeout_s: float

    @property
    def url(self) -> str: ...

    @property
    def path(self) -> str: ...

    @property
    def read_only(self) -> bool: ...

    def _connect_read_only(self, *, immutable: bool) -> sqlite3.Connection: ...

    def _translate(self, doing: str) -> AbstractContextManager[None]: ...


class _EnqueueWatcher:
    """The thread behind `SQLiteStore.listen`. Owns its connection and its wake-up
    socket (None: poll only)."""

    INTERVAL_S = 0.02
    UNEXPECTED_BACKOFF_S = 1.0
    # At most one datagram-driven check per gap: a process enqueueing thousands of single
    # jobs a second must not make every idle worker check after each one (measured:
    # docs/decisions/0045). Datagrams arriving meanwhile wait in the socket, read in one go.
    MIN_WAKE_GAP_S = 0.001

    SUFFIX = SOCKET_SUFFIX
    NAME = "rota-sqlite-watch"

    def __init__(self, store: WatchedStore, on_enqueue: Callable[[str], None]) -> None:
        self._on_enqueue = on_enqueue
        self._url = store.url
        self._sender = self._sender_of(store)
        self._woken_at = -math.inf
        self._stopping = threading.Event()
        self._conn = store._connect_read_only(immutable=False) if store.read_only else (
            sqlite3.connect(store.path, timeout=store._busy_timeout_s, isolation_level=None,
                            check_same_thread=False))  # opened here, used by the thread
        # Bound before the first read: an enqueue that commits after that read sends a
        # datagram that wakes the first wait (one that commits before it is not new).
        self.wake: WakeListener | None = None
        try:
            if self._sender is not None and (listener := WakeListener.bind(
                    wake_directory(store.path), self.SUFFIX)) is not None:
                self._own(listener.name)
                self.wake = listener
            with store._translate("starting the enqueue watcher"):
                self._version = self._conn.execute(sql("data_version")).fetchone()[0]
                self._newest = int(self._conn.execute(sql("newest_job_id")).fetchone()[0])
        except BaseException:
            self._close_wake()
            self._conn.close()
            raise
        self._thread = threading.Thread(target=self._run, name=self.NAME, daemon=True)

    @staticmethod
    def _sender_of(store: WatchedStore) -> WakeSender | None:
        """The sender whose datagrams this watcher's socket takes (None when the store is
        read-only: it creates nothing beside the file)."""
        return store._wake

    def _own(self, name: str) -> None:
        """This store's own enqueues do not wake its watcher."""
        assert self._sender is not None
        self._sender.add_own(name)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        wake = self.wake  # read once: the thread may close it meanwhile (a poke then misses)
        if wake is not None:
            wake.poke()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        elif not self._thread.is_alive() and self.wake is not None:
            self._close_wake()  # never started: _run's finally will not do it

    def _wait(self, delay_s: float) -> bool:
        """Wait for a wake-up datagram or `delay_s`; True if stopping."""
        if self.wake is None:
            return self._stopping.wait(delay_s)
        rest_s = self._woken_at + self.MIN_WAKE_GAP_S - time.monotonic()
        if rest_s > 0:
            if self._stopping.wait(rest_s):
                return True
            delay_s = max(delay_s - rest_s, 0.0)
        if self.wake.wait(delay_s):
            self._woken_at = time.monotonic()
        return self._stopping.is_set()

    def _close_wake(self) -> None:
        wake, self.wake = self.wake, None
        if wake is not None:
            if self._sender is not None:
                self._sender.remove_own(wake.name)  # (never added: a no-op)
            wake.close()

    def _run(self) -> None:
        delay_s = self.INTERVAL_S
        try:
            while not self._wait(delay_s):
                delay_s = self.INTERVAL_S
                try:
                    self._check()
                except sqlite3.Error as error:  # busy, or the file went away: try later
                    log.debug("enqueue watcher on %s: %s", self._url, error)
                except Exception:
                    # Anything else (a bug): log it, back off, go on; hints are only an
                    # optimisation, but a dead watcher would be silent.
                    delay_s = self.UNEXPECTED_BACKOFF_S
                    log.exception("enqueue watcher on %s failed unexpectedly; retrying in "
                                  "%.0f s", self._url, delay_s)
        finally:
            self._close_wake()
            self._conn.close()

    def _check(self) -> None:
        # Queues named by datagrams (requeues, resumes, limit changes: no new id to find)
        # are hinted whatever data_version says: they were sent after their commit.
        wake = self.wake  # read once: stop() may close it meanwhile
        hinted = dict.fromkeys(wake.take_named() if wake is not None else ())
        version = self._conn.execute(sql("data_version")).fetchone()[0]
        if version != self._version:
            self._version = version
            rows = self._conn.execute(sql("enqueued_since"),
                                      {"after": self._newest}).fetchall()
            for queue, newest in rows:
                self._newest = max(self._newest, int(newest))
                hinted[str(queue)] = None
        for queue in hinted:
            try:
                self._on_enqueue(queue)
            except Exception:
                log.exception("an on_enqueue callback failed; hint dropped")


class _FinishWatcher(_EnqueueWatcher):
    """The thread behind `SQLiteStore.listen_finished`: after any commit to the file (a
    change of `data_version`, read every 20 ms and at once when a finish datagram comes),
    it calls `on_finished()`. Its own store's finishes wake it too (by datagram)."""

    SUFFIX = WAIT_SUFFIX
    NAME = "rota-sqlite-finish-watch"

    def __init__(self, store: WatchedStore, on_finished: Callable[[], None]) -> None:
        self._on_finished = on_finished
        super().__init__(store, lambda queue: None)

    @staticmethod
    def _sender_of(store: WatchedStore) -> WakeSender | None:
        return store._finish_wake

    def _own(self, name: str) -> None:
        pass  # this store's own finishes wake its finish watchers as any other's do

    def _check(self) -> None:
        wake = self.wake
        if wake is not None:
            wake.take_named()  # finish datagrams name nothing; keep the list empty
        version = self._conn.execute(sql("data_version")).fetchone()[0]
        if version == self._version:
            return
        self._version = version
        try:
            self._on_finished()
        except Exception:
            log.exception("an on_finished callback failed; hint dropped")
