"""How the PostgreSQL store notices a connection that stopped answering, and ends the call
waiting on it: TCP keepalives and a user timeout on every connection (the kernel's view),
and a watchdog that enforces the calling thread's `call_deadline` (rota.store.deadlines).

A call with a deadline registers its connection with the watchdog for as long as it uses it
(`Call.watch`). At the deadline the watchdog shuts the connection's socket down
(SHUT_RDWR): the psycopg call blocked on it fails at once, the store raises `StoreTimeout`,
and the connection is closed so the pool replaces it. A connection is unregistered, under
the lock the watchdog holds while it shuts a socket down, before it goes back to the pool:
a connection handed back and reused by another call is never the one shut down. The socket
is duplicated at registration, so what is shut down is the call's own socket even if libpq
closed its descriptor and the number was reused meanwhile.

Behind a NAT, a firewall or a proxy that forgot a connection, keepalives may never fire
(something still acknowledges the packets): the deadline is what ends such a call.

One daemon thread per process, started by its first call with a deadline. Imports the
store's errors and deadlines, psycopg and psycopg_pool.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import Any, Final

import psycopg
import psycopg_pool
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from rota.store.deadlines import StoreTimeout, deadline_at

# libpq's connection parameters that make the kernel give up on a dead peer: a connection
# idle for 10 s is probed every 5 s, and one whose data (or probes) went unacknowledged
# for 30 s is closed, so a vanished server or a cut link fails a call within ~30 s even
# without a deadline. A value in the store URL's query wins.
KEEPALIVES: Final[Mapping[str, str]] = {
    "keepalives": "1",
    "keepalives_idle": "10",
    "keepalives_interval": "5",
    "keepalives_count": "3",
    "tcp_user_timeout": "30000",  # milliseconds
}
_TCP_USER_TIMEOUT_SINCE: Final = 120000  # libpq 12


def with_keepalives(conninfo: str) -> str:
    """`conninfo` with rota's keepalive settings for each one it does not set itself."""
    given = conninfo_to_dict(conninfo)
    missing = {key: value for key, value in KEEPALIVES.items() if key not in given}
    if "tcp_user_timeout" in missing and psycopg.pq.version() < _TCP_USER_TIMEOUT_SINCE:
        del missing["tcp_user_timeout"]  # an older libpq refuses the parameter
    return make_conninfo(conninfo, **missing) if missing else conninfo


class Call:
    """One store call and its thread's deadline (None: no deadline, nothing watched)."""

    __slots__ = ("_sock", "at", "fired", "pool_capped", "started")

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.at = deadline_at()
        self.fired = False  # the watchdog shut this call's connection down
        self.pool_capped = False  # the wait for a pooled connection ends at the deadline
        self._sock: socket.socket | None = None

    @property
    def seconds(self) -> float:
        """The time this call was given."""
        return 0.0 if self.at is None else max(0.0, self.at - self.started)

    def pool_timeout(self, default_s: float) -> float:
        """How long to wait for a pooled connection: `default_s`, or less by the deadline."""
        if self.at is None:
            return default_s
        left = self.at - time.monotonic()
        if left < default_s:
            self.pool_capped = True
            return max(0.0, left)
        return default_s

    def timed_out(self, error: BaseException) -> bool:
        """Whether `error` ended this call because its deadline came."""
        return self.fired or (self.pool_capped and isinstance(error, psycopg_pool.PoolTimeout))

    @contextmanager
    def watch(self, conn: psycopg.Connection[Any]) -> Iterator[None]:
        """Watch `conn` while the block runs; a connection the watchdog shut down is
        closed at the end of the block (the pool then discards it), even if the call had
        its answer just in time."""
        self._sock = None if self.at is None else _own_socket(conn)
        if self._sock is None:  # no deadline, or a broken connection the call will report
            yield
            return
        _WATCHDOG.add(self)
        try:
            yield
        finally:
            _WATCHDOG.remove(self)
            self._sock.close()
            self._sock = None
            if self.fired:
                conn.close()

    def _fire(self) -> None:
        """Shut the socket down (called by the watchdog, holding its lock)."""
        self.fired = True
        if self._sock is not None:
            with suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)


def _own_socket(conn: psycopg.Connection[Any]) -> socket.socket | None:
    """A duplicate of `conn`'s socket (None if it has none)."""
    try:
        fd = os.dup(conn.pgconn.socket)
    except (OSError, psycopg.Error):
        return None
    try:
        return socket.socket(fileno=fd)
    except OSError:
        os.close(fd)
        return None


def timeout_error(url: str, doing: str, call: Call) -> StoreTimeout:
    """The StoreTimeout of a call that `call.timed_out`."""
    if call.fired:
        what = (f"no answer within {call.seconds:.1f} s; the connection was dropped (a "
                "fresh one serves the next call)")
    else:
        what = (f"no pooled connection was free within {call.seconds:.1f} s (all busy, or "
                "being replaced after a failure)")
    return StoreTimeout(
        f"PostgreSQL store {url!r} failed to {doing}: {what}; check the network between "
        "this host and PostgreSQL, and the server's load")


class _Watchdog:
    """The thread that fires calls at their deadlines."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget every call and the thread (a forked child has neither)."""
        self._changed = threading.Condition(threading.Lock())
        self._calls: set[Call] = set()
        self._wakes_at: float | None = None  # when the thread wakes next (None: idle)
        self._thread: threading.Thread | None = None

    def add(self, call: Call) -> None:
        assert call.at is not None
        with self._changed:
            self._calls.add(call)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="rota-pg-watchdog",
                                                daemon=True)
                self._thread.start()
            elif self._wakes_at is None or call.at < self._wakes_at:
                self._changed.notify()

    def remove(self, call: Call) -> None:
        with self._changed:
            self._calls.discard(call)

    def _run(self) -> None:
        with self._changed:
            while True:
                now = time.monotonic()
                due = [call for call in self._calls if call.at is not None and call.at <= now]
                for call in due:
                    self._calls.discard(call)
                    call._fire()
                self._wakes_at = min((call.at for call in self._calls if call.at is not None),
                                     default=None)
                self._changed.wait(None if self._wakes_at is None else self._wakes_at - now)


_WATCHDOG: Final = _Watchdog()
# A forked child has no watchdog thread (nor the calls of its parent): it starts its own.
os.register_at_fork(after_in_child=_WATCHDOG.reset)

__all__ = ["KEEPALIVES", "Call", "timeout_error", "with_keepalives"]
