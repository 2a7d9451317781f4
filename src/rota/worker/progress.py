"""How each drive writes the progress handlers report (`rota.current_job().set_progress`):
the `ProgressWriter`s of rota.worker.context.

- `InlineProgress` (`run_until_idle`): the store call on the spot, as the drive makes
  every other.
- `RuntimeProgress` (`serve`, `run`, `rota worker`): through the runtime's store threads
  and their deadline, like every store call of the runtime. From a sync handler's Worker
  thread the call waits for the write (the handler goes on once it is stored); from an
  async handler, on the event loop, it must not block: the write goes on as a task, which
  the drive awaits before the job's outcome (`flush_progress`).

A failed write is logged and dropped: progress is information, not an outcome; the next
report (or the last, flushed) writes it again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from rota.core.clock import Clock
from rota.core.jobs import Lease
from rota.core.progress import Progress
from rota.store.base import Store

logger = logging.getLogger("rota")

# How long a sync handler's thread waits for its progress write, at most: the runtime's
# store calls have their own deadline; this only keeps a thread from waiting for ever
# on an event loop that has stopped.
THREAD_WAIT_S = 60.0


def _not_written(lease: Lease, error: BaseException) -> None:
    logger.warning("job %s attempt %s: its progress was not written (%s); the next report "
                   "tries again", lease.job_id, lease.attempt, error)


class InlineProgress:
    """`run_until_idle`'s writer: the store call on the spot."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self._clock = clock

    @property
    def clock(self) -> Clock:
        return self._clock

    def write(self, lease: Lease, progress: Progress) -> None:
        try:
            self.store.set_progress(lease, progress)
        except Exception as error:
            _not_written(lease, error)

    async def flush(self, lease: Lease, progress: Progress) -> None:
        self.write(lease, progress)


class RuntimeProgress:
    """The real-time runtime's writer (module doc). Made on the runtime's event loop."""

    def __init__(self, store: Store, clock: Clock,
                 store_call: Callable[..., Awaitable[Any]]) -> None:
        self.store = store
        self._clock = clock
        self._store_call = store_call
        self._loop = asyncio.get_running_loop()

    @property
    def clock(self) -> Clock:
        return self._clock

    def write(self, lease: Lease, progress: Progress) -> Awaitable[None] | None:
        try:
            on_loop = asyncio.get_running_loop() is self._loop
        except RuntimeError:
            on_loop = False
        if on_loop:  # an async handler: the write goes on beside it
            return self._loop.create_task(self.flush(lease, progress))
        try:  # a sync handler's thread: wait for the write
            asyncio.run_coroutine_threadsafe(self.flush(lease, progress),
                                             self._loop).result(THREAD_WAIT_S)
        except Exception as error:  # the loop stopped, say
            _not_written(lease, error)
        return None

    async def flush(self, lease: Lease, progress: Progress) -> None:
        try:
            await self._store_call(self.store.set_progress, lease, progress)
        except Exception as error:
            _not_written(lease, error)
