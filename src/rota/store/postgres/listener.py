"""LISTEN/NOTIFY hints: `listen` (enqueues), `listen_finished` (finishes, with
`job_states`) and the thread behind each.

Every statement that adds jobs or makes them claimable again sends `pg_notify` on the
channel `<schema>_enqueue` with the Queue as payload, followed by a space and the
smallest due time it made claimable (microseconds since the epoch) where it knows it:
the listener lowers the store's claim floors with it (floors.py) before it calls
`on_enqueue(queue)`. Every statement that may finish jobs
sends one on `<schema>_finished`, payload '', if it did (from the subquery that gives
`finished_at` its value: complete.sql says how). Both are delivered at commit.

A listener waiting for hints cannot tell a dead link from a quiet one (behind a NAT or a
proxy that forgot the connection, nothing ever fails): after `listen_check_after_s` of
silence it runs a cheap statement that must answer within `listen_check_timeout_s`
(watchdog.py ends it otherwise), and reconnects when that fails.

Imports the store contract, the PostgreSQL connection module and psycopg.
"""

from __future__ import annotations

import logging
import select
import socket
import threading
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import Final

import psycopg
from psycopg import sql

from rota.core.jobs import JobState
from rota.store.base import StoreError
from rota.store.deadlines import call_deadline
from rota.store.postgres.connection import Connection, PostgresConnection
from rota.store.postgres.floors import ClaimFloors, hint_payload_position
from rota.store.postgres.schema import finished_channel, int_array
from rota.store.postgres.watchdog import Call
from rota.store.sql_base import STATES

log = logging.getLogger(__name__)


class PostgresListening(PostgresConnection):
    # A listener silent this long checks its connection with a statement that must answer
    # within the timeout: a dead link is found within their sum (plus a reconnect).
    listen_check_after_s: float = 5.0
    listen_check_timeout_s: float = 5.0

    def listen(self, on_enqueue: Callable[[str], None]) -> Callable[[], None]:
        """Call `on_enqueue(queue)` for each enqueue hint, from a background thread.

        LISTEN is in effect when this returns: every enqueue committed afterwards (by any
        process) is reported, once per Queue per transaction. If the listening connection
        drops, the thread reconnects with backoff; hints sent meanwhile are lost, which
        only delays work until the next poll.

        Returns:
            A function that stops the thread and closes its connection (idempotent).

        Raises:
            StoreError: if PostgreSQL cannot be reached to start listening.
        """
        return self._start_listener(self.channel, on_enqueue, "on_enqueue")

    def listen_finished(self, on_finished: Callable[[], None]) -> Callable[[], None]:
        """Call `on_finished()` after each transaction that finished jobs (`FinishSource`),
        committed by any connection, from a background thread with its own LISTEN
        connection. In effect when this returns; hints sent while that connection is
        being re-established are lost (the caller re-reads now and then anyway).

        Returns:
            A function that stops the thread and closes its connection (idempotent).

        Raises:
            StoreError: if PostgreSQL cannot be reached to start listening.
        """
        return self._start_listener(finished_channel(self.schema), lambda _: on_finished(),
                                    "on_finished")

    def job_states(self, job_ids: Sequence[int]) -> dict[int, JobState]:
        if not job_ids:
            return {}
        rows, _ = self._run("job_states", {"ids": int_array([int(i) for i in job_ids])})
        return {int(job_id): STATES[state] for job_id, state in rows}

    def _start_listener(self, channel: str, on_notify: Callable[[str], None], what: str
                        ) -> Callable[[], None]:
        self._refuse_closed()
        self._ensure_ready()
        listener = _Listener(self, channel, on_notify, what)
        with self._listeners_lock:
            self._listeners.add(listener.stop)

        def stop() -> None:
            listener.stop()
            with self._listeners_lock:
                self._listeners.discard(listener.stop)

        return stop


class _Listener:
    """One LISTEN connection and the thread that reads it.

    The thread waits in select() on the connection's socket and on a wake-up socket, so
    `stop()` ends it at once, without polling or timeouts.
    """

    RECONNECT_DELAYS_S: Final = (0.1, 0.5, 1.0, 2.0, 5.0)

    def __init__(self, store: PostgresListening, channel: str,
                 on_notify: Callable[[str], None], what: str) -> None:
        self._store = store
        self._channel = channel
        self._what = what  # the callback, as the log names it
        self._on_notify = on_notify
        # The enqueue listener keeps the claim floors honest: they exist only while it is
        # connected, and every hint lowers them.
        self._floors: ClaimFloors | None = (
            store.claim_floors if channel == store.channel else None)
        self._floored = False
        self._stopping = threading.Event()
        self._wake_reader, self._wake_writer = socket.socketpair()
        try:
            self._conn: Connection | None = self._open()
        except BaseException:
            self._wake_reader.close()
            self._wake_writer.close()
            raise
        self._thread = threading.Thread(
            target=self._run, name=f"rota-listen-{store.schema}", daemon=True
        )
        self._thread.start()

    def _open(self) -> Connection:
        with call_deadline(self._store.listen_check_timeout_s):
            conn = self._store._connect()
            call = Call()
            try:
                with call.watch(conn):
                    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._channel)))
            except psycopg.Error as error:
                conn.close()
                self._store._fail("listen", error)
        # Hints that arrive while a check runs are read by psycopg, not by `_read`.
        conn.add_notify_handler(lambda notify: self._deliver(notify.channel, notify.payload))
        self._set_floored(True)
        return conn

    def _set_floored(self, connected: bool) -> None:
        """Tell the claim floors whether this listener is connected (once per change)."""
        if self._floors is not None and connected != self._floored:
            self._floored = connected
            self._floors.listening(connected)

    def stop(self) -> None:
        if self._stopping.is_set():
            return
        self._stopping.set()
        with suppress(OSError):  # the thread may be gone already
            self._wake_writer.send(b"\0")
        if threading.current_thread() is not self._thread:
            self._thread.join()
        self._wake_writer.close()
        self._wake_reader.close()

    def _run(self) -> None:
        failures = 0
        try:
            while not self._stopping.is_set():
                if self._conn is None:
                    delay = self.RECONNECT_DELAYS_S[
                        min(failures - 1, len(self.RECONNECT_DELAYS_S) - 1)
                    ]
                    if self._stopping.wait(delay):
                        break
                    try:
                        self._conn = self._open()
                    except StoreError as error:
                        failures += 1
                        log.debug("cannot reconnect the LISTEN connection yet: %s", error)
                        continue
                    log.info("the LISTEN connection is back, after %d attempt(s)", failures)
                    failures = 0
                try:
                    self._read(self._conn)
                except Exception as error:
                    if self._stopping.is_set():
                        break
                    if isinstance(error, psycopg.Error | OSError | ValueError):
                        log.warning("the LISTEN connection dropped (%s); reconnecting in the "
                                    "background (polling goes on meanwhile)",
                                    str(error).strip().splitlines()[0] if str(error) else
                                    type(error).__name__)
                    else:  # a bug: say so loudly, then carry on as after a drop
                        log.exception("the LISTEN thread failed unexpectedly; reconnecting")
                    self._set_floored(False)
                    self._conn.close()
                    self._conn = None
                    failures = 1
        finally:
            self._set_floored(False)
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _read(self, conn: Connection) -> None:
        """Wait for hints and deliver them, until stopped or the connection fails (or
        fails its check after a silence)."""
        pgconn = conn.pgconn
        wake = self._wake_reader.fileno()
        while not self._stopping.is_set():
            readable, _, _ = select.select([pgconn.socket, wake], [], [],
                                           self._store.listen_check_after_s)
            if wake in readable:
                return
            if not readable:
                self._check(conn)
                continue
            pgconn.consume_input()
            if pgconn.status != psycopg.pq.ConnStatus.OK:
                raise psycopg.OperationalError("the LISTEN connection was closed")
            while (notify := pgconn.notifies()) is not None:
                self._deliver(notify.relname.decode(), notify.extra.decode())

    def _check(self, conn: Connection) -> None:
        """Raise if `conn` does not answer a statement within `listen_check_timeout_s`."""
        timeout_s = self._store.listen_check_timeout_s
        with call_deadline(timeout_s):
            call = Call()
            try:
                with call.watch(conn):
                    conn.execute("SELECT 1")
            except psycopg.Error as error:
                if call.fired:
                    raise psycopg.OperationalError(
                        f"no answer to a check within {timeout_s:g} s after "
                        f"{self._store.listen_check_after_s:g} s of silence") from error
                raise

    def _deliver(self, channel: str, payload: str) -> None:
        if channel != self._channel:
            return
        if self._floors is not None:
            payload, position = hint_payload_position(payload)
            self._floors.hint(payload, position)
        try:
            self._on_notify(payload)
        except Exception:
            log.exception("an %s callback failed; hint dropped", self._what)
