"""Worker threads: a small pool of daemon threads that run blocking calls for an event loop.

Why not `concurrent.futures.ThreadPoolExecutor`: its threads are joined at interpreter
exit, so a sync handler still running after the grace period (its job already handed back
to its Queue) or a store call stuck on a dead connection would keep the process from
exiting. These threads are daemons: once the runtime has let go of them, exit never waits.

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

_Work = tuple[Callable[[], Any], "asyncio.Future[Any]", asyncio.AbstractEventLoop]


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
    cannot be interrupted); its result is dropped.
    """

    def __init__(self, size: int, name: str) -> None:
        if size < 1:
            raise ValueError(f"a DaemonPool needs at least one thread; got {size}")
        self._size = size
        self._name = name
        self._work: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        # Guarded by _lock: the threads started, and the calls submitted but not finished.
        self._threads: list[threading.Thread] = []
        self._unfinished = 0
        self._closed = False

    def run(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            if self._closed:
                raise RuntimeError(f"thread pool {self._name} is closed")
            self._unfinished += 1
            if self._unfinished > len(self._threads) and len(self._threads) < self._size:
                thread = threading.Thread(
                    target=self._serve, name=f"{self._name}-{len(self._threads) + 1}",
                    daemon=True,
                )
                self._threads.append(thread)
                thread.start()
        self._work.put((fn, future, loop))
        return future

    def _serve(self) -> None:
        while (item := self._work.get()) is not None:
            fn, future, loop = item
            result: Any = None
            error: BaseException | None = None
            try:
                result = fn()
            except BaseException as raised:  # delivered to the awaiting task, never lost
                error = raised
            with self._lock:
                self._unfinished -= 1
            # A closed loop means the runtime has gone and nobody awaits this result.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_settle, future, result, error)
            del fn, future, loop, result, error, item

    def close(self) -> None:
        """Let every thread exit once its current call returns. Does not wait."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            count = len(self._threads)
        for _ in range(count):
            self._work.put(None)
