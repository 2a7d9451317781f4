"""Worker threads: a small pool of daemon threads that run blocking calls for an event loop.

Why not `concurrent.futures.ThreadPoolExecutor`: its threads are joined at interpreter
exit, so a sync handler still running after the grace period (its job already handed back
to its Queue) or a store call stuck on a dead connection would keep the process from
exiting. These threads are daemons: once the runtime has let go of them, exit never waits.

`run_within` bounds the wait for a call (the runtime's backstop on a store call that
stopped answering): past it the caller gets `Abandoned`, and the thread still stuck in
the call no longer counts against the pool's size, so a replacement may start and the
next calls do not wait for it; the stuck thread exits once its call returns.

Imports nothing from rota; asyncio only to deliver results to the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

# A call's state, for the calls of `run_within` (guarded by the pool's lock).
_QUEUED, _RUNNING, _ABANDONED, _DROPPED, _DONE = range(5)


class _Call:
    """The state of one `run_within` call: queued, running, abandoned while it ran,
    dropped before it ran, or done."""

    __slots__ = ("state",)

    def __init__(self) -> None:
        self.state = _QUEUED


_Work = tuple[Callable[[], Any], "asyncio.Future[Any]", asyncio.AbstractEventLoop,
              "_Call | None"]


class Abandoned(Exception):
    """`run_within`: the call did not return in time; its result will be dropped.
    `started`: whether a thread had begun it (else it never runs)."""

    def __init__(self, message: str, started: bool) -> None:
        super().__init__(message)
        self.started = started


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # cancelled meanwhile: nobody wants the result any more
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class DaemonPool:
    """Up to `size` daemon threads, started on demand, running calls in submission order.

    `run(fn)` must be called on the event loop; awaiting the returned future gives `fn()`'s
    result or raises its exception. Cancelling the future does not stop `fn` (threads
    cannot be interrupted); its result is dropped. `run_within(fn, timeout_s)` does the
    same with a bound on the wait (see the module docstring).
    """

    def __init__(self, size: int, name: str) -> None:
        if size < 1:
            raise ValueError(f"a DaemonPool needs at least one thread; got {size}")
        self._size = size
        self._name = name
        self._work: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        # Guarded by _lock: the threads serving, the calls submitted but not finished, the
        # calls abandoned by `run_within` while they ran (their threads exit after them),
        # and how many threads were ever started (for their names).
        self._threads: list[threading.Thread] = []
        self._unfinished = 0
        self._abandoned = 0
        self._started = 0
        self._closed = False

    def run(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        return self._submit(fn, None)

    async def run_within(self, fn: Callable[[], T], timeout_s: float) -> T:
        """Run `fn` on a thread and wait for it at most `timeout_s`; past that, raise
        `Abandoned` (the thread cannot be stopped: its result is dropped, and it exits
        once `fn` returns, while a replacement serves the next calls)."""
        call = _Call()
        future = self._submit(fn, call)
        try:
            done, _ = await asyncio.wait((future,), timeout=timeout_s)
        except asyncio.CancelledError:
            future.cancel()
            raise
        if not done:
            future.cancel()
            started = self._abandon(call)
            raise Abandoned(f"no answer within {timeout_s:.3g} s", started)
        return future.result()

    def _submit(self, fn: Callable[[], T], call: _Call | None) -> asyncio.Future[T]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            if self._closed:
                raise RuntimeError(f"thread pool {self._name} is closed")
            self._unfinished += 1
            self._grow()
        self._work.put((fn, future, loop, call))
        return future

    def _grow(self) -> None:
        """Under the lock: start a thread if a call would wait and fewer than `size`
        threads serve (the ones stuck in an abandoned call do not count)."""
        if (self._unfinished > len(self._threads)
                and len(self._threads) - self._abandoned < self._size):
            self._started += 1
            thread = threading.Thread(
                target=self._serve, name=f"{self._name}-{self._started}", daemon=True,
            )
            self._threads.append(thread)
            thread.start()

    def _abandon(self, call: _Call) -> bool:
        """Give up on `call`; returns whether a thread had begun it."""
        with self._lock:
            if call.state == _QUEUED:  # never started: it never will
                call.state = _DROPPED
                self._unfinished -= 1
                return False
            if call.state == _RUNNING:
                call.state = _ABANDONED
                self._abandoned += 1
                if not self._closed:
                    self._grow()
            return True

    def _serve(self) -> None:
        while (item := self._work.get()) is not None:
            fn, future, loop, call = item
            if call is not None:
                with self._lock:
                    if call.state == _DROPPED:
                        del fn, future, loop, call, item
                        continue
                    call.state = _RUNNING
            result: Any = None
            error: BaseException | None = None
            try:
                result = fn()
            except BaseException as raised:  # delivered to the awaiting task, never lost
                error = raised
            retire = False
            with self._lock:
                self._unfinished -= 1
                if call is not None:
                    if call.state == _ABANDONED:  # a replacement serves in its place
                        self._abandoned -= 1
                        self._threads.remove(threading.current_thread())
                        retire = True
                    call.state = _DONE
            # A closed loop means the runtime has gone and nobody awaits this result.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_settle, future, result, error)
            del fn, future, loop, result, error, item, call
            if retire:
                return

    def close(self) -> None:
        """Let every thread exit once its current call returns. Does not wait."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            count = len(self._threads)
        for _ in range(count):
            self._work.put(None)
