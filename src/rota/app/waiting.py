"""`App.wait` and `App.wait_async`: until a job is in a finished state, woken by the store.

One `JobWaiters` per App. Its watcher, one thread however many threads and tasks wait,
starts with the first wait and listens to the store's finish hints
(`rota.store.base.FinishSource`: LISTEN/NOTIFY on PostgreSQL, the `data_version` watcher
and its datagrams on SQLite, calls from the finishing thread in memory). After each hint,
and every `REREAD_S` anyway (a hint lost with a dropped connection then costs seconds,
never a wait for ever), it reads the states of every job waited on in one query
(`job_states`) and wakes the waiters of those that finished or are gone; each waiter then
reads its own record. A store without finish hints is read every `UNHINTED_REREAD_S`.
With nobody waiting for `LINGER_S`, the watcher stops listening and ends; the next wait
starts it again.

A waiter registers before it first reads its job, so a finish between that read and its
sleep still wakes it. Time here is real, monotonic seconds, whatever the App's clock.
Imports the core and the store contract.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Final

from rota.core.durations import Duration, to_timedelta
from rota.core.jobs import JobRecord
from rota.store.base import FinishSource, Store, StoreError

log = logging.getLogger(__name__)

REREAD_S: Final = 2.0
UNHINTED_REREAD_S: Final = 0.25
LINGER_S: Final = 30.0


def timeout_seconds(timeout: Duration | None) -> float | None:
    """`wait`'s timeout as seconds (None: no timeout), checked as every duration is."""
    if timeout is None:
        return None
    return to_timedelta(timeout, "timeout", allow_zero=True).total_seconds()


class _Waiter:
    """One wait on one job: `wake` is called (from the watcher) once the job finished or
    is gone."""

    __slots__ = ("job_id", "wake")

    def __init__(self, job_id: int, wake: Callable[[], None]) -> None:
        self.job_id = job_id
        self.wake = wake


class JobWaiters:
    """The waits of one App on its store (see the module doc). Thread-safe."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._cond = threading.Condition()
        self._waiting: dict[int, list[_Waiter]] = {}
        self._hinted = False
        self._closed = False
        self._thread: threading.Thread | None = None

    # -- the waits ----------------------------------------------------------------------

    def wait(self, job_id: int, timeout_s: float | None) -> JobRecord:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        first = True
        while True:
            woken = threading.Event()
            waiter = self._register(job_id, woken.set)
            try:
                record = self._finished_or_none(job_id, first)
                if record is not None:
                    return record
                first = False
                remaining = None if deadline is None else max(deadline - time.monotonic(), 0)
                if not woken.wait(remaining):
                    return self._at_timeout(job_id, timeout_s)
            finally:
                self._unregister(waiter)

    async def wait_async(self, job_id: int, timeout_s: float | None) -> JobRecord:
        loop = asyncio.get_running_loop()
        deadline = None if timeout_s is None else loop.time() + timeout_s
        first = True
        while True:
            woken = asyncio.Event()

            def wake(event: asyncio.Event = woken) -> None:
                with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                    loop.call_soon_threadsafe(event.set)

            waiter = self._register(job_id, wake)
            try:
                record = await asyncio.to_thread(self._finished_or_none, job_id, first)
                if record is not None:
                    return record
                first = False
                remaining = None if deadline is None else max(deadline - loop.time(), 0)
                try:
                    await asyncio.wait_for(woken.wait(), remaining)
                except TimeoutError:
                    return await asyncio.to_thread(self._at_timeout, job_id, timeout_s)
            finally:
                self._unregister(waiter)

    def _finished_or_none(self, job_id: int, first: bool) -> JobRecord | None:
        """The job's record if it is finished, None if it is not yet.

        Raises:
            ValueError: on the first read, if there is no such job.
            LookupError: on a later one, if the job was deleted meanwhile.
        """
        record = self._store.get_job(job_id)
        if record is None:
            if first:
                raise ValueError(f"there is no job {job_id} to wait for")
            raise LookupError(_deleted(job_id))
        return record if record.state.finished else None

    def _at_timeout(self, job_id: int, timeout_s: float | None) -> JobRecord:
        """The record if the job finished at the last moment; else TimeoutError."""
        record = self._store.get_job(job_id)
        if record is None:
            raise LookupError(_deleted(job_id))
        if record.state.finished:
            return record
        raise TimeoutError(f"job {job_id} is still {record.state.value} after the timeout "
                           f"of {timeout_s:g} s")

    # -- the watcher --------------------------------------------------------------------

    def _register(self, job_id: int, wake: Callable[[], None]) -> _Waiter:
        waiter = _Waiter(job_id, wake)
        with self._cond:
            if self._closed:
                raise StoreError(f"the App was closed: cannot wait for job {job_id}")
            self._waiting.setdefault(job_id, []).append(waiter)
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="rota-wait",
                                                daemon=True)
                self._thread.start()
            self._cond.notify()
        return waiter

    def _unregister(self, waiter: _Waiter) -> None:
        with self._cond:
            waiters = self._waiting.get(waiter.job_id)
            if waiters is not None and waiter in waiters:
                waiters.remove(waiter)
                if not waiters:
                    del self._waiting[waiter.job_id]

    def _hint(self) -> None:
        """The store's finish hint (any thread): re-read at once."""
        with self._cond:
            self._hinted = True
            self._cond.notify()

    def _listen(self) -> Callable[[], None] | None:
        if not isinstance(self._store, FinishSource):
            return None
        try:
            return self._store.listen_finished(self._hint)
        except StoreError as error:
            log.warning("cannot listen for finished jobs (waits re-read every %g s "
                        "instead): %s", UNHINTED_REREAD_S, error)
            return None

    def _watch(self) -> None:
        """The watcher thread (see the module doc)."""
        stop = self._listen()
        interval_s = REREAD_S if stop is not None else UNHINTED_REREAD_S
        try:
            while (ids := self._next_reread(interval_s)) is not None:
                self._reread(ids)
        finally:
            if stop is not None:
                stop()

    def _next_reread(self, interval_s: float) -> list[int] | None:
        """Wait for a hint or the re-read interval; the ids to read then, or None when
        the watcher should end (closed, or nobody waited for `LINGER_S`)."""
        reread_at = time.monotonic() + interval_s
        idle_until: float | None = None
        with self._cond:
            while not self._closed:
                now = time.monotonic()
                if self._waiting:
                    idle_until = None
                    if self._hinted or now >= reread_at:
                        self._hinted = False
                        return list(self._waiting)
                    self._cond.wait(reread_at - now)
                    continue
                self._hinted = False  # nothing to read
                if idle_until is None:
                    idle_until = now + LINGER_S
                if now >= idle_until:
                    break
                self._cond.wait(idle_until - now)
            self._thread = None
            return None

    def _reread(self, ids: list[int]) -> None:
        try:
            if isinstance(self._store, FinishSource):
                states = self._store.job_states(ids)
            else:
                states = {job_id: record.state for job_id in ids
                          if (record := self._store.get_job(job_id)) is not None}
        except Exception as error:  # the next hint or interval reads again
            log.warning("reading the jobs waited for failed (retrying): %s", error)
            return
        with self._cond:
            for job_id in ids:
                state = states.get(job_id)
                if state is not None and not state.finished:
                    continue
                for waiter in self._waiting.pop(job_id, ()):
                    waiter.wake()

    def close(self) -> None:
        """Stop the watcher and its listening; wake every waiter (its next read of the
        closed store fails). Idempotent."""
        with self._cond:
            self._closed = True
            thread, self._thread = self._thread, None
            waiters = [waiter for waiting in self._waiting.values() for waiter in waiting]
            self._waiting.clear()
            self._cond.notify_all()
        for waiter in waiters:
            waiter.wake()
        if thread is not None and thread is not threading.current_thread():
            thread.join()


def _deleted(job_id: int) -> str:
    return (f"job {job_id} was deleted while waited for (purged: retention deletes "
            "finished jobs)")
